// Wires the page together: two chat panels (v1 threads, chat completions) with the same composer,
// status line and keyboard (Enter sends, Shift+Enter new line, Escape stops), the thread sidebar,
// the demo table and the drawers used at phone width.

import { CompletionsChat } from "./completions.js";
import { renderView, statusLabel } from "./render.js";
import { ThreadsChat } from "./threads.js";
import { mountDemoTable, storedValues } from "./tools.js";

const $ = (selector, root = document) => root.querySelector(selector);

function panel(root, { controller, emptyText, onRetry, onComponentState }) {
  const list = $("[data-role=messages]", root);
  const state = $("[data-role=state]", root);
  const input = $("[data-role=input]", root);
  const send = $("[data-role=send]", root);
  const stop = $("[data-role=stop]", root);
  const form = $("[data-role=composer]", root);

  const draw = (view, busy) => {
    renderView(list, view, { onRetry: view.error?.retryable === false ? null : onRetry, onComponentState, emptyText, busy });
    state.dataset.state = view.status;
    state.textContent = statusLabel(view.status);
    root.dataset.busy = String(busy);
    send.disabled = busy;
    stop.hidden = !busy;
  };

  const submit = async () => {
    const text = input.value;
    if (!text.trim() || controller().busy) return;
    input.value = "";
    await controller().send(text);
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  stop.addEventListener("click", () => controller().stop());
  return { draw, input, root };
}

function main() {
  mountDemoTable($("#demo-table tbody"));
  drawStorage();
  document.addEventListener("tambo:storage", drawStorage);

  let threads;
  const threadPanel = panel($("#panel-threads"), {
    controller: () => threads,
    emptyText: "Start a conversation. Try: read_selected_row, a DataCard, a BarChart, !slow or !fail.",
    onRetry: () => threads.retry(),
    onComponentState: (block, state) => threads.updateComponentState(block, state),
  });
  threads = new ThreadsChat({
    onChange: (view, busy) => {
      threadPanel.draw(view, busy);
      // One thread at a time: switching waits until the run (and its bookkeeping) has ended.
      $("#new-thread").disabled = busy;
      for (const item of document.querySelectorAll(".thread-item")) item.disabled = busy;
    },
    onThreadsChange: drawThreadList,
  });

  let completions;
  const completionPanel = panel($("#panel-completions"), {
    controller: () => completions,
    emptyText: "This tab posts the whole conversation to /api/chat/completions each time. Try: read_selected_row.",
    onRetry: () => completions.retry(),
  });
  completions = new CompletionsChat({ onChange: (view, busy) => completionPanel.draw(view, busy) });

  const tabs = { threads: threadPanel, completions: completionPanel };
  let current = "threads";
  const controllers = { threads: () => threads, completions: () => completions };

  for (const tab of document.querySelectorAll("[role=tab]")) {
    tab.addEventListener("click", () => selectTab(tab.dataset.tab));
  }
  function selectTab(name) {
    current = name;
    for (const tab of document.querySelectorAll("[role=tab]")) {
      const on = tab.dataset.tab === name;
      tab.setAttribute("aria-selected", String(on));
      tab.tabIndex = on ? 0 : -1;
    }
    for (const [key, p] of Object.entries(tabs)) p.root.hidden = key !== name;
    document.body.dataset.tab = name;
    tabs[name].input.focus();
  }

  document.addEventListener("keydown", (event) => {
    // A dialog handles its own Escape (it answers "no").
    if (event.key === "Escape" && !document.querySelector("dialog[open]")) {
      if (controllers[current]().busy) {
        event.preventDefault();
        controllers[current]().stop();
      }
      closeDrawers();
    }
  });

  $("#new-thread").addEventListener("click", () => {
    threads.newThread();
    closeDrawers();
    threadPanel.input.focus();
  });
  $("#clear-completions").addEventListener("click", () => completions.clear());

  function drawThreadList(list, currentId) {
    const ul = $("#thread-list");
    ul.replaceChildren();
    for (const thread of list) {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "thread-item";
      button.dataset.threadId = thread.id;
      if (thread.id === currentId) button.setAttribute("aria-current", "true");
      button.disabled = Boolean(threads?.busy);
      const name = document.createElement("span");
      name.className = "thread-name";
      name.textContent = thread.name || "Untitled thread";
      const meta = document.createElement("span");
      meta.className = "thread-meta";
      meta.textContent = new Date(thread.updatedAt || thread.createdAt || Date.now()).toLocaleString();
      button.append(name, meta);
      button.addEventListener("click", async () => {
        if (threads.busy) return;
        await threads.openThread(thread.id);
        closeDrawers();
      });
      li.append(button);
      ul.append(li);
    }
    if (currentId && !list.some((t) => t.id === currentId)) {
      const li = document.createElement("li");
      li.className = "thread-item-new";
      li.textContent = "New thread…";
      ul.prepend(li);
    }
  }

  // Phone width: the sidebar and the demo panel are drawers.
  const drawers = { "#toggle-sidebar": "#sidebar", "#toggle-workbench": "#workbench" };
  for (const [button, target] of Object.entries(drawers)) {
    $(button).addEventListener("click", () => {
      const drawer = $(target);
      const open = !drawer.classList.contains("open");
      closeDrawers();
      drawer.classList.toggle("open", open);
      $(button).setAttribute("aria-expanded", String(open));
    });
  }
  function closeDrawers() {
    for (const [button, target] of Object.entries(drawers)) {
      $(target).classList.remove("open");
      $(button).setAttribute("aria-expanded", "false");
    }
  }

  threadPanel.draw(threads.view, false);
  completionPanel.draw(completions.view(), false);
  selectTab("threads");
  threads.loadThreads().catch((error) => console.error("Could not load threads", error));
  window.tamboPage = { threads, completions }; // for debugging in the console
  document.body.dataset.ready = "true";
}

function drawStorage() {
  const list = $("#storage-values");
  list.replaceChildren();
  const values = storedValues();
  if (!values.length) {
    const li = document.createElement("li");
    li.className = "muted";
    li.textContent = "Nothing stored yet.";
    list.append(li);
  }
  for (const [key, value] of values) {
    const li = document.createElement("li");
    const k = document.createElement("code");
    k.textContent = key;
    li.append(k, document.createTextNode(` = ${value}`));
    list.append(li);
  }
}

main();
