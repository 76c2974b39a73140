#!/usr/bin/env node
// Follows one run through a server process with the official `@tambo-ai/client` reducer (`streamReducer`,
// the one `@tambo-ai/react` applies events with), as an app showing the thread does, and reports the
// messages the client ends up with (tests/runs/test_takeover_official_client.py).
//
//   TAMBO_URL=… TAMBO_API_KEY=… TAMBO_USER_KEY=… TAMBO_THREAD_ID=thr_… TAMBO_RUN_ID=run_… node follow.mjs follow
//
// The thread's stored messages are loaded first (LOAD_THREAD_MESSAGES, as the app loads a thread), then
// every event of `GET /v1/threads/{threadId}/runs/{runId}/events` is applied as it comes. A line
// `{"progress": n}` follows each text delta, so the test can stop a process mid-answer; the reducer
// throwing (an event it cannot apply) fails the scenario.
import { createInitialState, streamReducer } from "@tambo-ai/client";
import TamboAI from "@tambo-ai/typescript-sdk";
import { runScenarios } from "./harness.mjs";

const { TAMBO_URL, TAMBO_API_KEY, TAMBO_THREAD_ID, TAMBO_RUN_ID } = process.env;
const USER_KEY = process.env.TAMBO_USER_KEY || "compat-user";

/** Yields the JSON events of an SSE response body. */
async function* sseEvents(body) {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) !== -1) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart());
      if (data.length) yield JSON.parse(data.join("\n"));
    }
  }
}

await runScenarios({
  async follow() {
    const warnings = [];
    console.warn = (...args) => warnings.push(args.join(" "));
    const sdk = new TamboAI({ apiKey: TAMBO_API_KEY, baseURL: TAMBO_URL, maxRetries: 0, timeout: 20000 });
    const thread = await sdk.threads.retrieve(TAMBO_THREAD_ID, { userKey: USER_KEY });
    let state = streamReducer(createInitialState(), { type: "INIT_THREAD", threadId: TAMBO_THREAD_ID });
    state = streamReducer(state, {
      type: "LOAD_THREAD_MESSAGES",
      threadId: TAMBO_THREAD_ID,
      messages: thread.messages.map((m) => ({ ...m, threadId: TAMBO_THREAD_ID })),
    });
    const url = `${TAMBO_URL}/v1/threads/${TAMBO_THREAD_ID}/runs/${TAMBO_RUN_ID}/events?userKey=${USER_KEY}`;
    const response = await fetch(url, { headers: { "x-api-key": TAMBO_API_KEY, accept: "text/event-stream" } });
    if (response.status !== 200) throw new Error(`events: ${response.status} ${await response.text()}`);
    const types = [];
    let deltas = 0;
    for await (const event of sseEvents(response.body)) {
      types.push(event.type);
      state = streamReducer(state, { type: "EVENT", event, threadId: TAMBO_THREAD_ID });
      if (event.type === "TEXT_MESSAGE_CONTENT") console.log(JSON.stringify({ progress: ++deltas }));
    }
    const shown = state.threadMap[TAMBO_THREAD_ID];
    return { types, messages: shown.thread.messages, status: shown.thread.status, warnings };
  },
});
