// Draws a view (see reducer.js) into a message list, reusing the DOM nodes of unchanged parts so a
// streamed message only updates its text. The person's text goes in through textContent; the
// assistant's text is Markdown, drawn by markdown.js (sanitized, raw HTML shown as text).

import { rendererFor } from "./components.js";
import { renderMarkdown, renderMarkdownLive } from "./markdown.js";

const STATUS_LABELS = {
  idle: "idle",
  requesting: "requesting…",
  streaming: "streaming…",
  "calling-tools": "calling tools…",
  completed: "completed",
  cancelled: "cancelled",
  error: "error",
};

export function statusLabel(status) {
  return STATUS_LABELS[status] || status;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function pretty(text) {
  if (text === null || text === undefined) return "";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return String(text);
  }
}

// handlers: { onRetry(), onComponentState(block, newState), busy, emptyText }
export function renderView(list, view, handlers = {}) {
  const wanted = [];
  for (const message of view.messages) {
    let node = list.querySelector(`:scope > li[data-message-id="${CSS.escape(message.id)}"]`);
    if (!node) {
      node = el("li", `msg msg-${message.role}`);
      node.dataset.messageId = message.id;
      node.append(el("div", "msg-role", message.role === "user" ? "You" : "Assistant"), el("div", "msg-body"));
      node._blocks = new Map();
    }
    updateMessage(node, message, handlers);
    wanted.push(node);
  }
  if (view.suggestions?.items?.length && !handlers.busy && handlers.onSuggestion) {
    wanted.push(suggestionsNode(list, view.suggestions, handlers));
  }
  if (handlers.busy && ["requesting", "streaming", "calling-tools"].includes(view.status)) {
    wanted.push(typingNode(list, view.status));
  }
  if (view.notice) {
    const notice = el("li", "msg msg-notice", view.notice);
    notice.setAttribute("role", "status");
    wanted.push(notice);
  }
  if (view.error) wanted.push(errorNode(view.error, handlers));
  if (view.messages.length === 0 && !view.error && !view.notice && handlers.emptyText) {
    wanted.push(el("li", "msg msg-empty", handlers.emptyText));
  }
  // Put the wanted nodes in order; anything else (old notices, errors) goes.
  const follow = follower(list);
  [...list.children].forEach((child) => {
    if (!wanted.includes(child)) child.remove();
  });
  wanted.forEach((node, index) => {
    if (list.children[index] !== node) list.insertBefore(node, list.children[index] || null);
    follow.watch(node);
  });
  follow.stick();
}

const NEAR_BOTTOM = 80; // px: this close to the bottom counts as being there

// Following the answer: while the person is at the bottom of the list it stays there, whatever makes
// it grow (a render that adds thousands of pixels at once, a component or image that lays out after
// it was drawn: a ResizeObserver sees those), and it lets go once they scroll up. Whether they are
// there is decided by their scrolling, not measured at each render: growth alone never moves
// scrollTop, so only a scroll that goes up can let go, and one that reaches the bottom takes it again.
function follower(list) {
  if (list._follow) return list._follow;
  const atBottom = () => list.scrollHeight - list.scrollTop - list.clientHeight < NEAR_BOTTOM;
  const state = {
    on: true,
    last: list.scrollTop,
    stick() {
      if (state.on) list.scrollTop = list.scrollHeight;
      state.last = list.scrollTop;
    },
    watch(node) {
      if (observer && !node._followed) {
        node._followed = true;
        observer.observe(node);
      }
    },
  };
  const observer = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(() => state.stick());
  list.addEventListener("scroll", () => {
    const top = list.scrollTop;
    if (top < state.last - 1 && !atBottom()) state.on = false;
    else if (atBottom()) state.on = true;
    state.last = top;
  }, { passive: true });
  list._follow = state;
  return state;
}

// The person sent something: show the bottom of the list and follow the answer again.
export function followAnswer(list) {
  const follow = follower(list);
  follow.on = true;
  follow.stick();
}

// "Assistant is typing" while a run is under way; kept as one node so its animation does not restart.
function typingNode(list, status) {
  let node = list.querySelector(":scope > li.msg-typing");
  if (!node) {
    node = el("li", "msg msg-typing");
    node.setAttribute("role", "status");
    const dots = el("span", "typing-dots");
    dots.setAttribute("aria-hidden", "true");
    dots.append(el("span"), el("span"), el("span"));
    node.append(dots, el("span", "typing-label"));
  }
  const label = status === "calling-tools" ? "Assistant is working…" : "Assistant is typing…";
  const text = node.querySelector(".typing-label");
  if (text.textContent !== label) text.textContent = label;
  return node;
}

// Chips under the last answer; one click sends that suggestion as the next message.
function suggestionsNode(list, suggestions, handlers) {
  const existing = list.querySelector(":scope > li.msg-suggestions");
  if (existing && existing._suggestions === suggestions) return existing;
  const node = el("li", "msg msg-suggestions");
  node._suggestions = suggestions;
  node.setAttribute("aria-label", "Suggestions");
  for (const suggestion of suggestions.items) {
    const chip = el("button", "suggestion-chip", suggestion.title);
    chip.type = "button";
    if (suggestion.description) chip.title = suggestion.description;
    chip.dataset.suggestionId = suggestion.id || "";
    chip.addEventListener("click", () => handlers.onSuggestion(suggestion.detailedSuggestion || suggestion.title));
    node.append(chip);
  }
  return node;
}

function errorNode(error, handlers) {
  const node = el("li", "msg msg-error");
  node.setAttribute("role", "alert");
  const text = el("span", "error-text", error.message);
  node.append(el("strong", null, "Error"), document.createTextNode(" "), text);
  if (error.code) node.append(el("code", "error-code", error.code));
  if (handlers.onRetry) {
    const retry = el("button", "retry", "Retry");
    retry.type = "button";
    retry.disabled = Boolean(handlers.busy);
    retry.addEventListener("click", () => handlers.onRetry());
    node.append(retry);
  }
  return node;
}

// The model's reasoning, folded above the answer (a <details>, so it opens from the keyboard too).
function updateReasoning(node, message) {
  if (!message.reasoning?.length) return;
  let fold = node.querySelector(":scope > details.msg-reasoning");
  if (!fold) {
    fold = el("details", "msg-reasoning");
    fold.append(el("summary", null, "Reasoning"), el("div", "reasoning-text"));
    node.insertBefore(fold, node.querySelector(":scope > .msg-body"));
  }
  const text = message.reasoning.join("\n\n");
  const shown = fold.querySelector(".reasoning-text");
  if (shown.textContent !== text) shown.textContent = text;
}

function updateMessage(node, message, handlers) {
  node.classList.toggle("is-cancelled", message.cancelled);
  updateReasoning(node, message);
  const body = node.querySelector(".msg-body");
  const keep = [];
  for (const block of message.blocks) {
    let part = node._blocks.get(block.key);
    if (!part) {
      part = createBlock(block);
      node._blocks.set(block.key, part);
    }
    updateBlock(part, block, handlers, message.role);
    keep.push(part);
  }
  if (message.unanswered && !node.querySelector(":scope > .msg-unanswered")) {
    node.append(el("div", "msg-unanswered", "No answer: that turn failed or was stopped."));
  }
  if (message.cancelled) {
    let badge = node.querySelector(":scope > .msg-badge");
    if (!badge) node.append(el("span", "msg-badge", "cancelled"));
  }
  [...body.children].forEach((child) => {
    if (!keep.includes(child)) child.remove();
  });
  keep.forEach((part, index) => {
    if (body.children[index] !== part) body.insertBefore(part, body.children[index] || null);
  });
}

function createBlock(block) {
  if (block.kind === "text") return el("div", "block-text");
  if (block.kind === "image") {
    const figure = el("figure", "block-image");
    figure.append(el("img"));
    return figure;
  }
  if (block.kind === "tool") {
    const card = el("details", "tool-card");
    const summary = el("summary");
    summary.append(el("span", "tool-icon", "⚙"), el("span", "tool-name"), el("span", "tool-status"));
    const args = el("pre", "tool-args");
    const result = el("pre", "tool-result");
    card.append(summary, el("div", "tool-label", "Arguments"), args, el("div", "tool-label", "Result"), result);
    return card;
  }
  if (block.kind === "component") {
    const card = el("section", "component-card");
    card.append(el("header", "component-head"), el("div", "component-body"), el("div", "component-note"));
    return card;
  }
  return el("div", "block-unknown");
}

function updateBlock(part, block, handlers, role) {
  if (block.kind === "image") {
    const img = part.querySelector("img");
    // A data URL is set once: assigning the same long string again would decode the image again.
    if (img.getAttribute("src") !== block.src) img.src = block.src;
    img.alt = block.name;
    return;
  }
  if (block.kind === "text") {
    if (role !== "assistant") {
      if (part.textContent !== block.text) part.textContent = block.text;
      return;
    }
    // While the run streams, only the growing end of the text is redrawn; once it is over, the whole
    // text is drawn again with its code coloured (see markdown.js).
    const highlight = !handlers.busy;
    if (part._markdown === block.text && part._highlighted === highlight) return;
    part.classList.add("markdown");
    if (highlight) renderMarkdown(part, block.text);
    else renderMarkdownLive(part, block.text);
    part._markdown = block.text;
    part._highlighted = highlight;
    return;
  }
  if (block.kind === "tool") {
    part.dataset.status = block.status;
    part.dataset.toolName = block.name;
    part.dataset.toolCallId = block.id;
    part.querySelector(".tool-name").textContent = block.name;
    part.querySelector(".tool-status").textContent = block.status;
    part.querySelector(".tool-args").textContent = pretty(block.args) || "{}";
    const result = block.result === null ? (block.status === "running" ? "running…" : "—") : pretty(block.result);
    part.querySelector(".tool-result").textContent = result;
    part.classList.toggle("is-error", Boolean(block.isError));
    return;
  }
  if (block.kind === "component") {
    const signature = JSON.stringify([block.props, block.state, block.streaming]);
    part.dataset.componentId = block.id;
    part.dataset.componentName = block.name;
    part.dataset.streaming = String(block.streaming);
    part.querySelector(":scope > .component-head").textContent = block.streaming ? `${block.name} · streaming props…` : block.name;
    // The card's own note, not a renderer's error message inside its body.
    part.querySelector(":scope > .component-note").textContent = block.note || "";
    if (part._signature === signature) return;
    part._signature = signature;
    const body = part.querySelector(":scope > .component-body");
    body.replaceChildren();
    const renderer = rendererFor(block.name);
    if (!renderer) {
      body.append(el("pre", "tool-args", JSON.stringify(block.props, null, 2)));
      return;
    }
    const setState = (state) => handlers.onComponentState?.(block, state);
    try {
      renderer.render(body, block.props || {}, block.state || {}, block.streaming ? () => {} : setState);
    } catch (error) {
      const problem = el("p", "component-error", `Could not draw ${block.name}: ${error.message}`);
      problem.setAttribute("role", "alert");
      body.append(problem);
    }
  }
}
