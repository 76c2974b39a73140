// Markdown for the assistant's text: marked parses it, DOMPurify sanitizes the result, highlight.js
// colours fenced code. The three are vendored browser builds (static/vendor/, loaded by plain
// <script> tags before the modules), so they are globals here.
//
// Model output is untrusted. Raw HTML in it is shown as text (the `html` renderer escapes it), and
// the rendered HTML still goes through DOMPurify, which drops `javascript:` links, event handlers and
// anything else active. DOMPurify hands back a DOM fragment, so no HTML string of ours is ever
// assigned to innerHTML.

import { stableEnd } from "./stable.js";

const { marked, DOMPurify, hljs } = globalThis;

const escapeHtml = (text) =>
  String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

const parser = new marked.Marked();
parser.use({
  gfm: true,
  breaks: true, // a model's single newlines are meant as line breaks
  renderer: {
    html: ({ text }) => escapeHtml(text),
  },
});

const SAFE_LINK = /^(https?:|mailto:|#|\/(?!\/))/i;

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName !== "A") return;
  const href = node.getAttribute("href") || "";
  // DOMPurify already drops script URLs; this also drops data:, protocol-relative and other schemes.
  if (!SAFE_LINK.test(href.trim())) {
    node.removeAttribute("href");
    return;
  }
  node.setAttribute("target", "_blank");
  node.setAttribute("rel", "noopener noreferrer");
});

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "img", "iframe", "svg", "math"],
  FORBID_ATTR: ["style", "id", "name"],
};

// Markdown text → a sanitized DocumentFragment.
export function markdownFragment(text) {
  const html = parser.parse(String(text ?? ""), { async: false });
  return DOMPurify.sanitize(html, PURIFY);
}

// Draws `text` into `container`. Code blocks get a language label and a Copy button; they are
// highlighted only when `highlight` is true, because colouring every frame of a long streamed answer
// would cost more than it shows (the final draw, after the stream, colours them).
//
// A code block already on screen whose code and language are unchanged stays the same element, only
// coloured in place: the final draw comes after the turn settles, and a fresh block would put a new
// Copy button under a click made on the old one as the answer ended.
export function renderMarkdown(container, text, { highlight = true } = {}) {
  const shown = [...container.querySelectorAll(".code-block")];
  container._live = null;
  const fragment = decorated(text, false);
  [...fragment.querySelectorAll(".code-block")].forEach((block, index) => {
    const old = shown[index];
    if (old && sameCode(old, block)) block.replaceWith(old);
  });
  container.replaceChildren(fragment);
  if (highlight) for (const code of container.querySelectorAll(".code-block code")) colour(code);
}

function sameCode(a, b) {
  const label = (block) => block.querySelector(".code-lang")?.textContent;
  const code = (block) => block.querySelector("code")?.textContent;
  return label(a) === label(b) && code(a) === code(b);
}

// While an answer streams its text only grows, and Markdown before a blank line outside a code fence
// no longer changes. So that part is drawn once, and each frame redraws only what follows it: a long
// answer costs the same per frame as a short one. Constructs that span blank lines (loose lists,
// reference links) may look different until the final renderMarkdown() draws the whole text.
export function renderMarkdownLive(container, text) {
  let live = container._live;
  if (!live || !text.startsWith(live.stable)) {
    container.replaceChildren();
    live = container._live = { stable: "", tail: [] };
  }
  const end = stableEnd(text);
  for (const node of live.tail) node.remove();
  if (end > live.stable.length) {
    container.append(decorated(text.slice(live.stable.length, end), false));
    live.stable = text.slice(0, end);
  }
  const tail = decorated(text.slice(live.stable.length), false);
  live.tail = [...tail.childNodes];
  container.append(tail);
}

function decorated(text, highlight) {
  const fragment = markdownFragment(text);
  for (const pre of fragment.querySelectorAll("pre")) {
    const code = pre.querySelector("code");
    if (code) decorateCode(pre, code, highlight);
  }
  return fragment;
}

function languageOf(code) {
  return [...code.classList].find((c) => c.startsWith("language-"))?.slice("language-".length) || "";
}

// Colours a code element once (highlight.js marks it `data-highlighted`).
function colour(code) {
  if (!hljs || code.dataset.highlighted) return;
  const language = languageOf(code);
  if (language && !hljs.getLanguage(language)) code.classList.remove(`language-${language}`);
  hljs.highlightElement(code);
}

function decorateCode(pre, code, highlight) {
  const language = languageOf(code);
  if (highlight) colour(code);
  const wrap = document.createElement("div");
  wrap.className = "code-block";
  const bar = document.createElement("div");
  bar.className = "code-bar";
  const label = document.createElement("span");
  label.className = "code-lang";
  label.textContent = language || "code";
  const copy = document.createElement("button");
  copy.type = "button";
  copy.className = "code-copy";
  copy.textContent = "Copy";
  copy.setAttribute("aria-label", `Copy ${language || "code"} to the clipboard`);
  copy.addEventListener("click", () => copyText(code.textContent, copy));
  bar.append(label, copy);
  pre.replaceWith(wrap);
  wrap.append(bar, pre);
}

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Copy failed";
  }
  setTimeout(() => {
    button.textContent = "Copy";
  }, 1500);
}
