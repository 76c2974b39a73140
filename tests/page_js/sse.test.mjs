// The page's SSE reader: framing across chunks, event ids (the SSE "last event ID buffer"), and an
// event cut off by the end of the stream.
import assert from "node:assert/strict";
import { test } from "node:test";

import { readSSE, readSSEEvents, sseParser } from "../../static/tambo/sse.js";

function responseOf(chunks) {
  const encoder = new TextEncoder();
  return new Response(new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(typeof chunk === "string" ? encoder.encode(chunk) : chunk);
      controller.close();
    },
  }));
}

async function collect(iterable) {
  const out = [];
  for await (const item of iterable) out.push(item);
  return out;
}

const WIRE = 'id: 1\ndata: {"type":"RUN_STARTED","runId":"r"}\n\n'
  + ': keep-alive\n\n'
  + 'id: 2\r\ndata: {"type":"TEXT_MESSAGE_CONTENT","delta":"h\\u00e9 ✓"}\r\n\r\n'
  + 'data: {"type":"TEXT_MESSAGE_CONTENT","delta":"no id of its own"}\n\n'
  + 'data: {"type":"RUN_FINISHED",\ndata: "runId":"r"}\nid: 3\n\n';

const EXPECTED = [
  { id: "1", data: { type: "RUN_STARTED", runId: "r" } },
  { id: "2", data: { type: "TEXT_MESSAGE_CONTENT", delta: "hé ✓" } },
  { id: "2", data: { type: "TEXT_MESSAGE_CONTENT", delta: "no id of its own" } },
  { id: "3", data: { type: "RUN_FINISHED", runId: "r" } },
];

test("events carry their id, and an event without one the last id seen", async () => {
  assert.deepEqual(await collect(readSSEEvents(responseOf([WIRE]))), EXPECTED);
});

test("events split at every byte are reassembled with their ids", async () => {
  const bytes = new TextEncoder().encode(WIRE);
  const chunks = [...bytes].map((b) => new Uint8Array([b]));
  assert.deepEqual(await collect(readSSEEvents(responseOf(chunks))), EXPECTED);
});

test("a CR LF line end split between chunks is one line end", async () => {
  const chunks = ['data: {"a":1}\r', "\nid: 7\r", "\n\r", "\n"];
  assert.deepEqual(await collect(readSSEEvents(responseOf(chunks))), [{ id: "7", data: { a: 1 } }]);
});

test("an event cut off by the end of the stream is dropped, unless the tail is kept", async () => {
  const wire = 'id: 1\ndata: {"n":1}\n\nid: 2\ndata: {"n":';
  assert.deepEqual(await collect(readSSEEvents(responseOf([wire]))), [{ id: "1", data: { n: 1 } }]);
  const complete = 'data: {"n":1}\n\ndata: {"n":2}';
  assert.deepEqual(await collect(readSSE(responseOf([complete]))), [{ n: 1 }, { n: 2 }]);
});

test("readSSE yields the data only and stops at [DONE]", async () => {
  const wire = 'data: {"n":1}\n\ndata: [DONE]\n\ndata: {"n":2}\n\n';
  assert.deepEqual(await collect(readSSE(responseOf([wire]))), [{ n: 1 }]);
});

test("lines of JSON values without blank lines between them are each an event", () => {
  const feed = sseParser();
  const out = ['data: {"n":1}', 'data: {"n":2}', "data: not json", ""].flatMap((line) => feed(line));
  assert.deepEqual(out.map((e) => e.data), [{ n: 1 }, { n: 2 }]);
});
