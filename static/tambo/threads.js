// The threads tab: talks to the v1 API (threads, streaming runs, client tools, components).
//
// A turn: POST a run (new thread: /v1/threads/runs; else /v1/threads/{id}/runs with previousRunId =
// the thread's lastCompletedRunId as the server last said it: a Stop's DELETE answers once the
// cancelled run is that run, and the thread is re-read after every turn), fold its events into the view, and while the run pauses on
// `tambo.run.awaiting_input`, run the pending tools in the page and post their results as a
// continuation. Stop sends DELETE for the run, then aborts the fetch.
//
// Runs outlive their stream (onDisconnect "continue"; see resume.js): a stream that drops while
// the run goes on is read on from the run's events route, and a reload during a run reads the
// rest of it there (`resumeLiveRun`).
//
// The open thread's live stream (docs/protocol.md#the-live-thread-stream) keeps this tab in step with the
// others: a run started in another tab or process streams here too, and renames and component
// states show. While this tab runs a turn of its own, its own stream shows the run, and the thread
// stream's run events are left alone.

import { ApiError, request, requestJson } from "./api.js";
import { componentSpecs } from "./components.js";
import { addUserMessage, endRun, expectReplay, findBlock, newView, reduceEvent, viewFromThread } from "./reducer.js";
import { clearLiveRun, followRun, loadLiveRun, reconnectDelay, saveLiveRun, stillRunning } from "./resume.js";
import { abortError, isAbort, readSSEEvents } from "./sse.js";
import { runTool, toolSpecs } from "./tools.js";

export class ThreadsChat {
  constructor({ onChange, onThreadsChange }) {
    this.onChange = onChange; // (view, active) → redraw the conversation
    this.onThreadsChange = onThreadsChange; // (threads, currentId) → redraw the sidebar
    this.threads = [];
    this.thread = null; // the open thread as the server last described it
    this.view = newView();
    this.active = null; // { abort, threadId, runId, stopping, deletion } while a turn runs
    this.lastInput = null; // what the last failed attempt sent, for Retry
    this.sending = null; // { text, images, shown, nameAs } of the message a send is sending
    this.deferredStates = new Map(); // componentId → { block, previous } changed during a run
    this.idleWaiters = [];
    this.openTicket = 0;
    this.watching = null; // { threadId, abort, lastEventId } of the open thread's live stream
  }

  // --- the open thread's live stream -----------------------------------------------------------------

  // Opens the live stream of thread `id` (closing another's); reconnects with Last-Event-ID when it drops.
  watchThread(id) {
    if (this.watching?.threadId === id) return;
    this.unwatchThread();
    const watching = { threadId: id, abort: new AbortController(), lastEventId: null };
    this.watching = watching;
    this.readThreadEvents(watching);
  }

  unwatchThread() {
    this.watching?.abort.abort();
    this.watching = null;
  }

  async readThreadEvents(watching) {
    const path = `/v1/threads/${encodeURIComponent(watching.threadId)}/events`;
    for (let attempt = 0; this.watching === watching; attempt += 1) {
      try {
        const headers = watching.lastEventId ? { "Last-Event-ID": watching.lastEventId } : {};
        const response = await request("GET", path, { signal: watching.abort.signal, headers, accept: "text/event-stream" });
        for await (const { id, data } of readSSEEvents(response, watching.abort.signal)) {
          if (this.watching !== watching) return;
          attempt = 0;
          this.onThreadEvent(data, id, watching);
        }
      } catch (error) {
        if (isAbort(error) || this.watching !== watching) return;
        if (error instanceof ApiError && !error.retryable) return; // the thread is gone, or not ours
      }
      await new Promise((resolve) => setTimeout(resolve, reconnectDelay(Math.min(attempt, 4))));
    }
  }

  // One event of the live stream. Run events carry the id `<runId>:<seq>`; the thread's own carry none.
  onThreadEvent(event, id, watching) {
    if (event.type === "CUSTOM" && event.name === "tambo.thread.updated") {
      const thread = event.value;
      // Only the name and the metadata: the run fields (lastCompletedRunId…) stay the turns' own
      // bookkeeping, re-read with the thread after each run (ours, or one seen here).
      this.rememberThread({ id: thread.id, name: thread.name, metadata: thread.metadata });
      return;
    }
    if (event.type === "CUSTOM" && event.name === "tambo.component.state") {
      const found = findBlock(this.view, "component", event.value.componentId);
      if (found && !this.deferredStates.has(event.value.componentId)) {
        found.block.state = event.value.state;
        this.changed();
      }
      return;
    }
    if (event.type === "MESSAGES_SNAPSHOT") {
      if (!this.busy && this.thread?.id === watching.threadId) {
        const view = viewFromThread({ ...this.thread, messages: event.messages });
        // The join's snapshot of what this tab shows already changes nothing (and keeps its suggestions).
        const ids = (v) => v.messages.map((m) => m.id).join(" ");
        if (ids(view) !== ids(this.view)) {
          this.view = view;
          this.changed();
        }
      }
      return;
    }
    if (typeof id === "string" && id.includes(":")) watching.lastEventId = id;
    // A run started elsewhere (another tab, another process); our own turn shows its own run.
    if (this.busy || this.thread?.id !== watching.threadId) return;
    reduceEvent(this.view, event);
    this.changed();
    if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") this.refreshThread();
  }

  // Resolves once no turn is running (at once when none is).
  whenIdle() {
    return this.busy ? new Promise((resolve) => this.idleWaiters.push(resolve)) : Promise.resolve();
  }

  get busy() {
    return this.active !== null;
  }

  // False while a turn only does its bookkeeping (re-reading and naming the thread).
  get stoppable() {
    return Boolean(this.active && !this.active.settling);
  }

  changed() {
    this.onChange(this.view, this.busy);
  }

  async loadThreads() {
    const page = await requestJson("GET", "/v1/threads?limit=50");
    this.threads = page.threads;
    this.onThreadsChange(this.threads, this.thread?.id ?? null);
  }

  newThread() {
    if (this.busy) return;
    this.openTicket += 1;
    this.thread = null;
    this.unwatchThread();
    this.deferredStates.clear();
    this.view = newView();
    this.lastInput = null;
    this.onThreadsChange(this.threads, null);
    this.changed();
  }

  // Opens a thread; a thread that is gone (deleted, someone else's) answers 404 and throws.
  async openThread(id) {
    if (this.busy) return;
    // Back, Forward and clicks can overlap: only the last one asked for is shown.
    const ticket = ++this.openTicket;
    const thread = await requestJson("GET", `/v1/threads/${encodeURIComponent(id)}`);
    if (ticket !== this.openTicket || this.busy) return;
    this.thread = thread;
    this.deferredStates.clear();
    this.view = viewFromThread(thread);
    this.lastInput = this.view.error?.retryable ? { role: "user", content: this.view.lastUserContent } : null;
    this.onThreadsChange(this.threads, id);
    this.changed();
    this.watchThread(id);
    this.loadSuggestions("GET");
  }

  async renameThread(id, name) {
    const thread = await requestJson("PATCH", `/v1/threads/${encodeURIComponent(id)}`, { body: { name } });
    this.rememberThread(thread);
  }

  // 409 RUN_ACTIVE while a run streams; the caller shows the error.
  async deleteThread(id) {
    await request("DELETE", `/v1/threads/${encodeURIComponent(id)}`);
    this.threads = this.threads.filter((t) => t.id !== id);
    if (this.thread?.id === id) this.newThread();
    else this.onThreadsChange(this.threads, this.thread?.id ?? null);
  }

  rememberThread(thread) {
    const summary = { ...thread };
    delete summary.messages;
    const known = this.threads.findIndex((t) => t.id === thread.id);
    if (known >= 0) this.threads[known] = { ...this.threads[known], ...summary };
    else this.threads.unshift(summary);
    if (this.thread?.id === thread.id) this.thread = { ...this.thread, ...summary };
    this.onThreadsChange(this.threads, this.thread?.id ?? null);
  }

  // `attachments`: [{ part, image }] from the composer's tray (attachments.js).
  async send(text, attachments = []) {
    const trimmed = text.trim();
    if ((!trimmed && !attachments.length) || this.busy) return false;
    this.view.error = null;
    this.view.notice = null;
    this.view.suggestions = null;
    const images = attachments.map((a) => a.image);
    const shown = addUserMessage(this.view, trimmed, undefined, images);
    // A thread without a name gets one from the server after its first answer.
    const nameAs = this.thread?.name || !trimmed ? null : trimmed;
    const content = [...(trimmed ? [{ type: "text", text: trimmed }] : []), ...attachments.map((a) => a.part)];
    this.sending = { text: trimmed, images, shown, nameAs };
    try {
      await this.turn({ role: "user", content }, nameAs);
    } finally {
      this.sending = null;
    }
    return true;
  }

  async retry() {
    if (this.busy || !this.lastInput) return;
    const refused = this.view.error?.refused;
    this.view.error = null;
    this.view.notice = null;
    this.view.suggestions = null;
    if (!refused) {
      await this.turn(this.lastInput);
      return;
    }
    // The refused message was never stored: it shows again as it is sent again.
    this.view.draft = null;
    const shown = addUserMessage(this.view, refused.text, undefined, refused.images);
    this.sending = { ...refused, shown };
    try {
      await this.turn(this.lastInput, refused.nameAs);
    } finally {
      this.sending = null;
    }
  }

  // A send the server refused before any run started (400, 409, 429, …) stored nothing: the message
  // leaves the transcript, its text goes back to the box (`view.draft`), and the error offers Retry.
  refusedSend(error) {
    const sending = this.sending;
    this.view.messages = this.view.messages.filter((m) => m !== sending.shown);
    this.view.draft = sending.text;
    this.view.status = "error";
    this.view.error = { message: `Not sent: ${error.message}`, code: error.code || `HTTP_${error.status}`,
      retryable: true, refused: { text: sending.text, images: sending.images, nameAs: sending.nameAs } };
  }

  async stop() {
    const active = this.active;
    if (!active || active.stopping || active.settling) return;
    active.stopping = true;
    // Runs go on when their stream closes (onDisconnect "continue"), so aborting the request that
    // starts one would leave it running: streamRun cancels it once the answer names it.
    if (active.starting) return;
    await this.cancelRun(active);
  }

  async cancelRun(active) {
    if (active.threadId && active.runId) {
      // DELETE first, so the server records a cancel even if this process is not the one streaming;
      // then abort the fetch (right away when the DELETE fails: 404 means the run had already ended).
      const path = `/v1/threads/${encodeURIComponent(active.threadId)}/runs/${encodeURIComponent(active.runId)}`;
      active.deletion = request("DELETE", path).catch(() => null);
      await active.deletion;
    }
    active.abort.abort();
  }

  // The server refuses state changes while a run is active (409 RUN_ACTIVE): during a run the change
  // is shown at once and saved when the run has ended.
  async updateComponentState(block, state, previous = block.state) {
    block.state = state;
    if (!this.thread || this.busy) {
      block.note = "Will be saved when the run has finished.";
      if (!this.deferredStates.has(block.id)) this.deferredStates.set(block.id, { block, previous });
      this.changed();
      return;
    }
    block.note = "Saving…";
    this.changed();
    try {
      const path = `/v1/threads/${encodeURIComponent(this.thread.id)}/components/${encodeURIComponent(block.id)}/state`;
      const answer = await requestJson("POST", path, { body: { state } });
      block.state = answer.state;
      block.note = "Saved.";
    } catch (error) {
      block.state = previous;
      block.note = `Not saved: ${error.message}`;
    }
    this.changed();
  }

  // After a reload: when this tab was reading a run of thread `id` that still runs, open the thread
  // and read the run again from its first event (the page before the reload had the rest in
  // memory only). Resolves true once the thread shows (the run goes on streaming), false when
  // there is nothing to resume; a thread that is gone throws like openThread.
  async resumeLiveRun(id) {
    const live = loadLiveRun(sessionStore());
    clearLiveRun(sessionStore());
    if (!live || live.threadId !== id || this.busy) return false;
    await this.openThread(id);
    if (!stillRunning(live, this.thread)) return true;
    const abort = new AbortController();
    let response;
    try {
      response = await this.openEvents({ ...live, lastEventId: null }, abort.signal);
    } catch (error) {
      // 404: the run ended long enough ago to be forgotten; the thread as loaded is the answer.
      if (!(error instanceof ApiError && error.status === 404)) console.warn("Could not resume the run", error);
      return true;
    }
    expectReplay(this.view);
    // The page before the reload would have named a new thread after this first answer.
    const first = this.view.messages.find((m) => m.role === "user")?.blocks.find((b) => b.kind === "text");
    const nameAs = this.thread.name ? null : first?.text ?? null;
    this.turn(null, nameAs, { abort, response, live: { ...live, lastEventId: null } });
    return true;
  }

  // --- the turn: run, tools, continuation, … ---------------------------------------------------------

  // `resumed` ({ abort, response, live }) reads an existing run from the events route instead of
  // sending `message`.
  async turn(message, nameAs = null, resumed = null) {
    const abort = resumed?.abort ?? new AbortController();
    this.active = { abort, threadId: resumed?.live.threadId ?? this.thread?.id ?? null,
      runId: resumed?.live.runId ?? null, stopping: false, deletion: null };
    this.view.status = "requesting";
    this.changed();
    try {
      let pending;
      if (resumed) {
        this.lastInput = this.view.lastUserContent ? { role: "user", content: this.view.lastUserContent } : null;
        pending = await this.readRun(resumed.response, abort.signal, resumed.live);
      } else {
        this.lastInput = message;
        pending = await this.streamRun(message, abort.signal);
      }
      while (pending) {
        const next = { role: "user", content: await this.runPendingTools(pending, abort.signal) };
        this.lastInput = next;
        pending = await this.streamRun(next, abort.signal);
      }
      this.lastInput = this.view.status === "error" ? this.lastInput : null;
    } catch (error) {
      if (isAbort(error) || this.active.stopping) {
        endRun(this.view, "cancelled");
      } else if (error.refused && this.sending) {
        this.refusedSend(error);
      } else {
        console.error(error);
        endRun(this.view, "error", {
          message: error.message || String(error),
          code: error.code || (error instanceof ApiError ? `HTTP_${error.status}` : "NETWORK_ERROR"),
          retryable: error instanceof ApiError ? error.retryable : true,
        });
      }
    } finally {
      // Still busy until the thread is re-read: a Retry or a new message needs its lastCompletedRunId.
      this.active.settling = true;
      clearLiveRun(sessionStore());
      this.changed(); // nothing left to stop
      if (this.active.deletion) await this.active.deletion;
      await this.refreshThread();
      // Stopped before the server said which thread it made: the list shows it anyway.
      if (!this.thread) await this.loadThreads().catch(() => null);
      // Named before the person can go on, so a rename of theirs cannot be overtaken by this one.
      if (nameAs && this.thread?.id && !this.thread.name) await this.nameThread(nameAs);
      this.active = null;
      this.changed();
      for (const resolve of this.idleWaiters.splice(0)) resolve();
      if (this.view.status === "completed") this.loadSuggestions("POST");
      const deferred = [...this.deferredStates.values()];
      this.deferredStates.clear();
      for (const { block, previous } of deferred) await this.updateComponentState(block, block.state, previous);
    }
  }

  // One run's stream. Returns the pending tool calls when the run paused for them, else null.
  async streamRun(message, signal) {
    const body = { message, tools: toolSpecs(), availableComponents: componentSpecs(), onDisconnect: "continue" };
    let path = "/v1/threads/runs";
    if (this.thread) {
      path = `/v1/threads/${encodeURIComponent(this.thread.id)}/runs`;
      if (this.thread.lastCompletedRunId) body.previousRunId = this.thread.lastCompletedRunId;
    }
    this.view.status = "requesting";
    this.view.pending = null;
    this.changed();
    this.active.runId = null; // not the paused run this one continues: Stop must not aim at that one
    this.active.starting = true;
    let response;
    try {
      response = await request("POST", path, { body, signal, accept: "text/event-stream" });
    } catch (error) {
      if (error instanceof ApiError) {
        error.refused = true; // no run started: nothing of this message was stored
        // The server says which run the next message must follow (INVALID_PREVIOUS_RUN carries it).
        if (this.thread && error.body?.lastCompletedRunId) {
          this.thread = { ...this.thread, lastCompletedRunId: error.body.lastCompletedRunId };
        }
      }
      throw error;
    } finally {
      this.active.starting = false;
    }
    const threadId = response.headers.get("X-Thread-Id");
    this.active.runId = response.headers.get("X-Run-Id");
    if (threadId) {
      this.thread = { id: threadId };
      this.active.threadId = threadId;
      this.onThreadsChange(this.threads, threadId);
      this.watchThread(threadId);
    }
    if (this.active.stopping) {
      // Stop came while the run was being started.
      await this.cancelRun(this.active);
      throw abortError();
    }
    const live = { threadId: this.active.threadId ?? this.thread?.id, runId: this.active.runId, lastEventId: null };
    return this.readRun(response, signal, live);
  }

  // Reads one run's events into the view, remembering where it is (`live`) in sessionStorage; a
  // stream that drops before the run's last event is read on from the events route. Returns the
  // pending tool calls when the run paused for them, else null.
  async readRun(response, signal, live) {
    await followRun(response, {
      signal,
      live,
      openEvents: (where) => this.openEvents(where, signal),
      onEvent: (event) => {
        if (event.type === "RUN_STARTED" && event.runId) this.active.runId = event.runId;
        reduceEvent(this.view, event);
        this.changed();
        if (event.type !== "RUN_FINISHED" && event.type !== "RUN_ERROR") saveLiveRun(sessionStore(), live);
      },
    });
    return this.pausedFor();
  }

  pausedFor() {
    if (this.view.status === "error" || this.view.status === "cancelled") return null;
    if (this.view.pending?.length) {
      // The paused run is now the thread's last completed run: the continuation must name it.
      this.thread = { ...this.thread, lastCompletedRunId: this.view.runId };
      return this.view.pending;
    }
    return null;
  }

  // The run's events after `live.lastEventId` (all without it), then the live ones (docs/protocol.md#resumable-runs).
  openEvents(live, signal) {
    const path = `/v1/threads/${encodeURIComponent(live.threadId)}/runs/${encodeURIComponent(live.runId)}/events`;
    const headers = live.lastEventId === null ? {} : { "Last-Event-ID": live.lastEventId };
    return request("GET", path, { signal, headers, accept: "text/event-stream" });
  }

  async runPendingTools(pending, signal) {
    this.view.status = "calling-tools";
    const blocks = [];
    for (const call of pending) {
      const found = findBlock(this.view, "tool", call.toolCallId);
      if (found) found.block.status = "running";
      this.changed();
      const { text, isError } = await runTool(call.toolName, call.arguments, signal);
      if (found) {
        found.block.result = text;
        found.block.isError = isError;
        found.block.status = isError ? "failed" : "done";
      }
      this.changed();
      const block = { type: "tool_result", toolUseId: call.toolCallId, content: [{ type: "text", text }] };
      if (isError) block.isError = true;
      blocks.push(block);
    }
    return blocks;
  }

  async refreshThread() {
    if (!this.thread?.id) return;
    try {
      this.rememberThread(await requestJson("GET", `/v1/threads/${encodeURIComponent(this.thread.id)}`));
    } catch (error) {
      console.warn("Could not refresh the thread", error);
    }
  }

  // The server names the thread from the conversation (docs/protocol.md#thread-names-and-suggestions). Should that route fail
  // (an older server), the first message, cut short, names it instead.
  async nameThread(text) {
    const id = this.thread.id;
    try {
      this.rememberThread(await requestJson("POST", `/threads/${encodeURIComponent(id)}/generate-name`));
      return;
    } catch (error) {
      console.warn("The server could not name the thread; naming it after the first message", error);
    }
    const name = text.length > 60 ? `${text.slice(0, 57)}…` : text;
    try {
      await this.renameThread(id, name);
    } catch (error) {
      console.warn("Could not name the thread", error);
    }
  }

  // Suggestions for the last answer (docs/protocol.md#thread-names-and-suggestions): POST makes new ones after a turn, GET shows
  // the stored ones when a thread is opened. They are a nicety: a failure only logs.
  async loadSuggestions(method) {
    const threadId = this.thread?.id;
    const last = this.view.messages[this.view.messages.length - 1];
    if (!threadId || !last || last.role !== "assistant" || last.id.startsWith("local-")) return;
    const path = `/v1/threads/${encodeURIComponent(threadId)}/messages/${encodeURIComponent(last.id)}/suggestions`;
    try {
      const answer = method === "POST"
        ? await requestJson("POST", path, { body: { maxSuggestions: 3, availableComponents: componentSpecs() } })
        : await requestJson("GET", path);
      // The person may have moved on (sent a message, opened another thread) meanwhile.
      if (this.busy || this.thread?.id !== threadId || this.view.messages[this.view.messages.length - 1] !== last) return;
      this.view.suggestions = { messageId: last.id, items: answer.suggestions || [] };
      this.changed();
    } catch (error) {
      console.warn("No suggestions", error);
    }
  }
}

function sessionStore() {
  try {
    return window.sessionStorage;
  } catch {
    return null; // storage refused (privacy settings): no resume after a reload
  }
}
