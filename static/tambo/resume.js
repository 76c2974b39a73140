// Resumable runs in the page (docs/protocol.md#resumable-runs). Runs are started with onDisconnect "continue", so
// a run goes on when the page loses its stream. While a run streams, the page keeps the run it
// reads (thread id, run id, last event id) in sessionStorage, per tab: after a reload it reopens
// that thread and reads the run's events from the events route; after a dropped connection it
// reads on after the last event id it has. `followRun` does the reading; the rest is pure, and
// `storage` is a Storage (or null when the browser refuses one).

import { abortError, isAbort, readSSEEvents } from "./sse.js";

const KEY = "tambo.liveRun";

// How many times in a row the page reconnects to a run's events before it gives up.
export const MAX_RECONNECTS = 5;

export function saveLiveRun(storage, { threadId, runId, lastEventId = null }) {
  if (!storage || !threadId || !runId) return;
  try {
    storage.setItem(KEY, JSON.stringify({ threadId, runId, lastEventId }));
  } catch {
    // A full or disabled storage only costs the resume after a reload.
  }
}

// The stored live run, or null when there is none (or it is not one of ours).
export function loadLiveRun(storage) {
  let value = null;
  try {
    value = JSON.parse(storage?.getItem(KEY) ?? "null");
  } catch {
    return null;
  }
  if (!value || typeof value.threadId !== "string" || typeof value.runId !== "string") return null;
  const lastEventId = typeof value.lastEventId === "string" ? value.lastEventId : null;
  return { threadId: value.threadId, runId: value.runId, lastEventId };
}

export function clearLiveRun(storage) {
  try {
    storage?.removeItem(KEY);
  } catch {
    // nothing stored, nothing to clear
  }
}

// Whether a thread, as GET /v1/threads/{id} describes it, is still running the stored run.
export function stillRunning(live, thread) {
  return Boolean(live && thread && thread.id === live.threadId && thread.runStatus !== "idle"
    && thread.currentRunId === live.runId);
}

// Whether an event with SSE id `id` comes after the last one read: a replay after a reconnect may
// repeat events, and each must reach the view once. Events without a numeric id always count.
export function isNewEvent(lastEventId, id) {
  const seq = toSeq(id);
  const last = toSeq(lastEventId);
  return seq === null || last === null || seq > last;
}

function toSeq(id) {
  return typeof id === "string" && /^\d+$/.test(id) ? Number(id) : null;
}

// Milliseconds before reconnect number `attempt` (0-based): exponential, capped, with jitter so
// tabs that lost the server together do not come back together.
export function reconnectDelay(attempt, random = Math.random) {
  const base = Math.min(500 * 2 ** attempt, 8000);
  return Math.round(base * (1 - 0.25 * random()));
}

// Reads one run's events from `response` until its RUN_FINISHED or RUN_ERROR, calling
// onEvent(event) once per event. `live` ({ threadId, runId, lastEventId }) follows the last event
// read. When the stream fails or ends early (the run goes on without us: onDisconnect "continue"),
// openEvents(live) opens the run's events route after live.lastEventId, up to MAX_RECONNECTS
// times in a row with a growing delay; events already read are skipped. Throws the last failure
// when it gives up (at once for an HTTP error that is not worth retrying, such as 404), and an
// AbortError when `signal` aborts.
export async function followRun(response, { signal, live, openEvents, onEvent, delay = reconnectDelay }) {
  let dropped = null;
  let delivered = 0;
  for (let attempt = 0; ; attempt += 1) {
    if (response) {
      dropped = null;
      try {
        for await (const { id, data: event } of readSSEEvents(response, signal)) {
          if (!isNewEvent(live.lastEventId, id)) continue;
          live.lastEventId = id ?? live.lastEventId;
          if (event.type === "RUN_STARTED" && event.runId) live.runId = event.runId;
          delivered += 1;
          attempt = 0;
          onEvent(event);
          if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") return;
        }
      } catch (error) {
        if (isAbort(error) || signal?.aborted) throw error;
        dropped = error;
      }
    }
    // The server can say what came next only for a known run, and after an event with an id.
    const resumable = live.threadId && live.runId && (delivered === 0 || live.lastEventId !== null);
    if (!resumable || attempt >= MAX_RECONNECTS) {
      throw dropped || Object.assign(new Error("The connection closed before the run finished."), { code: "STREAM_CLOSED" });
    }
    await sleep(delay(attempt), signal);
    try {
      response = await openEvents(live);
    } catch (error) {
      if (isAbort(error) || signal?.aborted || error.retryable === false) throw error;
      response = null;
      dropped = error;
    }
  }
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError());
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(abortError());
    }, { once: true });
  });
}
