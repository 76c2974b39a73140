// The message engine for /api/chat/completions: the semantics of TinyRobot 0.4's useMessage
// (docs/clients.md#chat-completions-gateway, the same as clientsdk.message), with its known bugs fixed.
//
// requestState: idle (before the first send) | processing | completed | aborted | error;
// processingState while processing: requesting | completing | calling-tools.

import { isAbort, abortError } from "./sse.js";

export const DEFAULT_EXCLUDED_FIELDS = ["state", "metadata", "loading"];
const NAME_KEYS = new Set(["type", "role"]);
const CLOSING_HOOKS = new Set(["onTurnEnd", "onError", "onFinally"]);
const now = () => Math.floor(Date.now() / 1000);
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const copy = (v) => (v === undefined ? undefined : structuredClone(v));

// --- Delta merge ----------------------------------------------------------------------------------

const hasIndex = (item) => isObject(item) && Number.isInteger(item.index) && item.index >= 0;
const allIndexed = (items) => items.every((item) => item === null || hasIndex(item));

export function combineDelta(target, source) {
  for (const [key, value] of Object.entries(source)) {
    const current = target[key];
    if (!current) target[key] = copy(value);
    else if (typeof current === "string" && typeof value === "string") {
      if (!NAME_KEYS.has(key)) target[key] = current + value;
    } else if (Array.isArray(current) && Array.isArray(value)) {
      target[key] = allIndexed(current) && allIndexed(value) ? mergeByIndex(current, value) : current.concat(copy(value));
    } else if (isObject(current) && isObject(value)) {
      combineDelta(current, value);
    }
  }
  return target;
}

function mergeByIndex(target, source) {
  const byIndex = new Map(target.filter((item) => item !== null).map((item) => [item.index, item]));
  for (const item of source) {
    if (item === null) continue;
    const existing = byIndex.get(item.index);
    if (existing) combineDelta(existing, item);
    else byIndex.set(item.index, copy(item));
  }
  const length = Math.max(target.length, ...[...byIndex.keys()].map((i) => i + 1));
  const result = new Array(length).fill(null);
  for (const [index, item] of byIndex) result[index] = item;
  return result;
}

export function filterMessageFields(message, keep = [], drop = []) {
  return Object.fromEntries(
    Object.entries(message).filter(([key]) => (keep.length === 0 || keep.includes(key)) && !drop.includes(key)),
  );
}

// --- Provider results: one completion, an (async) iterable of chunks, or a promise of either -------

async function* iterateResult(result, signal) {
  const value = await result;
  if (value && (typeof value[Symbol.asyncIterator] === "function" || typeof value[Symbol.iterator] === "function")
      && typeof value !== "string") {
    for await (const chunk of value) {
      if (signal.aborted) throw abortError();
      yield chunk;
    }
  } else {
    yield value;
  }
}

// --- Default plugins ------------------------------------------------------------------------------

export const fallbackRolePlugin = (fallbackRole = "assistant") => ({
  name: "fallbackRole",
  onBeforeRequest({ requestBody }) {
    requestBody.messages = requestBody.messages.map((m) => ("role" in m ? { ...m, role: m.role || fallbackRole } : m));
  },
});

export const thinkingPlugin = () => ({
  name: "thinking",
  onCompletionChunk({ choice, currentMessage }) {
    const reasoning = choice?.message?.reasoning_content ?? choice?.delta?.reasoning_content;
    currentMessage.state = isObject(currentMessage.state) ? currentMessage.state : {};
    currentMessage.state.thinking = typeof reasoning === "string";
  },
  onTurnEnd({ currentTurn }) {
    const last = currentTurn[currentTurn.length - 1];
    if (isObject(last?.state)) delete last.state.thinking;
  },
});

export const lengthPlugin = (continueContent = "Please continue with your previous answer.") => ({
  name: "length",
  onAfterRequest({ lastChoice, appendMessage, requestNext }) {
    if (lastChoice?.finish_reason === "length") {
      appendMessage({ role: "user", content: continueContent });
      requestNext();
    }
  },
});

// --- Tool plugin ------------------------------------------------------------------------------------

export function toolPlugin({ getTools, callTool, maxToolRounds = 10,
  failedContent = "Tool call failed.", cancelledContent = "Tool call cancelled." }) {
  const toolState = (message, id) => {
    message.state = isObject(message.state) ? message.state : {};
    message.state.toolCall ??= {};
    return (message.state.toolCall[id] ??= {});
  };
  const toolCalls = (message) => (message?.tool_calls || []).filter((c) => isObject(c) && c.id);
  const addPiece = (toolMessage, piece) => {
    if (typeof piece === "string") toolMessage.content += piece;
    else if (isObject(piece)) {
      let current;
      try {
        current = JSON.parse(toolMessage.content || "{}");
      } catch {
        current = {};
      }
      toolMessage.content = JSON.stringify(combineDelta(isObject(current) ? current : {}, piece));
    } else if (piece !== null && piece !== undefined) toolMessage.content += JSON.stringify(piece);
    toolMessage.metadata.updatedAt = now();
  };
  return {
    name: "tool",
    async onBeforeRequest({ requestBody }) {
      const tools = getTools ? await getTools() : null;
      if (tools?.length) requestBody.tools = [...tools];
    },
    onCompletionChunk({ currentMessage }) {
      for (const call of toolCalls(currentMessage)) toolState(currentMessage, call.id);
    },
    async onAfterRequest(context) {
      const { currentMessage: message, lastChoice, abortSignal } = context;
      const calls = toolCalls(message);
      if (lastChoice?.finish_reason !== "tool_calls" || calls.length === 0) return;
      context.setRequestState("processing", "calling-tools");
      const toolMessages = calls.map((call) => {
        const toolMessage = { role: "tool", tool_call_id: call.id, content: "", metadata: { createdAt: now(), updatedAt: now() } };
        context.appendMessage(toolMessage);
        return toolMessage;
      });
      const rounds = context.customContext.toolRounds || 0;
      if (rounds >= maxToolRounds) {
        calls.forEach((call, i) => {
          toolMessages[i].content = `Tool call skipped: the limit of ${maxToolRounds} tool rounds for one turn was reached.`;
          toolState(message, call.id).status = "cancelled";
        });
        return;
      }
      context.customContext.toolRounds = rounds + 1;
      for (const [i, call] of calls.entries()) {
        const state = toolState(message, call.id);
        state.status = "running";
        context.changed();
        try {
          if (abortSignal.aborted) throw abortError();
          for await (const piece of iterateResult(callTool(call, abortSignal), abortSignal)) {
            if (abortSignal.aborted) throw abortError();
            addPiece(toolMessages[i], piece);
          }
          state.status = "success";
        } catch (error) {
          if (abortSignal.aborted || isAbort(error)) {
            state.status = "cancelled";
            toolMessages[i].content ||= cancelledContent;
            context.changed();
            return;
          }
          console.warn("tool call failed", call.function?.name, error);
          state.status = "failed";
          toolMessages[i].content ||= failedContent;
        }
        context.changed();
      }
      if (!abortSignal.aborted) context.requestNext();
    },
  };
}

// --- The engine --------------------------------------------------------------------------------------

export class MessageEngine {
  constructor({ responseProvider, messages = [], plugins = [], requestMessageFields = [],
    requestMessageFieldsExclude = DEFAULT_EXCLUDED_FIELDS, onChange = () => {} }) {
    this.responseProvider = responseProvider;
    this.messages = messages;
    this.requestMessageFields = requestMessageFields;
    this.requestMessageFieldsExclude = requestMessageFieldsExclude;
    this.onChange = onChange;
    // A later plugin with the same name replaces an earlier one.
    this.plugins = [];
    for (const plugin of [fallbackRolePlugin(), thinkingPlugin(), lengthPlugin(), ...plugins]) {
      if (plugin.name) this.plugins = this.plugins.filter((p) => p.name !== plugin.name);
      this.plugins.push(plugin);
    }
    this.requestState = "idle";
    this.processingState = null;
    this.currentTurn = [];
    this.customContext = {};
    this.abortController = null;
    this.idle = Promise.resolve();
  }

  get isProcessing() {
    return this.requestState === "processing";
  }

  setRequestState(state, processingState = null) {
    this.requestState = state;
    this.processingState = state === "processing" ? processingState || "requesting" : null;
    this.onChange(this);
  }

  appendMessages(messages) {
    this.messages.push(...messages);
    this.currentTurn.push(...messages);
    this.onChange(this);
  }

  sanitize(messages) {
    return messages.map((m) => filterMessageFields(m, this.requestMessageFields, this.requestMessageFieldsExclude));
  }

  // Appends the text as a user message and runs a turn; resolves with the final requestState, or
  // with null when refused (blank text, or a turn already running).
  async sendMessage(text) {
    if (typeof text !== "string" || !text.trim() || this.isProcessing) return null;
    const t = now();
    return this.startTurn([{ role: "user", content: text.trim(), metadata: { createdAt: t, updatedAt: t } }]);
  }

  // Aborts the running turn; it ends as `aborted`. Resolves once processing has stopped.
  async abortRequest() {
    this.abortController?.abort();
    await this.idle;
  }

  async startTurn(messages) {
    if (this.isProcessing) return null;
    const controller = (this.abortController = new AbortController());
    let release;
    this.idle = new Promise((resolve) => (release = resolve));
    const signal = controller.signal;
    try {
      try {
        this.setRequestState("processing", "requesting");
        this.customContext = {};
        this.appendMessages(messages);
        await this.runToTurnEnd(signal);
      } catch (error) {
        this.setRequestState("error");
        if (!(await this.callHooksLogged("onError", signal, { error }))) throw error;
      }
    } finally {
      await this.callHooksLogged("onFinally", signal);
      const last = this.currentTurn[this.currentTurn.length - 1];
      if (last) delete last.loading;
      this.currentTurn = [];
      this.abortController = null;
      this.onChange(this);
      release();
    }
    return this.requestState;
  }

  async runToTurnEnd(signal) {
    try {
      await this.callHooks("onTurnStart", signal);
      while (await this.executeRequest(signal));
      this.setRequestState("completed");
    } catch (error) {
      if (!(signal.aborted || isAbort(error))) throw error;
      this.setRequestState("aborted");
    }
    await this.callHooks("onTurnEnd", signal);
  }

  async executeRequest(signal) {
    this.setRequestState("processing", "requesting");
    const requestBody = this.makeRequestBody();
    await this.callHooks("onBeforeRequest", signal, { requestBody });
    if (signal.aborted) throw abortError();
    // Appended only now, so the empty placeholder never goes out in its own request.
    const message = { role: "", content: "", loading: true };
    this.appendMessages([message]);
    let lastChoice = null;
    for await (const chunk of iterateResult(this.responseProvider(requestBody, signal), signal)) {
      if (signal.aborted) throw abortError();
      if (!isObject(chunk)) throw new TypeError("The response provider gave something that is not a chunk object.");
      this.setRequestState("processing", "completing");
      delete message.loading;
      updateMetadata(message, chunk);
      const choice = (chunk.choices || []).find((c) => isObject(c) && c.index === 0) || null;
      if (choice) {
        lastChoice = choice;
        const delta = choice.message ?? choice.delta;
        if (isObject(delta)) combineDelta(message, delta); // a chunk with neither is skipped
      }
      await this.callHooks("onCompletionChunk", signal, { chunk, choice, currentMessage: message });
      this.onChange(this);
    }
    if (signal.aborted) throw abortError();
    let next = false;
    const context = this.context(signal, { currentMessage: message, lastChoice, requestNext: () => (next = true) });
    // Every hook runs (like Promise.all); the first failure is raised afterwards.
    const outcomes = await Promise.allSettled(this.hooks("onAfterRequest", context).map((hook) => hook(context)));
    const failed = outcomes.find((o) => o.status === "rejected");
    if (failed) throw failed.reason;
    if (signal.aborted) throw abortError();
    return next;
  }

  makeRequestBody() {
    const engine = this;
    let messages;
    const body = {};
    Object.defineProperty(body, "messages", {
      enumerable: true,
      get: () => messages,
      set: (value) => {
        messages = engine.sanitize(value);
      },
    });
    body.messages = this.messages;
    return body;
  }

  context(signal, fields = {}) {
    return {
      engine: this,
      messages: this.messages,
      currentTurn: this.currentTurn,
      customContext: this.customContext,
      abortSignal: signal,
      setRequestState: (s, p) => this.setRequestState(s, p),
      appendMessage: (m) => this.appendMessages([m]),
      changed: () => this.onChange(this),
      ...fields,
    };
  }

  hooks(name, context) {
    return this.plugins
      .filter((p) => typeof p[name] === "function")
      .filter((p) => !(typeof p.disabled === "function" ? p.disabled(context) : p.disabled))
      .map((p) => p[name].bind(p));
  }

  async callHooks(name, signal, fields) {
    const context = this.context(signal, fields);
    for (const hook of this.hooks(name, context)) {
      await hook(context);
      if (!CLOSING_HOOKS.has(name) && signal.aborted) throw abortError();
    }
  }

  async callHooksLogged(name, signal, fields) {
    const context = this.context(signal, fields);
    const hooks = this.hooks(name, context);
    for (const hook of hooks) {
      try {
        await hook(context);
      } catch (error) {
        console.error(`${name} hook failed`, error);
      }
    }
    return hooks.length;
  }
}

function updateMetadata(message, chunk) {
  message.metadata = isObject(message.metadata) ? message.metadata : {};
  if (chunk.created !== undefined && chunk.created !== null) message.metadata.createdAt = chunk.created;
  message.metadata.updatedAt = now();
  for (const [key, value] of Object.entries(chunk)) {
    if (key !== "created" && key !== "choices") message.metadata[key] = value;
  }
}

// The provider for this server's gateway: POST the body, read OpenAI-style SSE chunks. An HTTP error
// status, or an `error` object in the stream, is an error (0.4 took it for an empty reply).
export function chatCompletionsProvider({ url = "/api/chat/completions", headers = () => ({}), readSSE }) {
  return async function* provide(requestBody, signal) {
    const body = { ...requestBody, messages: requestBody.messages, stream: true };
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream", ...headers() },
      body: JSON.stringify(body),
      signal,
      credentials: "same-origin",
    });
    if (!response.ok) {
      let message = `The server answered HTTP ${response.status}.`;
      try {
        message = (await response.json())?.error?.message || message;
      } catch {
        /* not JSON */
      }
      throw Object.assign(new Error(message), { status: response.status });
    }
    for await (const chunk of readSSE(response, signal)) {
      if (chunk?.error) throw Object.assign(new Error(chunk.error.message || "The model failed."), { code: chunk.error.code });
      yield chunk;
    }
  };
}
