// The chat-completions message engine: delta merging, a streamed turn, and the tool round.
import assert from "node:assert/strict";
import { test } from "node:test";

import { MessageEngine, combineDelta, toolPlugin } from "../../static/tambo/engine.js";

const chunk = (delta, finish = null) => ({ id: "c1", object: "chat.completion.chunk", created: 1, model: "m",
  choices: [{ index: 0, delta, finish_reason: finish }] });

test("deltas append strings, keep role names whole and merge tool calls by index", () => {
  const message = {};
  combineDelta(message, { role: "assistant", content: "He" });
  combineDelta(message, { role: "assistant", content: "llo" });
  combineDelta(message, { tool_calls: [{ index: 0, id: "call_1", function: { name: "x", arguments: "{\"a\"" } }] });
  combineDelta(message, { tool_calls: [{ index: 0, function: { arguments: ":1}" } }] });
  assert.equal(message.role, "assistant");
  assert.equal(message.content, "Hello");
  assert.equal(message.tool_calls[0].function.arguments, "{\"a\":1}");
});

test("a streamed answer ends the turn completed with the text", async () => {
  const engine = new MessageEngine({
    async *responseProvider() {
      yield chunk({ role: "assistant", content: "Hi " });
      yield chunk({ content: "there" }, "stop");
    },
  });
  assert.equal(await engine.sendMessage("hello"), "completed");
  assert.deepEqual(engine.messages.map((m) => [m.role, m.content]), [["user", "hello"], ["assistant", "Hi there"]]);
  assert.equal(engine.messages[1].loading, undefined);
});

test("the tool plugin runs the call and asks again with the result", async () => {
  const requests = [];
  const engine = new MessageEngine({
    async *responseProvider(body) {
      requests.push(structuredClone(body));
      if (requests.length === 1) {
        yield chunk({ role: "assistant", tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "now", arguments: "{}" } }] }, "tool_calls");
      } else {
        yield chunk({ role: "assistant", content: "It is noon." }, "stop");
      }
    },
    plugins: [toolPlugin({
      getTools: () => [{ type: "function", function: { name: "now", parameters: { type: "object" } } }],
      callTool: async () => "12:00",
    })],
  });
  assert.equal(await engine.sendMessage("time?"), "completed");
  assert.deepEqual(engine.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
  assert.equal(engine.messages[2].content, "12:00");
  assert.equal(requests.length, 2);
  assert.equal(requests[0].tools[0].function.name, "now");
  // What goes back to the model carries no page-only fields.
  assert.ok(requests[1].messages.every((m) => !("state" in m) && !("metadata" in m) && !("loading" in m)));
});

test("a failing provider ends the turn in error and a blank message is refused", async () => {
  const engine = new MessageEngine({
    responseProvider() {
      throw new Error("boom");
    },
    plugins: [{ name: "swallow", onError: () => {} }],
  });
  assert.equal(await engine.sendMessage("   "), null);
  await engine.sendMessage("hi");
  assert.equal(engine.requestState, "error");
});
