// The microphone button: records with MediaRecorder while pressed once, and on the second press sends
// the recording to POST /audio/transcribe (the project's transcription model) and puts the text in
// the composer for the person to read and send. Shown when the browser can record; without a
// transcription model for the project (the page's data-voice attribute) it says how to add one.

import { ApiError, csrfToken } from "./api.js";

export function voiceButton(root, { input, onText, onNotice }) {
  const button = root.querySelector("[data-role=mic]");
  if (!button) return;
  const canRecord = Boolean(navigator.mediaDevices?.getUserMedia) && typeof MediaRecorder !== "undefined";
  button.hidden = !canRecord;
  if (!canRecord) return;
  if (document.body.dataset.voice !== "true") {
    // Voice exists but this project has no transcription model: the button says how to turn it on
    // (a tooltip, and the same text as a notice when pressed, for touch screens without hover).
    const help = document.body.dataset.voiceHelp || "Voice input needs a transcription model.";
    button.dataset.state = "unavailable";
    button.title = help;
    button.setAttribute("aria-label", `Speak (off): ${help}`);
    button.addEventListener("click", () => onNotice(help));
    return;
  }
  let recorder = null;
  let chunks = [];

  const setState = (state) => {
    button.dataset.state = state;
    button.setAttribute("aria-pressed", String(state === "recording"));
    button.setAttribute("aria-label", { recording: "Stop and transcribe", sending: "Transcribing…" }[state] || "Speak");
    button.disabled = state === "sending";
  };
  setState("idle");

  const transcribe = async (blob) => {
    setState("sending");
    try {
      const form = new FormData();
      const type = (blob.type || "audio/webm").split(";")[0];
      form.append("file", blob, `recording.${type.split("/")[1] || "webm"}`);
      const response = await fetch("/audio/transcribe", {
        method: "POST", body: form, credentials: "same-origin", headers: { "X-CSRFToken": csrfToken() },
      });
      if (!response.ok) {
        let body = null;
        try { body = await response.json(); } catch { body = null; }
        throw new ApiError(response.status, body);
      }
      onText(await response.text());
    } catch (error) {
      onNotice(`Could not transcribe the recording: ${error.message}`);
    } finally {
      setState("idle");
      input.focus();
    }
  };

  button.addEventListener("click", async () => {
    if (recorder) {
      recorder.stop();
      return;
    }
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (error) {
      onNotice(`The microphone is not available: ${error.message}`);
      return;
    }
    chunks = [];
    recorder = new MediaRecorder(stream);
    let recorded = 0;
    recorder.addEventListener("dataavailable", (event) => {
      if (!event.data.size) return;
      chunks.push(event.data);
      recorded += event.data.size;
      button.dataset.recordedBytes = String(recorded); // so a test can wait for audio, not for time
    });
    recorder.addEventListener("stop", () => {
      for (const track of stream.getTracks()) track.stop();
      const blob = new Blob(chunks, { type: recorder.mimeType || "audio/webm" });
      recorder = null;
      transcribe(blob);
    });
    // Chunks every quarter second: a recording stopped at any moment has its audio so far.
    recorder.start(250);
    setState("recording");
  });
}
