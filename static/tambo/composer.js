// A chat panel's composer and drawing: the text box grows with its text (up to a limit, then
// scrolls), Enter sends on a keyboard but inserts a newline on touch screens (where the Send button
// sends), focus returns to the box after a send, and the transcript is redrawn at most once per
// animation frame however fast events arrive.

import { attachmentTray } from "./attachments.js";
import { followAnswer, renderView, statusLabel } from "./render.js";
import { voiceButton } from "./voice.js";

const $ = (selector, root) => root.querySelector(selector);
const MAX_ROWS_HEIGHT = 0.4; // at most this share of the window's height

// Touch-first devices (no hover, coarse pointer): their on-screen keyboards have no Shift+Enter.
const touchFirst = () => window.matchMedia("(hover: none) and (pointer: coarse)").matches;

export function growToFit(textarea) {
  textarea.style.height = "auto";
  const limit = Math.max(120, Math.round(window.innerHeight * MAX_ROWS_HEIGHT));
  const wanted = textarea.scrollHeight + (textarea.offsetHeight - textarea.clientHeight);
  textarea.style.height = `${Math.min(wanted, limit)}px`;
  textarea.style.overflowY = wanted > limit ? "auto" : "hidden";
}

// `onNotice(text)`, when given, turns on the panel's images and microphone (the threads tab) and shows
// what went wrong with them.
export function chatPanel(root, { controller, emptyText, onRetry, onComponentState, onSuggestion, onNotice }) {
  const list = $("[data-role=messages]", root);
  const state = $("[data-role=state]", root);
  const input = $("[data-role=input]", root);
  const send = $("[data-role=send]", root);
  const stop = $("[data-role=stop]", root);
  const form = $("[data-role=composer]", root);
  if (touchFirst()) input.placeholder = "Message…";
  const tray = onNotice && root.querySelector("[data-role=attachments]") ? attachmentTray(root, { onNotice }) : null;
  if (onNotice) {
    voiceButton(root, {
      input, onNotice, onText: (text) => {
        input.value = input.value.trim() ? `${input.value.trimEnd()} ${text}` : text;
        growToFit(input);
      },
    });
  }

  let latest = null;
  let frame = 0;
  const flush = () => {
    frame = 0;
    const { view, busy } = latest;
    renderView(list, view, {
      onRetry: view.error?.retryable === false ? null : retry, onComponentState, emptyText, busy,
      onSuggestion: onSuggestion ? (text) => submit(text) : null,
    });
  };
  // The view is mutated in place by the controllers, so drawing its latest state once per frame
  // loses nothing; a 20,000-character answer then costs one Markdown render per frame, not per delta.
  // The status line and buttons are cheap and change at once, so no state goes unseen.
  // A refused send gives its text back to the box (threads.js `refusedSend`); its Retry sends it
  // again, so the box lets it go then.
  const retry = () => {
    const draft = latest?.view.error?.refused?.text;
    if (draft !== undefined && input.value === draft) {
      input.value = "";
      growToFit(input);
    }
    onRetry();
  };
  const draw = (view, busy) => {
    latest = { view, busy };
    if (view.draft) {
      if (!input.value.trim()) {
        input.value = view.draft;
        growToFit(input);
      }
      view.draft = null;
    }
    if (state.dataset.state !== view.status) {
      state.dataset.state = view.status;
      state.textContent = statusLabel(view.status);
    }
    root.dataset.busy = String(busy);
    send.disabled = busy;
    stop.hidden = !busy || controller().stoppable === false;
    if (!frame) frame = requestAnimationFrame(flush);
  };

  const submit = async (text = input.value) => {
    const fromBox = text === input.value;
    const withImages = fromBox && tray?.count > 0;
    if ((!text.trim() && !withImages) || controller().busy) return;
    const attachments = withImages ? tray.take() : [];
    if (fromBox) {
      input.value = "";
      growToFit(input);
    }
    input.focus();
    followAnswer(list);
    await controller().send(text, attachments);
    // Back to the box once the answer is in, unless the person went elsewhere meanwhile.
    if (!root.hidden && (document.activeElement === document.body || root.contains(document.activeElement))) {
      input.focus();
    }
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && !touchFirst()) {
      event.preventDefault();
      submit();
    }
  });
  input.addEventListener("input", () => growToFit(input));
  stop.addEventListener("click", () => controller().stop());
  return { draw, input, root };
}
