#!/usr/bin/env node
// Thread names and suggestions through the official `@tambo-ai/client` (1.1.x) and the SDK it holds
// (`@tambo-ai/typescript-sdk` 0.96.x), as an application and `@tambo-ai/react` 1.3.x call them.
//
//   TAMBO_URL=http://127.0.0.1:8000 TAMBO_API_KEY=tk_... [TAMBO_USER_KEY=alice] node names.mjs [scenario ...]
//
// With no scenario names it runs them all; one JSON line per scenario
// `{"scenario": name, "ok": true|false, ...facts | "error": message}`; exit 1 if any failed.
//
// `TamboClient.generateThreadName`, `generateSuggestions` and `listSuggestions` send no `userKey` (the
// client relies on a bearer token there), and the server refuses a request without an end-user identity
// (docs/protocol.md#identity-and-auth), as the reference server does. Each scenario shows that refusal, then makes the same
// SDK call through the client's own SDK instance (`client.getSdkClient()`) with the user named:
// `contextKey` for `beta.threads.generateName` (the beta API's name for the user), `userKey` in the body
// or query of the suggestion calls. `@tambo-ai/react` sends `userKey` itself on the /v1 suggestion calls.
import assert from "node:assert/strict";
import { TamboClient, toAvailableComponents } from "@tambo-ai/client";
import TamboAI from "@tambo-ai/typescript-sdk";
import { runScenarios } from "./harness.mjs";

const BASE_URL = process.env.TAMBO_URL;
const API_KEY = process.env.TAMBO_API_KEY;
const USER_KEY = process.env.TAMBO_USER_KEY || "compat-user";

if (!BASE_URL || !API_KEY) {
  console.error("Set TAMBO_URL (the server's base URL) and TAMBO_API_KEY (a project API key).");
  process.exit(2);
}

const WEATHER_CARD = {
  name: "WeatherCard",
  description: "Shows the weather of one city.",
  component: null, // no UI under Node: only the registration matters to the server
  props: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

function newClient() {
  return new TamboClient({ apiKey: API_KEY, tamboUrl: BASE_URL, userKey: USER_KEY });
}

function newSdk() {
  return new TamboAI({ apiKey: API_KEY, baseURL: BASE_URL, maxRetries: 0, timeout: 20000 });
}

/** A finished run on a new thread: {client, thread, user, assistant} as the client's snapshot holds them. */
async function conversation(text, register) {
  const client = newClient();
  if (register) register(client);
  const stream = client.run(text);
  for await (const _ of stream) {
    // drain: the client folds the events into its snapshot
  }
  const thread = await stream.thread;
  const [user, assistant] = thread.messages;
  assert.equal(assistant?.role, "assistant", JSON.stringify(thread.messages));
  return { client, thread, user, assistant };
}

async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return undefined;
}

/** The official call was refused for want of an end-user identity (400 VALIDATION_ERROR on userKey). */
async function assertRefusedWithoutUserKey(promise, what) {
  const error = await rejection(promise);
  assert.ok(error, `${what} without a userKey should be refused`);
  assert.equal(error.status, 400, `${what}: expected status 400, got ${error.status} (${error.message})`);
  assert.equal(error.error?.code, "VALIDATION_ERROR", `${what}: ${JSON.stringify(error.error)}`);
  assert.equal(error.error?.field, "userKey", `${what}: ${JSON.stringify(error.error)}`);
}

const scenarios = {
  /** The name made by generate-name (the offline rule: the first user text, cut at a word) reaches the thread. */
  async generate_name() {
    const { client, thread } = await conversation("Plan a weekend in Lisbon with museums, seafood and old trams");
    await assertRefusedWithoutUserKey(client.generateThreadName(thread.id), "TamboClient.generateThreadName");

    const named = await client.getSdkClient().beta.threads.generateName(thread.id, { contextKey: USER_KEY });
    assert.equal(named.id, thread.id);
    assert.equal(named.name, "Plan a weekend in Lisbon with museums");
    assert.ok(named.projectId?.startsWith("proj_"), `projectId ${named.projectId}`);
    assert.ok(Date.parse(named.updatedAt) >= Date.parse(named.createdAt), JSON.stringify(named));
    const fetched = await newSdk().threads.retrieve(thread.id, { userKey: USER_KEY });
    assert.equal(fetched.name, named.name);
    return { threadId: thread.id, name: named.name, projectId: named.projectId };
  },

  /** What @tambo-ai/react's useTamboSuggestions does: /v1 create with the registered components, then list. */
  async suggestions_v1() {
    const { client, thread, user, assistant } = await conversation("Hello", (c) =>
      c.registerComponent(WEATHER_CARD.name, WEATHER_CARD));
    const sdk = client.getSdkClient();
    const availableComponents = toAvailableComponents({ [WEATHER_CARD.name]: WEATHER_CARD });

    const made = await sdk.threads.suggestions.create(assistant.id, {
      threadId: thread.id, maxSuggestions: 2, availableComponents, userKey: USER_KEY,
    });
    assert.equal(made.hasMore, false);
    assert.deepEqual(made.suggestions.map((s) => s.title), ["Show WeatherCard", "Tell me more"]);
    const [card] = made.suggestions;
    assert.ok(card.id.startsWith("sug_"), card.id);
    assert.equal(card.messageId, assistant.id);
    assert.equal(card.description, WEATHER_CARD.description);
    assert.equal(card.detailedSuggestion, "Show WeatherCard");

    const listed = await sdk.threads.suggestions.list(assistant.id, { threadId: thread.id, userKey: USER_KEY });
    assert.deepEqual(listed, { suggestions: made.suggestions, hasMore: false });
    const paged = await sdk.threads.suggestions.list(assistant.id, { threadId: thread.id, userKey: USER_KEY, limit: 1 });
    assert.equal(paged.hasMore, true);
    assert.ok(paged.nextCursor, JSON.stringify(paged));

    const onUserMessage = await rejection(sdk.threads.suggestions.create(user.id, { threadId: thread.id, userKey: USER_KEY }));
    assert.equal(onUserMessage?.status, 404);
    assert.equal(onUserMessage.error?.code, "MESSAGE_NOT_FOUND");
    const tooMany = await rejection(sdk.threads.suggestions.create(assistant.id, {
      threadId: thread.id, userKey: USER_KEY, maxSuggestions: 11,
    }));
    assert.equal(tooMany?.status, 400);
    assert.equal(tooMany.error?.field, "maxSuggestions");
    return { threadId: thread.id, messageId: assistant.id, suggestionIds: made.suggestions.map((s) => s.id) };
  },

  /** TamboClient's own suggestion methods (the older /threads paths, a bare array). */
  async suggestions_client() {
    const { client, thread, assistant } = await conversation("Tell me about bridges");
    await assertRefusedWithoutUserKey(client.generateSuggestions(assistant.id, thread.id, { maxSuggestions: 2 }),
      "TamboClient.generateSuggestions");
    await assertRefusedWithoutUserKey(client.listSuggestions(assistant.id, thread.id), "TamboClient.listSuggestions");

    const beta = client.getSdkClient().beta.threads.suggestions;
    const made = await beta.generate(assistant.id, { id: thread.id, maxSuggestions: 2, userKey: USER_KEY });
    assert.ok(Array.isArray(made), JSON.stringify(made));
    assert.deepEqual(made.map((s) => s.title), ["Tell me more"]);
    const listed = await beta.list(assistant.id, { id: thread.id }, { query: { userKey: USER_KEY } });
    assert.deepEqual(listed, made);
    return { threadId: thread.id, messageId: assistant.id, suggestionIds: made.map((s) => s.id) };
  },
};

await runScenarios(scenarios);
