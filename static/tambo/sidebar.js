// The thread list: open, rename (inline, Enter saves, Escape cancels) and delete (after a
// confirmation whose default is Cancel). Names come from the server; times are relative.

import { relativeTime } from "./time.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function iconButton(label, symbol, className) {
  const button = el("button", `thread-action ${className}`, symbol);
  button.type = "button";
  button.setAttribute("aria-label", label);
  button.title = label;
  return button;
}

// handlers: { busy, onOpen(id), onRename(id, name), onDelete(id), onEditEnd() }
export function drawThreadList(ul, list, currentId, handlers) {
  ul.replaceChildren();
  if (currentId && !list.some((t) => t.id === currentId)) {
    ul.append(el("li", "thread-item-new", "New thread…"));
  }
  for (const thread of list) ul.append(threadRow(thread, thread.id === currentId, handlers));
}

function threadRow(thread, current, handlers) {
  const li = el("li", "thread-row");
  li.dataset.threadRow = thread.id;
  if (current) li.setAttribute("aria-current", "true");
  const open = el("button", "thread-item");
  open.type = "button";
  open.dataset.threadId = thread.id;
  if (current) open.setAttribute("aria-current", "true");
  open.disabled = Boolean(handlers.busy);
  const when = thread.updatedAt || thread.createdAt;
  const meta = el("span", "thread-meta", relativeTime(when));
  if (when) meta.title = new Date(when).toLocaleString();
  open.append(el("span", "thread-name", thread.name || "Untitled thread"), meta);
  open.addEventListener("click", () => handlers.onOpen(thread.id));

  const actions = el("span", "thread-actions");
  const rename = iconButton(`Rename “${thread.name || "Untitled thread"}”`, "✎", "thread-rename");
  const remove = iconButton(`Delete “${thread.name || "Untitled thread"}”`, "×", "thread-delete");
  rename.disabled = remove.disabled = Boolean(handlers.busy);
  rename.addEventListener("click", () => startRename(li, open, thread, handlers));
  remove.addEventListener("click", () => handlers.onDelete(thread.id));
  actions.append(rename, remove);
  li.append(open, actions);
  return li;
}

function startRename(li, open, thread, handlers) {
  const input = el("input", "thread-rename-input");
  input.value = thread.name || "";
  input.maxLength = 200;
  input.setAttribute("aria-label", "Thread name");
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    const name = input.value.trim();
    input.replaceWith(open);
    li.querySelector(".thread-actions").hidden = false;
    if (save && name && name !== thread.name) await handlers.onRename(thread.id, name);
    handlers.onEditEnd?.();
    const again = document.querySelector(`[data-thread-id="${CSS.escape(thread.id)}"]`);
    (again || open).focus();
  };
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      finish(true);
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      finish(false);
    }
  });
  input.addEventListener("blur", () => finish(true));
  li.querySelector(".thread-actions").hidden = true;
  open.replaceWith(input);
  input.focus();
  input.select();
}
