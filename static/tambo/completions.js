// The chat-completions tab: the message engine (engine.js) talking to /api/chat/completions, with
// the page's browser tools plugged in. The conversation lives in the page; each request sends it whole.

import { csrfToken } from "./api.js";
import { MessageEngine, chatCompletionsProvider, toolPlugin } from "./engine.js";
import { readSSE } from "./sse.js";
import { openAiTools, runTool } from "./tools.js";

// requestState/processingState → the status words both tabs show.
function statusOf(engine) {
  if (engine.requestState === "processing") {
    return { requesting: "requesting", completing: "streaming", "calling-tools": "calling-tools" }[engine.processingState];
  }
  return { idle: "idle", completed: "completed", aborted: "cancelled", error: "error" }[engine.requestState];
}

export class CompletionsChat {
  constructor({ onChange }) {
    this.onChange = onChange;
    this.lastError = null;
    this.lastText = null;
    this.engine = this.makeEngine();
  }

  makeEngine() {
    return new MessageEngine({
      responseProvider: chatCompletionsProvider({ headers: () => ({ "X-CSRFToken": csrfToken() }), readSSE }),
      plugins: [
        toolPlugin({
          getTools: () => openAiTools(),
          async callTool(call, signal) {
            const { text, isError } = await runTool(call.function?.name, call.function?.arguments, signal);
            if (isError) throw new Error(text);
            return text;
          },
        }),
        {
          name: "pageErrors",
          onTurnStart: () => {
            this.lastError = null;
          },
          onError: ({ error }) => {
            this.lastError = error;
          },
        },
      ],
      onChange: () => this.changed(),
    });
  }

  get busy() {
    return this.engine.isProcessing;
  }

  changed() {
    this.onChange(this.view(), this.busy);
  }

  async send(text) {
    if (!text.trim() || this.busy) return false;
    this.lastText = text;
    await this.engine.sendMessage(text);
    return true;
  }

  // Retry after an error: drop the failed attempt (the user message and the empty reply) and send again.
  async retry() {
    if (this.busy || !this.lastText) return;
    const messages = this.engine.messages;
    while (messages.length && messages[messages.length - 1].role !== "user") messages.pop();
    messages.pop();
    await this.send(this.lastText);
  }

  async stop() {
    await this.engine.abortRequest();
  }

  clear() {
    if (this.busy) return;
    this.lastError = null;
    this.engine = this.makeEngine();
    this.changed();
  }

  // The engine's messages as a view (reducer.js shapes): tool results are folded into their calls.
  view() {
    const engine = this.engine;
    const status = statusOf(engine);
    const view = { messages: [], status, error: null, notice: status === "cancelled" ? "Request aborted." : null };
    const results = new Map(engine.messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m.content]));
    engine.messages.forEach((message, index) => {
      if (message.role === "tool") return;
      const blocks = [];
      const text = typeof message.content === "string" ? message.content
        : (message.content || []).map((p) => p?.text || "").join("");
      if (text) blocks.push({ kind: "text", key: "t0", text });
      for (const call of (message.tool_calls || []).filter(Boolean)) {
        const status = message.state?.toolCall?.[call.id]?.status || (message.loading ? "streaming" : "called");
        blocks.push({
          kind: "tool", key: call.id || `i${call.index}`, id: call.id, name: call.function?.name || "…",
          args: call.function?.arguments || "", result: results.has(call.id) ? results.get(call.id) : null,
          isError: status === "failed", status: { success: "done" }[status] || status,
        });
      }
      if (!blocks.length && !message.loading) return;
      view.messages.push({ id: `m${index}`, role: message.role === "user" ? "user" : "assistant", blocks, cancelled: false });
    });
    if (status === "error") {
      view.error = { message: this.lastError?.message || "The request failed.", code: this.lastError?.code || null, retryable: true };
    }
    return view;
  }
}
