// The reducer that folds v1 run events (AG-UI) into what a chat panel shows, and the view of a
// stored thread.
import assert from "node:assert/strict";
import { test } from "node:test";

import { addUserMessage, endRun, newView, reduceEvent, viewFromThread } from "../../static/tambo/reducer.js";

const fold = (events, view = newView()) => events.reduce(reduceEvent, view);

test("streamed text builds one assistant message and the status follows the run", () => {
  const view = fold([
    { type: "RUN_STARTED", runId: "run_1" },
    { type: "TEXT_MESSAGE_START", messageId: "msg_1" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "msg_1", delta: "Hel" },
  ]);
  assert.equal(view.status, "streaming");
  fold([{ type: "TEXT_MESSAGE_CONTENT", messageId: "msg_1", delta: "lo" }, { type: "RUN_FINISHED" }], view);
  assert.equal(view.status, "completed");
  assert.deepEqual(view.messages.map((m) => [m.role, m.blocks.map((b) => b.text)]), [["assistant", ["Hello"]]]);
});

test("a client tool call pauses the run with its pending calls", () => {
  const view = fold([
    { type: "RUN_STARTED", runId: "run_1" },
    { type: "TOOL_CALL_START", toolCallId: "call_1", toolCallName: "read_selected_row", parentMessageId: "msg_1" },
    { type: "TOOL_CALL_ARGS", toolCallId: "call_1", delta: "{}" },
    { type: "TOOL_CALL_END", toolCallId: "call_1" },
    { type: "CUSTOM", name: "tambo.run.awaiting_input",
      value: { pendingToolCalls: [{ toolCallId: "call_1", toolName: "read_selected_row", arguments: "{}" }] } },
    { type: "RUN_FINISHED" },
  ]);
  assert.equal(view.status, "calling-tools");
  assert.equal(view.pending.length, 1);
  assert.equal(view.messages[0].blocks[0].status, "pending");
});

test("component props follow their JSON Patch deltas and stop streaming at the end", () => {
  const view = fold([
    { type: "CUSTOM", name: "tambo.component.start", value: { messageId: "msg_1", componentId: "comp_1", componentName: "DataCard" } },
    { type: "CUSTOM", name: "tambo.component.props_delta", value: { componentId: "comp_1", operations: [{ op: "add", path: "/title", value: "Sig" }] } },
    { type: "CUSTOM", name: "tambo.component.props_delta", value: { componentId: "comp_1", operations: [{ op: "replace", path: "/title", value: "Signups" }] } },
  ]);
  const [block] = view.messages[0].blocks;
  assert.deepEqual(block.props, { title: "Signups" });
  assert.equal(block.streaming, true);
  fold([{ type: "CUSTOM", name: "tambo.component.end", value: { componentId: "comp_1" } }], view);
  assert.equal(block.streaming, false);
});

test("a cancel marks the run's messages; an error keeps the code and whether to retry", () => {
  const view = fold([
    { type: "RUN_STARTED", runId: "run_1" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "msg_1", delta: "part" },
    { type: "RUN_ERROR", code: "CANCELLED", message: "cancelled" },
  ]);
  assert.equal(view.status, "cancelled");
  assert.equal(view.messages[0].cancelled, true);
  const failed = endRun(newView(), "error", { message: "down", code: "LLM_SERVER_ERROR", isRetryable: false });
  assert.deepEqual(failed.error, { message: "down", code: "LLM_SERVER_ERROR", retryable: false });
});

test("a stored thread folds tool results into their calls and hides the result messages", () => {
  const view = viewFromThread({
    messages: [
      { id: "m1", role: "user", content: [{ type: "text", text: "which row?" }] },
      { id: "m2", role: "assistant", content: [{ type: "tool_use", id: "call_1", name: "read_selected_row", input: {} }] },
      { id: "m3", role: "assistant", content: [{ type: "tool_result", toolUseId: "call_1", content: [{ type: "text", text: "ord-1" }] }] },
      { id: "m4", role: "assistant", content: [{ type: "text", text: "It is ord-1." }] },
    ],
    lastCompletedRunId: "run_2",
    runStatus: "idle",
  });
  assert.deepEqual(view.messages.map((m) => m.id), ["m1", "m2", "m4"]);
  assert.equal(view.messages[1].blocks[0].result, "ord-1");
  assert.equal(view.messages[1].blocks[0].status, "done");
  assert.equal(view.status, "completed");
});

test("a failed last turn comes back as a retryable error with the message to answer", () => {
  const view = viewFromThread({
    messages: [{ id: "m1", role: "user", content: [{ type: "text", text: "!fail" }] }],
    lastRunError: { code: "LLM_SERVER_ERROR", message: "down" },
    runStatus: "idle",
  });
  assert.equal(view.status, "error");
  assert.equal(view.error.retryable, true);
  assert.deepEqual(view.lastUserContent, [{ type: "text", text: "!fail" }]);
});

test("a user message followed by another one is marked as unanswered", () => {
  const view = viewFromThread({
    messages: [
      { id: "m1", role: "user", content: [{ type: "text", text: "!fail" }] },
      { id: "m2", role: "user", content: [{ type: "text", text: "again" }] },
      { id: "m3", role: "assistant", content: [{ type: "text", text: "ok" }] },
    ],
    runStatus: "idle",
  });
  assert.deepEqual(view.messages.map((m) => Boolean(m.unanswered)), [true, false, false]);
});

test("a local user message goes at the end with a local id", () => {
  const view = newView();
  const message = addUserMessage(view, "hi");
  assert.match(message.id, /^local-/);
  assert.equal(view.messages.at(-1), message);
});

test("reasoning streamed before the answer is held and attached to the message it precedes", () => {
  const view = fold([
    { type: "RUN_STARTED", runId: "run_1" },
    { type: "THINKING_START" },
    { type: "THINKING_TEXT_MESSAGE_START" },
    { type: "THINKING_TEXT_MESSAGE_CONTENT", delta: "Let me " },
    { type: "THINKING_TEXT_MESSAGE_CONTENT", delta: "think." },
    { type: "THINKING_TEXT_MESSAGE_END" },
    { type: "THINKING_END" },
    { type: "TEXT_MESSAGE_START", messageId: "msg_1" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "msg_1", delta: "Answer." },
    { type: "RUN_FINISHED" },
  ]);
  assert.deepEqual(view.messages[0].reasoning, ["Let me think."]);
  assert.equal(view.reasoning, null);
});

test("a stored message's reasoning is shown with it", () => {
  const view = viewFromThread({
    id: "thr_1", runStatus: "idle",
    messages: [{ id: "msg_1", role: "assistant", content: [{ type: "text", text: "Hi" }], reasoning: ["Because."] }],
  });
  assert.deepEqual(view.messages[0].reasoning, ["Because."]);
});
