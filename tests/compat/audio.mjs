// Voice input through the official @tambo-ai/typescript-sdk (`beta.audio.transcribe`, what
// @tambo-ai/react's useTamboVoice calls), run by tests/test_audio_transcribe.py against the live server.
// The recording is a real WAV file built here (a second of a 440 Hz tone), so the test can check that
// the fake transcription server received exactly these bytes.
import { createHash } from "node:crypto";
import TamboAI, { toFile } from "@tambo-ai/typescript-sdk";
import { runScenarios } from "./harness.mjs";

const BASE_URL = process.env.TAMBO_URL;
const API_KEY = process.env.TAMBO_API_KEY;

function wav(seconds = 1, rate = 8000) {
  const samples = seconds * rate;
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i += 1) data.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
  const header = Buffer.alloc(44);
  header.write("RIFF", 0); header.writeUInt32LE(36 + data.length, 4); header.write("WAVE", 8);
  header.write("fmt ", 12); header.writeUInt32LE(16, 16); header.writeUInt16LE(1, 20); header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24); header.writeUInt32LE(rate * 2, 28); header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34); header.write("data", 36); header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}

await runScenarios({
  async transcribe() {
    // The key alone, as the SDK sends it: no userKey, no bearer.
    const sdk = new TamboAI({ apiKey: API_KEY, baseURL: BASE_URL, maxRetries: 0, timeout: 20000 });
    const audio = wav();
    const text = await sdk.beta.audio.transcribe({ file: await toFile(audio, "question.wav", { type: "audio/wav" }) });
    return { text, bytes: audio.length, sha256: createHash("sha256").update(audio).digest("hex") };
  },
  async unavailable() {
    const sdk = new TamboAI({ apiKey: API_KEY, baseURL: BASE_URL, maxRetries: 0, timeout: 20000 });
    try {
      await sdk.beta.audio.transcribe({ file: await toFile(wav(), "question.wav", { type: "audio/wav" }) });
    } catch (error) {
      return { status: error.status, code: error.error?.code };
    }
    throw new Error("the transcription succeeded without a transcription model");
  },
});
