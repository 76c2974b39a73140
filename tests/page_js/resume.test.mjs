// The page's resume state: the live run kept in sessionStorage, event id order, reconnect delays.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  clearLiveRun, followRun, isNewEvent, loadLiveRun, MAX_RECONNECTS, reconnectDelay, saveLiveRun, stillRunning,
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

// --- followRun: reading one run across dropped connections -------------------------------------

const RUN = [
  { type: "RUN_STARTED", runId: "run_1" },
  { type: "TEXT_MESSAGE_START", messageId: "m" },
  { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "one " },
  { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "two" },
  { type: "TEXT_MESSAGE_END", messageId: "m" },
  { type: "RUN_FINISHED" },
];

// A response carrying events first..last (1-based ids); `fail` makes the body break off after them.
function eventsResponse(first, last, { fail = false, ids = true } = {}) {
  const encoder = new TextEncoder();
  let n = first;
  // One event per read; the failure comes on the read after the last one, as on a real network.
  return new Response(new ReadableStream({
    pull(controller) {
      if (n <= last) {
        controller.enqueue(encoder.encode(`${ids ? `id: ${n}\n` : ""}data: ${JSON.stringify(RUN[n - 1])}\n\n`));
        n += 1;
      } else if (fail) controller.error(new TypeError("network error"));
      else controller.close();
    },
  }));
}

function follow(first, replies) {
  const seen = [];
  const asked = [];
  const live = { threadId: "thr_1", runId: "run_1", lastEventId: null };
  const run = followRun(first, {
    live,
    onEvent: (event) => seen.push(event),
    openEvents: async (where) => {
      asked.push(where.lastEventId);
      const reply = replies.shift();
      if (reply instanceof Error) throw reply;
      return reply;
    },
    delay: () => 0,
  });
  return { run, seen, asked, live };
}

test("a stream that breaks off is read on after its last id, each event once", async () => {
  const { run, seen, asked, live } = follow(eventsResponse(1, 3, { fail: true }), [eventsResponse(2, 6)]);
  await run;
  assert.deepEqual(seen, RUN);
  assert.deepEqual(asked, ["3"]);
  assert.equal(live.lastEventId, "6");
});

test("a failed reconnect is retried; one that is not worth it is not", async () => {
  const busy = Object.assign(new Error("busy"), { retryable: true });
  const ok = follow(eventsResponse(1, 2), [busy, new TypeError("offline"), eventsResponse(3, 6)]);
  await ok.run;
  assert.deepEqual(ok.seen, RUN);
  assert.deepEqual(ok.asked, ["2", "2", "2"]);

  const gone = Object.assign(new Error("not found"), { status: 404, retryable: false });
  const lost = follow(eventsResponse(1, 2), [gone]);
  await assert.rejects(lost.run, /not found/);
  assert.deepEqual(lost.asked, ["2"]);
});

test("the reader gives up after MAX_RECONNECTS attempts in a row", async () => {
  const replies = Array.from({ length: MAX_RECONNECTS + 1 }, () => new TypeError("offline"));
  const { run, asked } = follow(eventsResponse(1, 2), replies);
  await assert.rejects(run, /offline/);
  assert.equal(asked.length, MAX_RECONNECTS);
});

test("events without ids cannot be resumed once some were read", async () => {
  const { run, asked, seen } = follow(eventsResponse(1, 2, { ids: false }), []);
  await assert.rejects(run, (error) => error.code === "STREAM_CLOSED");
  assert.equal(seen.length, 2);
  assert.deepEqual(asked, []);
});

test("aborting stops the reader without a reconnect", async () => {
  const controller = new AbortController();
  const live = { threadId: "thr_1", runId: "run_1", lastEventId: null };
  const asked = [];
  const run = followRun(eventsResponse(1, 2), {
    live, signal: controller.signal, onEvent: () => controller.abort(),
    openEvents: async () => asked.push(1), delay: () => 0,
  });
  await assert.rejects(run, (error) => error.name === "AbortError");
  assert.deepEqual(asked, []);
});
