#!/usr/bin/env node
// Drives this server with the official `@tambo-ai/client` (1.1.x) and `@tambo-ai/typescript-sdk` (0.96.x),
// exactly as an application would, and checks that what the client sees is right.
//
//   TAMBO_URL=http://127.0.0.1:8000 TAMBO_API_KEY=tk_... [TAMBO_USER_KEY=alice] node run.mjs [scenario ...]
//
// With no scenario names it runs them all. For each scenario it prints one JSON line
// `{"scenario": name, "ok": true|false, ...facts | "error": message}` and exits 1 if any failed.
//
// Where the official client cannot be used as is, this script says why:
// - `TamboClient.fetchThread`, `updateThreadName` and the DELETE half of `cancelRun` send no `userKey`
//   (the client relies on a bearer token there). The server refuses requests without an end-user
//   identity by design (docs/protocol.md#identity-and-auth), so threads are fetched and renamed through the SDK with
//   `userKey`, and a run is cancelled by aborting its stream (which `cancelRun` does first).
// - The client has no method for component state; the update goes through the SDK instance the client
//   itself holds (`client.getSdkClient().threads.state.updateState`) with `userKey`.
// - `TamboClient` 1.1.x takes a `userToken` option but does not exchange it itself ("token exchange would
//   happen here in full implementation"); `@tambo-ai/react` does it (`useTamboSessionToken`): it posts the
//   form-encoded exchange with `beta.auth.getToken` and sets `bearer` on its SDK client. The token_*
//   scenarios do exactly that on the SDK client the TamboClient holds, then use the client's own methods.
//   They need TAMBO_USER_TOKEN_SECRET, the project's HS256 user-token secret, to sign the app's user token.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { TamboClient, createInitialState, streamReducer } from "@tambo-ai/client";
import TamboAI from "@tambo-ai/typescript-sdk";
import { z } from "zod";
import { runScenarios } from "./harness.mjs";

const BASE_URL = process.env.TAMBO_URL;
const API_KEY = process.env.TAMBO_API_KEY;
const USER_KEY = process.env.TAMBO_USER_KEY || "compat-user";
const USER_TOKEN_SECRET = process.env.TAMBO_USER_TOKEN_SECRET;

if (!BASE_URL || !API_KEY) {
  console.error("Set TAMBO_URL (the server's base URL) and TAMBO_API_KEY (a project API key).");
  process.exit(2);
}

function newClient() {
  return new TamboClient({ apiKey: API_KEY, tamboUrl: BASE_URL, userKey: USER_KEY });
}

function newSdk() {
  return new TamboAI({ apiKey: API_KEY, baseURL: BASE_URL, maxRetries: 0, timeout: 20000 });
}

function textOf(message) {
  return message.content.filter((c) => c.type === "text").map((c) => c.text).join("");
}

/** Drains a TamboStream, collecting the event types, and returns {events, thread}. */
async function drain(stream, onEvent) {
  const events = [];
  for await (const { event, snapshot } of stream) {
    events.push(event);
    if (onEvent) await onEvent(event, snapshot);
  }
  return events;
}

/** Polls `read` until `done(value)` holds (bounded: 10 s), returning the last value. */
async function pollUntil(read, done, what) {
  const deadline = Date.now() + 10000;
  let value;
  for (;;) {
    value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Asserts that an official-client call is refused for want of a userKey (400 VALIDATION_ERROR). */
async function assertRefusedWithoutUserKey(promise, what) {
  let error;
  try {
    await promise;
  } catch (caught) {
    error = caught;
  }
  assert.ok(error, `${what} without a userKey should be refused`);
  assert.equal(error.status, 400, `${what}: expected status 400, got ${error.status} (${error.message})`);
  assert.equal(error.error?.code, "VALIDATION_ERROR", `${what}: expected VALIDATION_ERROR, got ${JSON.stringify(error.error)}`);
}

/** An HS256 JWT for `sub`, as an app's backend would sign it for its signed-in user. */
function signUserToken(sub, expiresInSeconds = 600) {
  assert.ok(USER_TOKEN_SECRET, "set TAMBO_USER_TOKEN_SECRET (the project's HS256 user-token secret)");
  const b64 = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64({ alg: "HS256", typ: "JWT" })}.${b64({ sub, iat: now, exp: now + expiresInSeconds })}`;
  return `${input}.${createHmac("sha256", USER_TOKEN_SECRET).update(input).digest("base64url")}`;
}

/** The exchange as @tambo-ai/react's useTamboSessionToken does it: the form body as bytes. */
async function exchangeUserToken(sdk, userToken) {
  const form = new URLSearchParams({
    grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
    subject_token: userToken,
    subject_token_type: "urn:ietf:params:oauth:token-type:access_token",
  }).toString();
  return await sdk.beta.auth.getToken(new TextEncoder().encode(form));
}

/** A TamboClient in userToken mode, its SDK client carrying the access token; records the HTTP calls. */
async function newTokenClient() {
  const userToken = signUserToken(USER_KEY);
  const client = new TamboClient({ apiKey: API_KEY, tamboUrl: BASE_URL, userToken });
  const sdk = client.getSdkClient();
  const exchanged = await exchangeUserToken(sdk, userToken);
  sdk.bearer = exchanged.access_token;
  const calls = [];
  const realFetch = sdk.fetch;
  sdk.fetch = async (url, init) => {
    const response = await realFetch.call(undefined, url, init);
    calls.push({ method: init?.method, url: String(url), status: response.status });
    return response;
  };
  return { client, calls };
}

function assertNoUserKeySent(calls) {
  for (const call of calls) assert.ok(!call.url.includes("userKey"), `${call.method} ${call.url} sent a userKey`);
}

const weatherTool = (calls) => ({
  name: "lookup_weather",
  description: "Looks up the weather for a city.",
  tool: async ({ city }) => {
    calls.push({ city });
    return { city, forecast: "sunny", highC: 21 };
  },
  inputSchema: z.object({ city: z.string().describe("The city") }),
  outputSchema: z.object({ city: z.string(), forecast: z.string(), highC: z.number() }),
});

const WEATHER_CARD = {
  name: "WeatherCard",
  description: "Shows the weather of one city.",
  component: null, // no UI under Node: only the registration matters to the server
  props: {
    type: "object",
    properties: {
      city: { type: "string" },
      tempC: { type: "number" },
      tags: { type: "array", items: { type: "string" } },
    },
    required: ["city", "tempC"],
  },
};

const scenarios = {
  /** A text run on a new thread: the client's snapshot holds the user's and the assistant's messages. */
  async text_run() {
    const client = newClient();
    const stream = client.run("Hello from the official client");
    const events = await drain(stream);
    const thread = await stream.thread;
    const types = events.map((e) => e.type);
    assert.equal(types[0], "RUN_STARTED");
    assert.equal(types.at(-1), "RUN_FINISHED");
    assert.ok(types.includes("TEXT_MESSAGE_CONTENT"), `no text in ${types}`);
    assert.ok(thread.id.startsWith("thr_"), `thread id ${thread.id}`);
    assert.equal(thread.status, "idle");
    assert.equal(thread.messages.length, 2, JSON.stringify(thread.messages));
    const [user, assistant] = thread.messages;
    assert.equal(user.role, "user");
    assert.equal(textOf(user), "Hello from the official client");
    assert.equal(assistant.role, "assistant");
    assert.ok(assistant.id.startsWith("msg_"), `assistant message id ${assistant.id}`);
    assert.ok(textOf(assistant).startsWith("(offline model) You said: Hello from the official client"), textOf(assistant));
    const runId = events[0].runId;
    assert.equal(client.getState().threadMap[thread.id].lastCompletedRunId, runId);

    // A second run on the same thread: the client sends previousRunId itself.
    const second = client.run("And a second message", { threadId: thread.id });
    const secondEvents = await drain(second);
    const after = await second.thread;
    assert.equal(secondEvents.at(-1).type, "RUN_FINISHED");
    assert.equal(after.messages.length, 4);
    assert.ok(textOf(after.messages[3]).includes("You said: And a second message"), textOf(after.messages[3]));
    return {
      threadId: thread.id,
      runId,
      assistantMessageId: assistant.id,
      assistantText: textOf(assistant),
      secondRunId: secondEvents[0].runId,
      messageCount: after.messages.length,
    };
  },

  /** A run that waits on a server tool that hangs: the stream carries `: keep-alive` comments meanwhile
   * (tests/runs/test_heartbeat.py shows them to a raw reader); the client must ignore them. */
  async slow_tool_run() {
    const client = newClient();
    const stream = client.run("Please call slow__hang {}");
    const events = await drain(stream);
    const thread = await stream.thread;
    const types = events.map((e) => e.type);
    assert.equal(types[0], "RUN_STARTED");
    assert.equal(types.at(-1), "RUN_FINISHED", JSON.stringify(types));
    assert.ok(!types.includes("RUN_ERROR"), JSON.stringify(types));
    assert.ok(events.every((e) => typeof e.type === "string"), "an event without a type");
    const assistant = thread.messages.at(-1);
    assert.ok(textOf(assistant).startsWith("Tool slow__hang returned: Error: The MCP server 'slow' did not answer"),
      textOf(assistant));
    return { threadId: thread.id, eventTypes: types, status: thread.status };
  },

  /** A client tool registered with registerTool: the model calls it, the client runs it and continues. */
  async client_tool() {
    const client = newClient();
    const calls = [];
    client.registerTool(weatherTool(calls));
    const stream = client.run('What is the weather? Use lookup_weather with {"city": "Paris"}');
    const events = await drain(stream);
    const thread = await stream.thread;
    const types = events.map((e) => e.type);
    assert.deepEqual(calls, [{ city: "Paris" }], "the client should have run the tool once with the model's arguments");
    const awaiting = events.find((e) => e.type === "CUSTOM" && e.name === "tambo.run.awaiting_input");
    assert.ok(awaiting, `no awaiting_input in ${types}`);
    const pending = awaiting.value.pendingToolCalls;
    assert.equal(pending.length, 1);
    assert.equal(pending[0].toolName, "lookup_weather");
    assert.deepEqual(JSON.parse(pending[0].arguments), { city: "Paris" });
    const runStarts = events.filter((e) => e.type === "RUN_STARTED");
    assert.equal(runStarts.length, 2, "the continuation should be a second run on the same stream");
    assert.equal(runStarts[1].threadId, runStarts[0].threadId);
    assert.equal(types.at(-1), "RUN_FINISHED");
    assert.equal(thread.status, "idle");
    const toolUse = thread.messages.flatMap((m) => m.content).find((c) => c.type === "tool_use");
    assert.ok(toolUse, "the snapshot should hold the model's tool_use");
    assert.equal(toolUse.name, "lookup_weather");
    assert.deepEqual(toolUse.input, { city: "Paris" });
    assert.equal(toolUse.id, pending[0].toolCallId);
    const finalText = textOf(thread.messages.at(-1));
    assert.equal(finalText, 'Tool lookup_weather returned: {"city":"Paris","forecast":"sunny","highC":21}');
    return {
      threadId: thread.id,
      toolCallId: pending[0].toolCallId,
      firstRunId: runStarts[0].runId,
      continuationRunId: runStarts[1].runId,
      finalText,
    };
  },

  /** Two client tools in one step, one of which throws: both results go back in one continuation. */
  async two_client_tools() {
    const client = newClient();
    const calls = [];
    client.registerTools([
      weatherTool(calls),
      {
        name: "explode",
        description: "Always fails.",
        tool: async () => {
          throw new Error("boom");
        },
        inputSchema: z.object({ city: z.string() }),
        outputSchema: z.string(),
      },
    ]);
    const stream = client.run('Use lookup_weather, then explode, with {"city": "Rome"}', {
      additionalContext: { page: "weather" },
    });
    const events = await drain(stream);
    const thread = await stream.thread;
    const awaiting = events.find((e) => e.type === "CUSTOM" && e.name === "tambo.run.awaiting_input");
    assert.deepEqual(awaiting.value.pendingToolCalls.map((c) => c.toolName), ["lookup_weather", "explode"]);
    assert.deepEqual(calls, [{ city: "Rome" }]);
    assert.equal(events.filter((e) => e.type === "RUN_STARTED").length, 2);
    assert.equal(events.at(-1).type, "RUN_FINISHED");
    const finalText = textOf(thread.messages.at(-1));
    assert.equal(finalText, [
      'Tool lookup_weather returned: {"city":"Rome","forecast":"sunny","highC":21}',
      "Tool explode returned: Error: boom",
    ].join("\n"));
    return {
      threadId: thread.id,
      toolCallIds: awaiting.value.pendingToolCalls.map((c) => c.toolCallId),
      finalText,
    };
  },

  /**
   * A server tool (the project must have the built-in `calculate` enabled): the server runs it inside the
   * run and streams TOOL_CALL_RESULT, whose messageId must be a message the client already holds.
   */
  async server_tool() {
    const client = newClient();
    const stream = client.run('Please calculate {"expression": "6 * 7"}');
    const events = await drain(stream);
    const thread = await stream.thread;
    const types = events.map((e) => e.type);
    assert.deepEqual(
      types.filter((t) => t.startsWith("TOOL_CALL_")).filter((t, i, all) => all.indexOf(t) === i),
      ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"],
    );
    assert.ok(!events.some((e) => e.type === "CUSTOM" && e.name === "tambo.run.awaiting_input"), "no client turn");
    assert.equal(events.filter((e) => e.type === "RUN_STARTED").length, 1, "one run");
    assert.equal(types.at(-1), "RUN_FINISHED");
    const result = events.find((e) => e.type === "TOOL_CALL_RESULT");
    const start = events.find((e) => e.type === "TOOL_CALL_START");
    assert.equal(result.toolCallId, start.toolCallId);
    assert.equal(result.messageId, start.parentMessageId);
    const holder = thread.messages.find((m) => m.id === result.messageId);
    assert.ok(holder, "the tool call's message is in the snapshot");
    const useBlock = holder.content.find((c) => c.type === "tool_use");
    assert.equal(useBlock.name, "calculate");
    assert.deepEqual(useBlock.input, { expression: "6 * 7" });
    const resultBlock = holder.content.find((c) => c.type === "tool_result");
    assert.deepEqual(resultBlock.content, [{ type: "text", text: "42" }]);
    const finalText = textOf(thread.messages.at(-1));
    assert.equal(finalText, "Tool calculate returned: 42");
    return { threadId: thread.id, toolCallId: result.toolCallId, finalText };
  },

  /** listThreads sends the userKey and sees the threads this user made, newest first. */
  async list_threads() {
    const client = newClient();
    const first = await client.run("first thread").thread;
    const second = await client.run("second thread").thread;
    const listed = await client.listThreads();
    const ids = listed.map((t) => t.id);
    assert.ok(ids.includes(first.id) && ids.includes(second.id), `listed ${ids}`);
    assert.ok(ids.indexOf(second.id) < ids.indexOf(first.id), "newest first");
    for (const t of listed) {
      assert.equal(typeof t.createdAt, "string");
      assert.equal(typeof t.updatedAt, "string");
    }
    // Another end user does not see them.
    const stranger = new TamboClient({ apiKey: API_KEY, tamboUrl: BASE_URL, userKey: `${USER_KEY}-stranger` });
    const theirs = (await stranger.listThreads()).map((t) => t.id);
    assert.ok(!theirs.includes(first.id) && !theirs.includes(second.id), `a stranger listed ${theirs}`);
    return { threadIds: [first.id, second.id], listedIds: ids };
  },

  /** Fetching and renaming a thread: through the SDK with userKey (the client's own calls carry none). */
  async fetch_thread() {
    const client = newClient();
    const made = await client.run("a thread to fetch").thread;
    const sdk = newSdk();
    const fetched = await sdk.threads.retrieve(made.id, { userKey: USER_KEY });
    assert.equal(fetched.id, made.id);
    assert.equal(fetched.runStatus, "idle");
    assert.ok(fetched.lastCompletedRunId, "lastCompletedRunId");
    assert.deepEqual(fetched.messages.map((m) => m.role), ["user", "assistant"]);
    assert.deepEqual(fetched.messages[0].content, [{ type: "text", text: "a thread to fetch" }]);
    // The stored assistant message is the one the client streamed (same id, same text).
    assert.equal(fetched.messages[1].id, made.messages[1].id);
    assert.equal(textOf(fetched.messages[1]), textOf(made.messages[1]));

    const renamed = await sdk.threads.update(made.id, { userKey: USER_KEY, name: "Renamed by the SDK" });
    assert.equal(renamed.name, "Renamed by the SDK");
    const page = await sdk.threads.messages.list(made.id, { userKey: USER_KEY });
    assert.equal(page.messages.length, 2);

    // What the SDK returns loads into the official client's state as `fetchThread` would load it.
    let state = streamReducer(createInitialState(), { type: "INIT_THREAD", threadId: made.id });
    state = streamReducer(state, {
      type: "LOAD_THREAD_MESSAGES",
      threadId: made.id,
      messages: fetched.messages.map((m) => ({ ...m, threadId: made.id })),
    });
    assert.equal(state.threadMap[made.id].thread.messages.length, 2);

    // The client's own fetchThread / updateThreadName send no userKey: refused by design (docs/protocol.md#identity-and-auth).
    await assertRefusedWithoutUserKey(client.fetchThread(made.id), "TamboClient.fetchThread");
    await assertRefusedWithoutUserKey(client.updateThreadName(made.id, "nope"), "TamboClient.updateThreadName");
    return { threadId: made.id, name: renamed.name, lastCompletedRunId: fetched.lastCompletedRunId };
  },

  /** TamboClient.cancelRun during a slow answer: the stream is aborted and the server cancels the run. */
  async cancel_run() {
    const client = newClient();
    const made = await client.run("a thread whose next run is cancelled").thread;
    const stream = client.run("!slow please", { threadId: made.id });
    let runId;
    let cancelled = false;
    const events = await drain(stream, async (event) => {
      if (event.type === "RUN_STARTED") runId = event.runId;
      if (event.type === "TEXT_MESSAGE_CONTENT" && !cancelled) {
        cancelled = true;
        // Aborts the stream, then tries DELETE …/runs/{runId} without a userKey (refused; best effort).
        await client.cancelRun(made.id);
      }
    });
    assert.ok(cancelled, `never saw text: ${events.map((e) => e.type)}`);
    await assert.rejects(stream.thread, (error) => error.name === "AbortError");
    const local = client.getThread(made.id);
    assert.equal(local.status, "idle");
    return { threadId: made.id, runId, ...(await checkCancelledOnServer(made.id, local.messages.at(-1))) };
  },

  /** An AbortSignal passed to run() on a new thread cancels the run the same way. */
  async abort_signal() {
    const client = newClient();
    const controller = new AbortController();
    const stream = client.run("!slow and then stop", { signal: controller.signal });
    let threadId;
    let runId;
    await drain(stream, (event) => {
      if (event.type === "RUN_STARTED") ({ threadId, runId } = event);
      if (event.type === "TEXT_MESSAGE_CONTENT") controller.abort();
    });
    await assert.rejects(stream.thread, (error) => error.name === "AbortError");
    assert.ok(threadId, "RUN_STARTED carried the thread id");
    const local = client.getThread(threadId);
    assert.equal(local.status, "idle");
    return { threadId, runId, ...(await checkCancelledOnServer(threadId, local.messages.at(-1))) };
  },

  /** A registered component is rendered with the model's props, and its state is stored. */
  async component() {
    const client = newClient();
    client.registerComponent(WEATHER_CARD.name, WEATHER_CARD);
    const stream = client.run('Show a WeatherCard {"city": "Oslo", "tempC": -3, "tags": ["cold", "clear"]}');
    const events = await drain(stream);
    const thread = await stream.thread;
    const names = events.filter((e) => e.type === "CUSTOM").map((e) => e.name);
    assert.ok(names.includes("tambo.component.start") && names.includes("tambo.component.end"), `${names}`);
    assert.ok(names.includes("tambo.component.props_delta"), `${names}`);
    const components = thread.messages.flatMap((m) => m.content).filter((c) => c.type === "component");
    assert.equal(components.length, 1, JSON.stringify(thread.messages));
    const [card] = components;
    assert.equal(card.name, "WeatherCard");
    assert.ok(card.id.startsWith("comp_"), card.id);
    assert.deepEqual(card.props, { city: "Oslo", tempC: -3, tags: ["cold", "clear"] });
    assert.equal(card.streamingState, "done");
    assert.equal(thread.status, "idle");
    assert.equal(events.at(-1).type, "RUN_FINISHED");

    // Component state through the SDK instance the client holds (the client has no method of its own).
    const sdk = client.getSdkClient();
    const full = await sdk.threads.state.updateState(card.id, {
      threadId: thread.id, userKey: USER_KEY, state: { expanded: true, unit: "C" },
    });
    assert.deepEqual(full.state, { expanded: true, unit: "C" });
    const patched = await sdk.threads.state.updateState(card.id, {
      threadId: thread.id, userKey: USER_KEY,
      patch: [{ op: "replace", path: "/unit", value: "F" }, { op: "add", path: "/pinned", value: 1 }],
    });
    assert.deepEqual(patched.state, { expanded: true, unit: "F", pinned: 1 });
    const fetched = await newSdk().threads.retrieve(thread.id, { userKey: USER_KEY });
    const stored = fetched.messages.flatMap((m) => m.content).find((c) => c.type === "component");
    assert.equal(stored.id, card.id);
    assert.deepEqual(stored.props, card.props);
    assert.deepEqual(stored.state, { expanded: true, unit: "F", pinned: 1 });
    return { threadId: thread.id, componentId: card.id, props: card.props, state: stored.state };
  },
};

Object.assign(scenarios, {
  /** An MCP tool asks the user for input (docs/tools.md#input-requests): the app registers the
   *  `tambo_mcp_input` client tool, which the client runs on the pause like any client tool; its return
   *  value (MCP_INPUT_ANSWER, JSON) is the answer, and the continuation ends with the MCP tool's result. */
  async mcp_input() {
    const client = newClient();
    const asked = [];
    client.registerTool({
      name: "tambo_mcp_input",
      description: "Asks the user what an MCP tool needs to know.",
      tool: async (request) => {
        asked.push(request);
        return JSON.parse(process.env.MCP_INPUT_ANSWER);
      },
      inputSchema: z.object({
        serverName: z.string(), toolName: z.string(), mcpToolCallId: z.string(), message: z.string(),
        mode: z.string(), requestedSchema: z.record(z.string(), z.unknown()).optional(),
      }).passthrough(),
      outputSchema: z.object({ action: z.string(), content: z.record(z.string(), z.unknown()).optional() }),
    });
    const stream = client.run('Please use demo__book {"show": "Tosca"}');
    const events = await drain(stream);
    const thread = await stream.thread;
    const awaiting = events.find((e) => e.type === "CUSTOM" && e.name === "tambo.run.awaiting_input");
    assert.ok(awaiting, `no awaiting_input in ${events.map((e) => e.type)}`);
    assert.equal(asked.length, 1, "the client should have asked once");
    assert.equal(asked[0].message, "How many seats for Tosca?");
    assert.deepEqual(asked[0].requestedSchema.required, ["seats"]);
    const runStarts = events.filter((e) => e.type === "RUN_STARTED");
    assert.equal(runStarts.length, 2, "the continuation should be a second run on the same stream");
    const result = events.find((e) => e.type === "TOOL_CALL_RESULT");
    assert.ok(result, "the continuation should carry the MCP tool's result");
    assert.equal(thread.status, "idle");
    return {
      threadId: thread.id,
      request: asked[0],
      inputCallId: awaiting.value.inputRequests[0].toolCallId,
      mcpToolCallId: asked[0].mcpToolCallId,
      result: result.content,
      finalText: textOf(thread.messages.at(-1)),
    };
  },
});

Object.assign(scenarios, {
  /** The SDK's older hosted-service methods: getCurrent answers the key's project, the rest a JSON 404
   *  whose message names what to use instead (never an HTML page as the error message). */
  async legacy_routes() {
    const sdk = newSdk();
    const project = await sdk.beta.projects.getCurrent();
    const refusals = {};
    for (const [name, call] of Object.entries({
      registry: () => sdk.beta.registry.retrieve("DataCard"),
      presign: () => sdk.storage.presign({ contentType: "image/png", fileName: "a.png", size: 10 }),
      projectKeys: () => sdk.beta.projects.apiKey.list("p"),
    })) {
      try {
        await call();
        throw new Error(`${name} was answered`);
      } catch (error) {
        assert.equal(error.status, 404, `${name}: ${error}`);
        assert.ok(!String(error.message).includes("<"), `${name}: ${error.message}`);
        refusals[name] = { code: error.error?.code, detail: error.error?.detail };
      }
    }
    // Served now (docs/tools.md#the-browsers-mcp-endpoint): `{}` for a project without MCP servers.
    const mcpToken = await sdk.beta.auth.getMcpToken({ contextKey: USER_KEY });
    return { project: { id: project.id, name: project.name, isTokenRequired: project.isTokenRequired }, refusals,
             mcpToken };
  },

  /** beta.auth.getToken exchanges a user token; the access token lists the user's threads without userKey. */
  async token_exchange() {
    const exchanged = await exchangeUserToken(newSdk(), signUserToken(USER_KEY));
    assert.equal(exchanged.token_type, "Bearer");
    assert.equal(exchanged.issued_token_type, "urn:ietf:params:oauth:token-type:access_token");
    assert.ok(exchanged.expires_in > 0 && exchanged.expires_in <= 3600, `expires_in ${exchanged.expires_in}`);
    const sdk = new TamboAI({ apiKey: API_KEY, bearer: exchanged.access_token, baseURL: BASE_URL, maxRetries: 0 });
    const made = await sdk.threads.create({});
    assert.equal(made.userKey, USER_KEY);
    const listed = await sdk.threads.list();
    assert.deepEqual(listed.threads.map((t) => t.id), [made.id]);

    // A wrongly signed user token is refused in OAuth's shape.
    let refused;
    try {
      await exchangeUserToken(newSdk(), signUserToken(USER_KEY).slice(0, -4) + "AAAA");
    } catch (error) {
      refused = error;
    }
    assert.equal(refused?.status, 400);
    assert.equal(refused.error?.error, "invalid_grant", JSON.stringify(refused.error));
    return { threadId: made.id, expiresIn: exchanged.expires_in };
  },

  /** fetchThread, switchThread and updateThreadName of TamboClient work with the bearer (no userKey sent). */
  async token_fetch_thread() {
    const { client, calls } = await newTokenClient();
    const made = await client.run("a thread made with a user token").thread;
    const other = await client.run("a second thread").thread;

    const fresh = await newTokenClient();
    const fetched = await fresh.client.fetchThread(made.id);
    assert.deepEqual(fetched.messages.map((m) => m.role), ["user", "assistant"]);
    assert.equal(textOf(fetched.messages[0]), "a thread made with a user token");
    assert.equal(fetched.messages[1].id, made.messages[1].id);
    await fresh.client.switchThread(other.id);
    assert.equal(fresh.client.getState().currentThreadId, other.id);
    assert.equal(fresh.client.getThread(other.id).messages.length, 2);
    await fresh.client.updateThreadName(made.id, "Renamed with a user token");
    assert.equal(fresh.client.getThread(made.id).name, "Renamed with a user token");
    const listed = (await fresh.client.listThreads()).map((t) => t.id);
    assert.deepEqual(listed, [other.id, made.id]);

    const all = [...calls, ...fresh.calls];
    assertNoUserKeySent(all);
    assert.ok(all.every((c) => c.status < 400), JSON.stringify(all));
    return { threadIds: [made.id, other.id], currentThreadId: other.id };
  },

  /** TamboClient.cancelRun cancels the run on the server with a DELETE that carries only the bearer. */
  async token_cancel_run() {
    const { client, calls } = await newTokenClient();
    // A run on a new thread is not in the client's activeRuns, so cancelRun does not abort the stream
    // first: the stream stays open and must end because the server cancelled the run.
    const stream = client.run("!slow and cancel me with a token");
    let threadId;
    let runId;
    let cancelled = false;
    const events = [];
    try {
      await drain(stream, async (event) => {
        events.push(event);
        if (event.type === "RUN_STARTED") ({ threadId, runId } = event);
        if (event.type === "TEXT_MESSAGE_CONTENT" && !cancelled) {
          cancelled = true;
          await client.cancelRun(threadId);
        }
      });
    } catch {
      // The stream ends in RUN_ERROR; how the client surfaces it is not what this checks.
    }
    await stream.thread.catch(() => undefined);
    const deletes = calls.filter((c) => c.method === "DELETE");
    assert.equal(deletes.length, 1, JSON.stringify(calls));
    assert.ok(deletes[0].url.endsWith(`/v1/threads/${threadId}/runs/${runId}`), deletes[0].url);
    assert.equal(deletes[0].status, 200, "the server refused the cancel");
    assertNoUserKeySent(calls);
    const last = events.at(-1);
    assert.equal(last.type, "RUN_ERROR", JSON.stringify(last));
    assert.equal(last.code, "CANCELLED", JSON.stringify(last));
    // Read back as the token's user (a userKey names another user: docs/abuse-and-limits.md).
    const seen = client.getThread(threadId).messages.at(-1);
    return { threadId, runId, ...(await checkCancelledOnServer(threadId, seen, client.getSdkClient(), {})) };
  },
});

/** Via the SDK: the thread is idle, lastRunCancelled, and ends with the partial answer the client was shown. */
async function checkCancelledOnServer(threadId, seen, sdk = newSdk(), query = { userKey: USER_KEY }) {
  const thread = await pollUntil(
    () => sdk.threads.retrieve(threadId, query),
    (t) => t.runStatus === "idle" && t.lastRunCancelled === true,
    "the thread to be idle with lastRunCancelled",
  );
  const last = thread.messages.at(-1);
  assert.equal(last.role, "assistant");
  assert.equal(last.isCancelled, true, `last message ${JSON.stringify(last)}`);
  // The partial message the client was streaming is the one stored, holding at least what it was shown.
  assert.equal(seen.role, "assistant");
  assert.equal(last.id, seen.id);
  assert.ok(textOf(seen).length > 0, "the client was shown some text before cancelling");
  assert.ok(textOf(last).startsWith(textOf(seen)), `stored ${JSON.stringify(textOf(last))}, shown ${JSON.stringify(textOf(seen))}`);
  assert.ok(!textOf(last).endsWith("word199."), "the whole slow answer was stored: the run was not stopped");
  return { serverRunStatus: thread.runStatus, partialMessageId: last.id, partialText: textOf(last) };
}

await runScenarios(scenarios);
