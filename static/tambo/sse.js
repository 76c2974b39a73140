// Server-sent events over fetch (a POST stream cannot use EventSource).
// An event is its `data:` lines (joined with "\n") up to a blank line; its data is one JSON value.
// `id:` sets the stream's last event id, which every later event carries (the SSE standard's
// "last event ID buffer"): a run's events are numbered so a reader can resume after the last one
// (docs/protocol.md#resumable-runs). Lines may be split across network chunks; `[DONE]` ends the stream.

// Yields { id, data } for each event. An event the stream cut off before its blank line is
// dropped, as the standard says (a dropped connection must not yield half an event), unless
// `keepTail` is set: then it is still read (for servers that end without the last line end).
export async function* readSSEEvents(response, signal, { keepTail = false } = {}) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parser = sseParser();
  let buffer = "";
  try {
    for (;;) {
      if (signal?.aborted) throw abortError();
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      // A chunk ending in "\r" may be half of "\r\n": that line end waits for the next chunk.
      const held = buffer.endsWith("\r") ? 1 : 0;
      const lines = buffer.slice(0, buffer.length - held).split(/\r\n|\r|\n/);
      buffer = lines.pop() + buffer.slice(buffer.length - held);
      for (const event of eventsOf(parser, lines)) {
        if (event === DONE) return;
        yield event;
      }
    }
    if (!keepTail) return;
    buffer += decoder.decode();
    for (const event of eventsOf(parser, [...buffer.split(/\r\n|\r|\n/), ""])) {
      if (event === DONE) return;
      yield event;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function* eventsOf(parser, lines) {
  for (const line of lines) yield* parser(line);
}

// Yields the data of each event (the completions stream, which ignores ids).
export async function* readSSE(response, signal) {
  for await (const event of readSSEEvents(response, signal, { keepTail: true })) yield event.data;
}

export const DONE = Symbol("done");

// A line-at-a-time SSE parser: feed it each line (without its line end); it returns the events
// that line completes ({ id, data }), or [DONE]. Comments, unknown fields and data that is not
// JSON are skipped.
export function sseParser() {
  let lastId = null;
  let data = [];
  return function feed(line) {
    if (line === "") {
      const lines = data;
      data = [];
      return lines.length ? parseData(lines).map((value) => ({ id: lastId, data: value })) : [];
    }
    if (line.startsWith(":")) return [];
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "data") {
      if (value.trim() === "[DONE]") return [DONE];
      data.push(value);
    } else if (field === "id" && !value.includes("\0")) {
      lastId = value;
    }
    return [];
  };
}

// One JSON value from the event's lines; servers that leave out the blank line between events
// put several values in one event, so each line is tried on its own when the whole is not JSON.
function parseData(lines) {
  const whole = tryJson(lines.join("\n"), lines.length === 1);
  if (whole !== SKIP) return [whole];
  if (lines.length === 1) return [];
  return lines.map((line) => tryJson(line)).filter((value) => value !== SKIP);
}

const SKIP = Symbol("skip");

function tryJson(text, warn = true) {
  if (!text.trim()) return SKIP;
  try {
    return JSON.parse(text);
  } catch {
    if (warn) console.warn("Skipping an SSE event that is not JSON:", text.slice(0, 200));
    return SKIP;
  }
}

export function abortError() {
  return new DOMException("The request was aborted.", "AbortError");
}

export function isAbort(error) {
  return error?.name === "AbortError";
}
