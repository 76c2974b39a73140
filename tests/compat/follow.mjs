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
//
// TAMBO_LOAD_UNTIL=msg_… loads the stored messages only up to that one (the run's user message): the
// thread as the app held it when it started the run. A run that has ended is replayed from its first
// event, and the reducer only adds (a replayed message it holds already gets its text again), so an app
// replaying a finished run starts from before it (tests/runs/test_background_official_client.py).
//
// FOLLOW_ON_STDIN=1: Node and the packages loaded, it prints `{"ready": true}` and waits for one line on
// stdin, a JSON object of the TAMBO_THREAD_ID, TAMBO_RUN_ID (and TAMBO_LOAD_UNTIL) to follow, so a test
// can start it before the run and let it join at a moment of its choosing (a busy machine takes seconds
// to start Node).
import { once } from "node:events";
import { createInterface } from "node:readline";
import { createInitialState, streamReducer } from "@tambo-ai/client";
import TamboAI from "@tambo-ai/typescript-sdk";
import { runScenarios } from "./harness.mjs";

const { TAMBO_URL, TAMBO_API_KEY } = process.env;
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

/** The run to follow: from the environment, or with FOLLOW_ON_STDIN from the line the test writes. */
async function target() {
  if (!process.env.FOLLOW_ON_STDIN) return process.env;
  console.log(JSON.stringify({ ready: true }));
  const lines = createInterface({ input: process.stdin });
  const [line] = await once(lines, "line");
  lines.close();
  return { ...process.env, ...JSON.parse(line) };
}

await runScenarios({
  async follow() {
    const { TAMBO_THREAD_ID, TAMBO_RUN_ID, TAMBO_LOAD_UNTIL } = await target();
    const warnings = [];
    console.warn = (...args) => warnings.push(args.join(" "));
    const sdk = new TamboAI({ apiKey: TAMBO_API_KEY, baseURL: TAMBO_URL, maxRetries: 0, timeout: 20000 });
    const thread = await sdk.threads.retrieve(TAMBO_THREAD_ID, { userKey: USER_KEY });
    const until = TAMBO_LOAD_UNTIL ? thread.messages.findIndex((m) => m.id === TAMBO_LOAD_UNTIL) : -1;
    if (TAMBO_LOAD_UNTIL && until === -1) throw new Error(`no stored message ${TAMBO_LOAD_UNTIL}`);
    const loaded = TAMBO_LOAD_UNTIL ? thread.messages.slice(0, until + 1) : thread.messages;
    let state = streamReducer(createInitialState(), { type: "INIT_THREAD", threadId: TAMBO_THREAD_ID });
    state = streamReducer(state, {
      type: "LOAD_THREAD_MESSAGES",
      threadId: TAMBO_THREAD_ID,
      messages: loaded.map((m) => ({ ...m, threadId: TAMBO_THREAD_ID })),
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
    const loadedIds = loaded.map((m) => m.id);
    return { types, loaded: loadedIds, messages: shown.thread.messages, status: shown.thread.status, warnings };
  },
});
