// The conversation a chat panel shows, and the pure-ish reducer that folds run events into it.
//
// A view is { messages, status, error, notice }. A message is { id, role, blocks, cancelled };
// a block is one of
//   { kind: "text", key, text }
//   { kind: "tool", key, id, name, args, result, isError, status }
//   { kind: "component", key, id, name, props, state, streaming }
// status is what the person sees: idle | requesting | streaming | calling-tools | completed |
// cancelled | error.

import { applyPatch } from "./patch.js";

export function newView() {
  return { messages: [], status: "idle", error: null, notice: null };
}

// `images`: [{ name, src }] shown as thumbnails after the text.
export function addUserMessage(view, text, id = `local-${Date.now()}-${view.messages.length}`, images = []) {
  const blocks = text ? [{ kind: "text", key: "t0", text }] : [];
  images.forEach((image, index) => blocks.push({ kind: "image", key: `i${index}`, ...image }));
  const message = { id, role: "user", blocks, cancelled: false };
  view.messages.push(message);
  return message;
}

function messageById(view, id, role = "assistant") {
  let message = view.messages.find((m) => m.id === id);
  if (message && view.replayed?.delete(id)) {
    // A run replayed from its start rebuilds the messages it had already stored.
    message.blocks = [];
    message.cancelled = false;
  }
  if (!message) {
    message = { id, role, blocks: [], cancelled: false };
    view.messages.push(message);
  }
  return message;
}

export function findBlock(view, kind, id) {
  for (const message of view.messages) {
    for (const block of message.blocks) {
      if (block.kind === kind && block.id === id) return { message, block };
    }
  }
  return null;
}

// Folds one AG-UI event (docs/protocol.md#the-event-stream and #components) into the view. Returns the view.
export function reduceEvent(view, event) {
  const value = event.value || {};
  switch (event.type) {
    case "RUN_STARTED":
      view.runId = event.runId;
      view.runMessageIds = [];
      view.status = "requesting";
      break;
    case "TEXT_MESSAGE_START": {
      const message = messageById(view, event.messageId);
      track(view, message);
      message.blocks.push({ kind: "text", key: `t${message.blocks.length}`, text: "" });
      view.status = "streaming";
      break;
    }
    case "TEXT_MESSAGE_CONTENT": {
      const message = messageById(view, event.messageId);
      track(view, message);
      let block = message.blocks[message.blocks.length - 1];
      if (!block || block.kind !== "text") {
        block = { kind: "text", key: `t${message.blocks.length}`, text: "" };
        message.blocks.push(block);
      }
      block.text += event.delta || "";
      view.status = "streaming";
      break;
    }
    case "TOOL_CALL_START": {
      const message = messageById(view, event.parentMessageId || `call-${event.toolCallId}`);
      track(view, message);
      message.blocks.push({
        kind: "tool", key: event.toolCallId, id: event.toolCallId, name: event.toolCallName,
        args: "", result: null, isError: false, status: "streaming",
      });
      view.status = "streaming";
      break;
    }
    case "TOOL_CALL_ARGS": {
      const found = findBlock(view, "tool", event.toolCallId);
      if (found) found.block.args += event.delta || "";
      break;
    }
    case "TOOL_CALL_END": {
      const found = findBlock(view, "tool", event.toolCallId);
      if (found) found.block.status = "called";
      view.status = "calling-tools";
      break;
    }
    case "TOOL_CALL_RESULT": {
      const found = findBlock(view, "tool", event.toolCallId);
      if (found) {
        found.block.result = event.content ?? "";
        found.block.status = "done";
      }
      view.status = "calling-tools";
      break;
    }
    case "CUSTOM":
      reduceCustom(view, event.name, value);
      break;
    case "RUN_FINISHED":
      view.status = view.pending?.length ? "calling-tools" : "completed";
      break;
    case "RUN_ERROR":
      endRun(view, event.code === "CANCELLED" ? "cancelled" : "error", event);
      break;
    default:
      break; // other AG-UI events (steps, snapshots) change nothing the page shows
  }
  return view;
}

function reduceCustom(view, name, value) {
  if (name === "tambo.component.start") {
    const message = messageById(view, value.messageId);
    track(view, message);
    message.blocks.push({
      kind: "component", key: value.componentId, id: value.componentId, name: value.componentName,
      props: {}, state: {}, streaming: true,
    });
    view.status = "streaming";
  } else if (name === "tambo.component.props_delta") {
    const found = findBlock(view, "component", value.componentId);
    if (found) found.block.props = applyPatch(found.block.props, value.operations || []);
  } else if (name === "tambo.component.end") {
    const found = findBlock(view, "component", value.componentId);
    if (found) found.block.streaming = false;
  } else if (name === "tambo.run.awaiting_input") {
    view.pending = (value.pendingToolCalls || []).map((call) => ({ ...call }));
    for (const call of view.pending) {
      const found = findBlock(view, "tool", call.toolCallId);
      if (found) {
        found.block.status = "pending";
        if (!found.block.args) found.block.args = call.arguments || "{}";
      }
    }
    view.status = "calling-tools";
  }
}

// Before a run is replayed from its first event into a view made from the stored thread: the
// answers stored so far may be the run's own (a step it finished), and its events will rebuild
// them, so each is emptied the first time an event names it instead of getting its text twice.
export function expectReplay(view) {
  view.replayed = new Set(view.messages.filter((m) => m.role !== "user").map((m) => m.id));
  return view;
}

function track(view, message) {
  view.runMessageIds ??= [];
  if (!view.runMessageIds.includes(message.id)) view.runMessageIds.push(message.id);
}

// Ends the current run as cancelled or failed: the run's partial messages are marked, open tool
// calls and components stop spinning.
export function endRun(view, status, error = null) {
  view.status = status;
  if (status === "cancelled") {
    view.notice = "Run cancelled.";
    for (const id of view.runMessageIds || []) {
      const message = view.messages.find((m) => m.id === id);
      if (message) message.cancelled = true;
    }
  } else if (status === "error") {
    view.error = {
      message: error?.message || "Something went wrong.",
      code: error?.code || null,
      retryable: error?.isRetryable ?? error?.retryable ?? true,
    };
  }
  for (const message of view.messages) {
    for (const block of message.blocks) {
      if (block.kind === "tool" && ["streaming", "called", "running", "pending"].includes(block.status)) {
        block.status = status === "cancelled" ? "cancelled" : "failed";
      }
      if (block.kind === "component") block.streaming = false;
    }
  }
  view.pending = null;
  return view;
}

// A stored thread (GET /v1/threads/{id}) as a view: tool results are folded into their calls.
// An image the page can show: a stored blob, or an http(s) URL.
function isImage(resource) {
  if (!resource || !String(resource.mimeType || "").startsWith("image/")) return false;
  return Boolean(resource.blob) || /^https?:\/\//i.test(resource.uri || "");
}

export function viewFromThread(thread) {
  const view = newView();
  let lastUser = null; // the last user message with no answer after it so far
  for (const stored of thread.messages || []) {
    const content = stored.content || [];
    const results = content.filter((b) => b.type === "tool_result");
    for (const result of results) {
      const found = findBlock(view, "tool", result.toolUseId);
      if (found) {
        found.block.result = resultText(result);
        found.block.isError = Boolean(result.isError);
        found.block.status = result.isError ? "failed" : "done";
      }
    }
    const blocks = [];
    for (const block of content) {
      if (block.type === "text" && block.text) {
        blocks.push({ kind: "text", key: `t${blocks.length}`, text: block.text });
      } else if (block.type === "resource" && isImage(block.resource)) {
        const r = block.resource;
        blocks.push({ kind: "image", key: `i${blocks.length}`, name: r.name || "image",
          src: r.blob ? `data:${r.mimeType};base64,${r.blob}` : r.uri });
      } else if (block.type === "resource") {
        const r = block.resource || {};
        blocks.push({ kind: "text", key: `t${blocks.length}`, text: `[${r.name || r.uri || "resource"}] ${r.text || ""}` });
      } else if (block.type === "tool_use") {
        blocks.push({
          kind: "tool", key: block.id, id: block.id, name: block.name, args: JSON.stringify(block.input ?? {}),
          result: null, isError: false,
          status: (thread.pendingToolCallIds || []).includes(block.id) ? "unanswered" : "called",
        });
      } else if (block.type === "component") {
        blocks.push({
          kind: "component", key: block.id, id: block.id, name: block.name, props: block.props || {},
          state: block.state || {}, streaming: false,
        });
      }
    }
    const answered = stored.role !== "user" || results.length > 0;
    if (answered) lastUser = null;
    if (blocks.length || stored.isCancelled) {
      // A user message right after another one: the turn of the earlier one produced nothing.
      if (lastUser && stored.role === "user") lastUser.unanswered = true;
      const message = { id: stored.id, role: stored.role, blocks, cancelled: Boolean(stored.isCancelled) };
      view.messages.push(message);
      if (stored.role === "user" && !results.length) {
        lastUser = message;
        view.lastUserContent = content;
      }
    }
  }
  if (thread.lastRunError && thread.runStatus === "idle") {
    // Retry answers the stored message again (the server does not store it twice).
    view.error = { message: thread.lastRunError.message, code: thread.lastRunError.code || null, retryable: Boolean(lastUser) };
    view.status = "error";
  } else if (thread.lastRunCancelled) {
    view.status = "cancelled";
  } else if (thread.lastCompletedRunId) {
    view.status = "completed";
  }
  return view;
}

export function resultText(result) {
  return (result.content || [])
    .map((part) => (part.type === "text" ? part.text : part.resource?.text || `[${part.resource?.name || "resource"}]`))
    .join("\n");
}
