// Wires the page together: two chat panels (v1 threads, chat completions) with the same composer,
// status line and keyboard (Enter sends, Shift+Enter new line, Escape stops), the thread sidebar
// (open, rename, delete; the open thread is in the URL), the demo table and the drawers used at
// phone width.

import { CompletionsChat } from "./completions.js";
import { chatPanel } from "./composer.js";
import { threadFromUrl, urlForThread } from "./route.js";
import { drawThreadList } from "./sidebar.js";
import { ThreadsChat } from "./threads.js";
import { askPerson, mountDemoTable, storedValues } from "./tools.js";

const $ = (selector, root = document) => root.querySelector(selector);
const NOT_YOURS = "That thread is not one of yours: it was deleted, or it belongs to another user (a thread made " +
  "with an API key, by the CLI or an app, belongs to the userKey it named, not to your login).";

function main() {
  mountDemoTable($("#demo-table tbody"));
  drawStorage();
  document.addEventListener("tambo:storage", drawStorage);

  let threads;
  const threadPanel = chatPanel($("#panel-threads"), {
    controller: () => threads,
    emptyText: "Start a conversation. Try: read_selected_row, a DataCard, a BarChart, !slow or !fail.",
    onRetry: () => threads.retry(),
    onComponentState: (block, state) => threads.updateComponentState(block, state),
    onSuggestion: true,
    onNotice: (text) => {
      threads.view.notice = text;
      threads.changed();
    },
  });
  threads = new ThreadsChat({
    onChange: (view, busy) => {
      threadPanel.draw(view, busy);
      // One thread at a time: switching waits until the run (and its bookkeeping) has ended.
      $("#new-thread").disabled = busy;
      for (const item of document.querySelectorAll(".thread-item, .thread-action")) item.disabled = busy;
    },
    onThreadsChange: (list, currentId) => {
      showThreadList(list, currentId);
      followInUrl(currentId);
    },
  });

  let completions;
  const completionPanel = chatPanel($("#panel-completions"), {
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

  let redrawAfterEdit = false;
  function showThreadList(list, currentId) {
    // Redrawing would take the name being typed away: wait until it is saved or dropped.
    if (document.querySelector(".thread-rename-input")) {
      redrawAfterEdit = true;
      return;
    }
    redrawAfterEdit = false;
    drawThreadList($("#thread-list"), list, currentId, {
      onEditEnd: () => {
        if (redrawAfterEdit) showThreadList(threads.threads, threads.thread?.id ?? null);
      },
      busy: Boolean(threads?.busy),
      onOpen: async (id) => {
        if (threads.busy) return;
        await openFromSidebar(id);
        closeDrawers();
      },
      onRename: (id, name) => threads.renameThread(id, name).catch((error) => threadProblem("rename", error)),
      onDelete: async (id) => {
        const thread = threads.threads.find((t) => t.id === id);
        const sure = await askPerson(`Delete “${thread?.name || "Untitled thread"}” and all its messages?`, null,
          { title: "Delete thread", yes: "Delete", no: "Cancel", danger: true });
        if (sure) await threads.deleteThread(id).catch((error) => threadProblem("delete", error));
      },
    });
  }
  function threadProblem(action, error) {
    threads.view.notice = `Could not ${action} the thread: ${error.message}`;
    threads.changed();
  }
  async function openFromSidebar(id, { resume = false } = {}) {
    try {
      // After a reload during a run, the thread opens with that run still streaming in.
      if (!(resume && (await threads.resumeLiveRun(id)))) await threads.openThread(id);
    } catch (error) {
      // A bookmarked thread that was deleted, or that belongs to another user, answers 404: the server
      // does not tell which (a thread's existence is not shown to other users), so the notice names both.
      threads.newThread();
      threads.view.notice = error.status === 404 ? NOT_YOURS : `Could not open the thread: ${error.message}`;
      threads.changed();
    }
  }

  // The URL follows the open thread. A thread that just got its id replaces the "new thread" entry,
  // so Back does not lead to an empty page; opening another thread adds an entry.
  let navigating = false; // a Back/Forward waiting for the turn to end: the URL is the person's
  function followInUrl(currentId) {
    if (navigating) return;
    const shown = threadFromUrl(window.location.href);
    if (shown === currentId) return;
    const url = urlForThread(window.location.href, currentId);
    if (shown === null) window.history.replaceState({ thread: currentId }, "", url);
    else window.history.pushState({ thread: currentId }, "", url);
  }
  window.addEventListener("popstate", async () => {
    // One thread at a time: Back during a turn takes effect when the turn has ended.
    navigating = true;
    await threads.whenIdle();
    navigating = false;
    const wanted = threadFromUrl(window.location.href);
    if (wanted === (threads.thread?.id ?? null)) return;
    if (wanted) await openFromSidebar(wanted);
    else threads.newThread();
  });

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
  // "2 min ago" grows older: redraw the list now and then, unless a name is being edited in it.
  setInterval(() => showThreadList(threads.threads, threads.thread?.id ?? null), 60_000);
  const bookmarked = threadFromUrl(window.location.href);
  const opened = bookmarked ? openFromSidebar(bookmarked, { resume: true }) : Promise.resolve();
  window.tamboPage = { threads, completions }; // for debugging in the console
  opened.finally(() => {
    document.body.dataset.ready = "true";
  });
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
