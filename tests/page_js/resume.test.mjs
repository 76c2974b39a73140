// The page's resume state: the live run kept in sessionStorage, event id order, reconnect delays.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  clearLiveRun, isNewEvent, loadLiveRun, reconnectDelay, saveLiveRun, stillRunning,
} from "../../static/tambo/resume.js";
import { expectReplay, newView, reduceEvent, viewFromThread } from "../../static/tambo/reducer.js";

class MemoryStorage {
  constructor() {
    this.items = new Map();
  }
  getItem(key) {
    return this.items.has(key) ? this.items.get(key) : null;
  }
  setItem(key, value) {
    this.items.set(key, String(value));
  }
  removeItem(key) {
    this.items.delete(key);
  }
}

test("the live run is saved, loaded and cleared", () => {
  const storage = new MemoryStorage();
  assert.equal(loadLiveRun(storage), null);
  saveLiveRun(storage, { threadId: "thr_1", runId: "run_1", lastEventId: "12" });
  assert.deepEqual(loadLiveRun(storage), { threadId: "thr_1", runId: "run_1", lastEventId: "12" });
  clearLiveRun(storage);
  assert.equal(loadLiveRun(storage), null);
});

test("a run without ids is not saved, and what is not ours is not loaded", () => {
  const storage = new MemoryStorage();
  saveLiveRun(storage, { threadId: "thr_1", runId: null });
  assert.equal(loadLiveRun(storage), null);
  for (const junk of ["{", "[]", '{"threadId":1,"runId":"r"}', "null"]) {
    storage.setItem("tambo.liveRun", junk);
    assert.equal(loadLiveRun(storage), null, junk);
  }
  storage.setItem("tambo.liveRun", '{"threadId":"t","runId":"r","lastEventId":5}');
  assert.deepEqual(loadLiveRun(storage), { threadId: "t", runId: "r", lastEventId: null });
});

test("no storage (refused by the browser) is no live run, and saving does not throw", () => {
  assert.equal(loadLiveRun(null), null);
  saveLiveRun(null, { threadId: "t", runId: "r" });
  clearLiveRun(null);
  const full = { setItem() { throw new DOMException("full", "QuotaExceededError"); } };
  saveLiveRun(full, { threadId: "t", runId: "r" });
});

test("an event is new when its id is above the last one read, compared as numbers", () => {
  assert.equal(isNewEvent(null, "1"), true);
  assert.equal(isNewEvent("9", "10"), true);
  assert.equal(isNewEvent("10", "9"), false);
  assert.equal(isNewEvent("10", "10"), false);
  assert.equal(isNewEvent("10", null), true);
  assert.equal(isNewEvent("10", "x"), true);
});

test("a thread still runs the stored run only while it is busy with that run", () => {
  const live = { threadId: "thr_1", runId: "run_1" };
  assert.equal(stillRunning(live, { id: "thr_1", runStatus: "streaming", currentRunId: "run_1" }), true);
  assert.equal(stillRunning(live, { id: "thr_1", runStatus: "idle", currentRunId: null }), false);
  assert.equal(stillRunning(live, { id: "thr_1", runStatus: "streaming", currentRunId: "run_2" }), false);
  assert.equal(stillRunning(live, { id: "thr_2", runStatus: "streaming", currentRunId: "run_1" }), false);
  assert.equal(stillRunning(null, { id: "thr_1" }), false);
});

test("reconnect delays grow, stay capped and are spread by jitter", () => {
  assert.deepEqual([0, 1, 2, 3, 4, 10].map((n) => reconnectDelay(n, () => 0)), [500, 1000, 2000, 4000, 8000, 8000]);
  assert.equal(reconnectDelay(0, () => 1), 375);
});

test("a run replayed from its start over the stored thread shows its answer once", () => {
  const thread = {
    messages: [
      { id: "msg_u", role: "user", content: [{ type: "text", text: "hi" }] },
      { id: "msg_a", role: "assistant", content: [{ type: "text", text: "Hel" }] },
    ],
    runStatus: "streaming",
  };
  const view = expectReplay(viewFromThread(thread));
  for (const event of [
    { type: "RUN_STARTED", runId: "run_1" },
    { type: "TEXT_MESSAGE_START", messageId: "msg_a" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "msg_a", delta: "Hel" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "msg_a", delta: "lo" },
    { type: "TEXT_MESSAGE_END", messageId: "msg_a" },
    { type: "TEXT_MESSAGE_START", messageId: "msg_b" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "msg_b", delta: "more" },
    { type: "RUN_FINISHED" },
  ]) reduceEvent(view, event);
  assert.deepEqual(view.messages.map((m) => [m.id, m.blocks.map((b) => b.text).join("")]),
    [["msg_u", "hi"], ["msg_a", "Hello"], ["msg_b", "more"]]);
  assert.equal(view.status, "completed");
});

test("without a replay, events extend a message as before", () => {
  const view = newView();
  reduceEvent(view, { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "a" });
  reduceEvent(view, { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "b" });
  assert.equal(view.messages[0].blocks[0].text, "ab");
});
