#!/usr/bin/env node
// Drives POST /v1/agui with the generic AG-UI client `@ag-ui/client` (HttpAgent), as any AG-UI
// application would, and checks what the client sees. The client's own pipeline verifies every event
// (`verifyEvents` runs inside `runAgent`); one scenario also pipes the raw stream through `verifyEvents`.
//
//   TAMBO_URL=http://127.0.0.1:8000 TAMBO_API_KEY=tk_... [TAMBO_USER_KEY=alice] node run.mjs [scenario ...]
//
// For each scenario it prints one JSON line `{"scenario": name, "ok": true|false, ...facts | "error": message}`
// and exits 1 if any failed.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
// AGUI_CLIENT names the package: "@ag-ui/client" (1.0.0, the default) or "ag-ui-client-0059" (0.0.59 under an
// npm alias, the version CopilotKit's runtime pins; it sends no protocolVersion).
const CLIENT = process.env.AGUI_CLIENT || "@ag-ui/client";
const LEGACY = CLIENT !== "@ag-ui/client";
const { HttpAgent, verifyEvents } = await import(CLIENT);
import { runScenarios } from "../harness.mjs";

const BASE_URL = process.env.TAMBO_URL;
const API_KEY = process.env.TAMBO_API_KEY;
const USER_KEY = process.env.TAMBO_USER_KEY || "agui-user";

if (!BASE_URL || !API_KEY) {
  console.error("Set TAMBO_URL (the server's base URL) and TAMBO_API_KEY (a project API key).");
  process.exit(2);
}

const WEATHER_TOOL = {
  name: "lookup_weather",
  description: "Looks up the weather for a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

function newAgent(config = {}) {
  return new HttpAgent({ url: `${BASE_URL}/v1/agui`, headers: { "x-api-key": API_KEY }, ...config });
}

function userMessage(content) {
  return { id: randomUUID(), role: "user", content };
}

const forwardedProps = { userKey: USER_KEY };

/** A subscriber that records the callbacks it gets, in order, with the events' types. */
function recorder() {
  const calls = [];
  const events = [];
  const record = (name) => (params) => {
    calls.push(name);
    if (params?.event) events.push(params.event);
  };
  const subscriber = {};
  for (const name of ["onRunInitialized", "onRunStartedEvent", "onStateSnapshotEvent", "onTextMessageStartEvent",
    "onTextMessageContentEvent", "onTextMessageEndEvent", "onToolCallStartEvent", "onToolCallArgsEvent",
    "onToolCallEndEvent", "onToolCallResultEvent", "onCustomEvent", "onRunFinishedEvent", "onRunErrorEvent",
    "onRunFailed", "onRunFinalized"]) {
    subscriber[name] = record(name);
  }
  let finished;
  const onFinished = subscriber.onRunFinishedEvent;
  subscriber.onRunFinishedEvent = (params) => {
    finished = params;
    onFinished(params);
  };
  return { subscriber, calls, events, finished: () => finished };
}

/** Consecutive repeats collapsed: [a, b, b, c] → [a, b, c]. */
function collapsed(names) {
  return names.filter((name, i) => i === 0 || names[i - 1] !== name);
}

/** Retries `start` while the server answers 409 CONCURRENT_RUN (bounded: 10 s). */
async function retryWhileBusy(start) {
  const deadline = Date.now() + 10000;
  for (;;) {
    try {
      return await start();
    } catch (error) {
      if (error?.status !== 409 || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

function textOf(message) {
  return typeof message.content === "string" ? message.content : "";
}

const scenarios = {
  /** One turn of a model that reasons first: the reasoning arrives as AG-UI 1.0's REASONING_* events
   *  (the client's own verification checks their ids) and lands in the agent's messages. */
  async reasoning_run() {
    const agent = newAgent();
    agent.addMessage(userMessage("Why is the sky blue?"));
    const types = [];
    const { newMessages } = await agent.runAgent({ forwardedProps }, {
      onEvent: ({ event }) => { types.push(event.type); },
    });
    const reasoning = agent.messages.filter((m) => m.role === "reasoning").map((m) => m.content);
    const answer = newMessages.filter((m) => m.role === "assistant").map(textOf);
    return { threadId: agent.threadId, types: collapsed(types), reasoning, answer };
  },

  /** Two turns on one agent: each answered; the second resends the whole history. */
  async text_run() {
    const agent = newAgent();
    agent.addMessage(userMessage("Hello from HttpAgent"));
    const first = recorder();
    const { newMessages } = await agent.runAgent({ forwardedProps }, first.subscriber);

    assert.deepEqual(collapsed(first.calls), ["onRunInitialized", "onRunStartedEvent", "onStateSnapshotEvent",
      "onTextMessageStartEvent", "onTextMessageContentEvent", "onTextMessageEndEvent", "onRunFinishedEvent",
      "onRunFinalized"]);
    const [started] = first.events;
    assert.equal(started.threadId, agent.threadId);
    assert.equal(first.finished().event.threadId, agent.threadId);
    assert.equal(first.finished().event.runId, started.runId);
    if (!LEGACY) {  // 0.0.x's subscriber gets neither (its RUN_FINISHED has no outcome)
      assert.equal(first.finished().outcome, "success");
      assert.deepEqual(first.finished().pendingToolCallIds, []);
    }
    assert.equal(newMessages.length, 1, JSON.stringify(newMessages));
    const answer = newMessages[0];
    assert.equal(answer.role, "assistant");
    assert.ok(answer.id.startsWith("msg_"), answer.id);
    assert.ok(textOf(answer).startsWith("(offline model) You said: Hello from HttpAgent"), textOf(answer));

    agent.addMessage(userMessage("And a second message"));
    const second = await agent.runAgent({ forwardedProps });
    const secondAnswer = second.newMessages.at(-1);
    assert.ok(textOf(secondAnswer).includes("You said: And a second message"), textOf(secondAnswer));
    assert.equal(agent.messages.length, 4);
    return {
      threadId: agent.threadId,
      messageIds: agent.messages.map((m) => m.id),
      answers: [textOf(answer), textOf(secondAnswer)],
    };
  },

  /** A frontend tool: the run ends on the call; the tool's result, appended, continues the thread. */
  async client_tool() {
    const agent = newAgent();
    agent.addMessage(userMessage('Use lookup_weather {"city": "Paris"}'));
    const first = recorder();
    await agent.runAgent({ tools: [WEATHER_TOOL], forwardedProps }, first.subscriber);

    const names = collapsed(first.calls);
    assert.deepEqual(names.slice(-5), ["onToolCallStartEvent", "onToolCallArgsEvent", "onToolCallEndEvent",
      "onRunFinishedEvent", "onRunFinalized"]);
    const call = agent.messages.at(-1).toolCalls?.[0];
    assert.ok(call, `no tool call in ${JSON.stringify(agent.messages)}`);
    assert.equal(call.function.name, "lookup_weather");
    assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
    // 1.0 reads the pending calls from RUN_FINISHED's outcome; 0.0.x has no such field (the app's own tool
    // handler below runs from the call it saw either way).
    if (!LEGACY) assert.deepEqual(first.finished().pendingToolCallIds, [call.id]);
    else assert.equal(first.events.at(-1).outcome, undefined);

    const result = JSON.stringify({ city: "Paris", forecast: "sunny" });
    agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: call.id, content: result });
    const { newMessages } = await agent.runAgent({ tools: [WEATHER_TOOL], forwardedProps });
    const finalText = textOf(newMessages.at(-1));
    assert.equal(finalText, `Tool lookup_weather returned: ${result}`);
    return { threadId: agent.threadId, toolCallId: call.id, finalText };
  },

  /** An MCP tool asks the user for input (docs/protocol.md#the-ag-ui-endpoint): a 1.0 client gets an
   *  interrupt with the request's schema, and answers it with a resume entry (MCP_INPUT_RESUME, JSON). */
  async mcp_input() {
    const agent = newAgent();
    agent.addMessage(userMessage('Please use demo__book {"show": "Tosca"}'));
    const first = recorder();
    await agent.runAgent({ forwardedProps }, first.subscriber);
    const finished = first.finished();
    assert.equal(finished.outcome, "interrupt", `the run should end on an interrupt: ${JSON.stringify(finished)}`);
    assert.equal(agent.pendingInterrupts.length, 1);
    const [interrupt] = agent.pendingInterrupts;
    // The client refuses to go on without answering it.
    await assert.rejects(agent.runAgent({ forwardedProps }), /pending interrupt/);
    const { newMessages } = await agent.runAgent({
      forwardedProps, resume: [{ interruptId: interrupt.id, ...JSON.parse(process.env.MCP_INPUT_RESUME) }],
    });
    const result = newMessages.find((m) => m.role === "tool");
    assert.ok(result, `no tool result in ${JSON.stringify(newMessages)}`);
    return { threadId: agent.threadId, interrupt, result: result.content, finalText: textOf(newMessages.at(-1)) };
  },

  /** A server tool runs inside the run: its result arrives as a tool message; the history resent later is skipped. */
  async server_tool() {
    const agent = newAgent();
    agent.addMessage(userMessage('calculate {"expression": "6*7"}'));
    const seen = recorder();
    const { newMessages } = await agent.runAgent({ forwardedProps }, seen.subscriber);

    assert.ok(seen.calls.includes("onToolCallResultEvent"), seen.calls.join());
    assert.deepEqual(newMessages.map((m) => m.role), ["assistant", "tool", "assistant"]);
    const [step, result, answer] = newMessages;
    assert.equal(result.toolCallId, step.toolCalls[0].id);
    assert.equal(result.content, "42");
    assert.equal(textOf(answer), "Tool calculate returned: 42");

    agent.addMessage(userMessage("thanks"));
    await agent.runAgent({ forwardedProps });
    return { threadId: agent.threadId, toolCallId: result.toolCallId, clientRoles: agent.messages.map((m) => m.role) };
  },

  /** The raw stream of HttpAgent.run, through the client's standalone verifier; state comes back. */
  async verify_events() {
    const agent = newAgent({ initialState: { step: 1, items: ["a"] } });
    const input = {
      threadId: agent.threadId, runId: randomUUID(), messages: [userMessage("verify me")], tools: [],
      context: [{ description: "The page", value: "/home" }], state: agent.state, forwardedProps,
    };
    const events = await new Promise((resolve, reject) => {
      const seen = [];
      verifyEvents()(agent.run(input)).subscribe({
        next: (event) => seen.push(event), error: reject, complete: () => resolve(seen),
      });
    });
    const types = events.map((e) => e.type);
    assert.deepEqual([types[0], types[1], types.at(-1)], ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_FINISHED"]);
    assert.ok(!types.includes("CUSTOM"), types.join());
    assert.equal(events[0].runId, input.runId);
    assert.deepEqual(events[1].snapshot, { step: 1, items: ["a"] });
    return { threadId: agent.threadId, types };
  },

  /** State survives a reload: an app's agent made afresh (state {}) on the same thread gets the stored state
   *  back in STATE_SNAPSHOT; a state the app then sets is the one stored for the next fresh agent. */
  async state_reload() {
    const threadId = randomUUID();
    const first = newAgent({ threadId, initialState: { cart: ["apple"] } });
    first.addMessage(userMessage("remember my cart"));
    await first.runAgent({ forwardedProps });

    const reloaded = newAgent({ threadId });  // as after a page reload: empty state, no messages
    assert.deepEqual(reloaded.state, {});
    reloaded.addMessage(userMessage("what is in my cart?"));
    await reloaded.runAgent({ forwardedProps });
    const afterReload = reloaded.state;

    reloaded.setState({ cart: ["apple", "pear"] });
    reloaded.addMessage(userMessage("added a pear"));
    await reloaded.runAgent({ forwardedProps });

    const again = newAgent({ threadId });
    again.addMessage(userMessage("and now?"));
    await again.runAgent({ forwardedProps });
    return { threadId, afterReload, afterSecondReload: again.state };
  },

  /** abortRun() mid-answer cancels the run on the server; the next turn resends the partial answer. */
  async abort_then_continue() {
    const agent = newAgent();
    agent.addMessage(userMessage("!slow"));
    let partialId;
    await agent.runAgent({ forwardedProps }, {
      onTextMessageContentEvent: ({ event }) => {
        if (!partialId) {
          partialId = event.messageId;
          agent.abortRun();
        }
      },
    });
    assert.ok(partialId, "no text arrived before the abort");
    const partial = agent.messages.find((m) => m.id === partialId);
    assert.ok(partial && textOf(partial).length > 0, JSON.stringify(agent.messages));

    agent.addMessage(userMessage("never mind"));
    // The server stores the partial answer and frees the thread once it sees the client go; until then
    // a new run is refused with 409, as for any busy thread.
    const { newMessages } = await retryWhileBusy(() => agent.runAgent({ forwardedProps }));
    const answer = textOf(newMessages.at(-1));
    assert.ok(answer.includes("You said: never mind"), answer);
    return { threadId: agent.threadId, partialId, messageIds: agent.messages.map((m) => m.id) };
  },

  /** A request the server refuses (no end user) fails the run with the HTTP status, nothing streamed. */
  async refused() {
    const agent = newAgent();
    agent.addMessage(userMessage("who am I?"));
    const seen = recorder();
    let error;
    try {
      await agent.runAgent({}, seen.subscriber);
    } catch (caught) {
      error = caught;
    }
    assert.ok(error, "a run without forwardedProps.userKey should fail");
    assert.equal(error.status, 400, error.message);
    // The client parses only application/json; a problem+json body arrives as its text.
    const problem = typeof error.payload === "string" ? JSON.parse(error.payload) : error.payload;
    assert.equal(problem.code, "VALIDATION_ERROR", JSON.stringify(problem));
    assert.ok(!seen.calls.includes("onRunStartedEvent"), seen.calls.join());
    assert.ok(seen.calls.includes("onRunFailed"), seen.calls.join());
    return { status: error.status, field: problem.field };
  },
};

await runScenarios(scenarios);
