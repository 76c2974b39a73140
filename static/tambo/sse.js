// Server-sent events over fetch (a POST stream cannot use EventSource).
// Each `data:` line carries one JSON value; other lines are ignored. Lines may be split across
// network chunks; a final line without its line end is still read; `[DONE]` ends the stream.

export async function* readSSE(response, signal) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      if (signal?.aborted) throw abortError();
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      const lines = buffer.split(/\r\n|\r|\n/);
      buffer = lines.pop();
      for (const line of lines) {
        const parsed = parseLine(line);
        if (parsed === DONE) return;
        if (parsed !== SKIP) yield parsed;
      }
    }
    buffer += decoder.decode();
    const parsed = parseLine(buffer);
    if (parsed !== DONE && parsed !== SKIP) yield parsed;
  } finally {
    reader.cancel().catch(() => {});
  }
}

const DONE = Symbol("done");
const SKIP = Symbol("skip");

function parseLine(line) {
  if (!line.startsWith("data:")) return SKIP;
  const data = line.slice(5).replace(/^ /, "");
  if (data.trim() === "[DONE]") return DONE;
  if (!data.trim()) return SKIP;
  try {
    return JSON.parse(data);
  } catch {
    console.warn("Skipping an SSE line that is not JSON:", data.slice(0, 200));
    return SKIP;
  }
}

export function abortError() {
  return new DOMException("The request was aborted.", "AbortError");
}

export function isAbort(error) {
  return error?.name === "AbortError";
}
