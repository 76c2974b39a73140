// Resumable runs in the page (spec section 12). Runs are started with onDisconnect "continue", so
// a run goes on when the page loses its stream. While a run streams, the page keeps the run it
// reads (thread id, run id, last event id) in sessionStorage, per tab: after a reload it reopens
// that thread and reads the run's events from the events route; after a dropped connection it
// reads on after the last event id it has. These are the pure parts; `storage` is a Storage (or
// null when the browser refuses one).

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
