// Browser-side tools: the model calls them, the page runs them, and the result goes back to the
// server as a continuation (v1 runs) or a `tool` message (chat completions).
//
// Each tool is { name, description, inputSchema, run(args, { signal }) } and returns a string.

import { abortError } from "./sse.js";

// --- The demo table whose selected row `read_selected_row` reads ---------------------------------

export const DEMO_ROWS = [
  { id: "ord-1001", customer: "Grace Hopper", item: "Compiler manual", amount: 120 },
  { id: "ord-1002", customer: "Ada Lovelace", item: "Analytical engine", amount: 1843 },
  { id: "ord-1003", customer: "Alan Turing", item: "Bombe rotor set", amount: 940 },
  { id: "ord-1004", customer: "Katherine Johnson", item: "Orbit tables", amount: 310 },
];

let selectedRowId = null;

export function selectedRow() {
  return DEMO_ROWS.find((row) => row.id === selectedRowId) || null;
}

export function mountDemoTable(tbody) {
  for (const row of DEMO_ROWS) {
    const tr = document.createElement("tr");
    tr.dataset.rowId = row.id;
    tr.tabIndex = 0;
    tr.setAttribute("aria-selected", "false");
    for (const key of ["id", "customer", "item", "amount"]) {
      const td = document.createElement("td");
      td.textContent = String(row[key]);
      tr.append(td);
    }
    const select = () => {
      selectedRowId = row.id;
      for (const other of tbody.querySelectorAll("tr")) {
        other.setAttribute("aria-selected", String(other === tr));
      }
    };
    tr.addEventListener("click", select);
    tr.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        select();
      }
    });
    tbody.append(tr);
  }
}

// --- localStorage ---------------------------------------------------------------------------------

const STORAGE_PREFIX = "tambo-demo:";

// --- Confirmation: an in-page dialog, answered by the person ---------------------------------------

// Also used by the page itself (deleting a thread), with its own title.
export function askPerson(question, signal, { title = "The assistant asks:", yes = "Yes", no = "No", danger = false } = {}) {
  const dialog = document.getElementById("confirm-dialog");
  dialog.querySelector(".dialog-title").textContent = title;
  const yesButton = dialog.querySelector("[value=yes]");
  yesButton.textContent = yes;
  yesButton.className = danger ? "danger" : "primary";
  dialog.querySelector("[value=no]").textContent = no;
  dialog.querySelector("[data-role=question]").textContent = question;
  return new Promise((resolve, reject) => {
    const done = (answer) => {
      dialog.removeEventListener("close", onClose);
      signal?.removeEventListener("abort", onAbort);
      resolve(answer);
    };
    const onClose = () => done(dialog.returnValue === "yes");
    const onAbort = () => {
      dialog.removeEventListener("close", onClose);
      if (dialog.open) dialog.close("no");
      reject(abortError());
    };
    dialog.returnValue = "";
    dialog.addEventListener("close", onClose);
    signal?.addEventListener("abort", onAbort, { once: true });
    dialog.showModal();
    // The safe answer has the focus: Enter or a stray key press must not confirm a deletion.
    dialog.querySelector("[value=no]").focus();
  });
}

// --- The registry ------------------------------------------------------------------------------------

export const browserTools = [
  {
    name: "read_selected_row",
    description:
      "Reads the row the person selected in the demo orders table on the page. Returns the row as JSON, " +
      "or says that no row is selected.",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
    run() {
      const row = selectedRow();
      return row ? JSON.stringify(row) : "No row is selected in the demo table.";
    },
  },
  {
    name: "local_storage",
    description:
      "Reads (action get) or writes (action set) a string value in this browser's localStorage. " +
      'Example: {"action": "set", "key": "color", "value": "blue"}.',
    inputSchema: {
      type: "object",
      properties: {
        action: { type: "string", enum: ["get", "set"], default: "get" },
        key: { type: "string", description: "The name of the value.", examples: ["color"] },
        value: { type: "string", description: "The value to write (set only)." },
      },
      required: ["key"],
    },
    run(args) {
      const key = typeof args.key === "string" ? args.key.trim() : "";
      if (!key) throw new Error("local_storage needs a key.");
      const action = args.action === "set" ? "set" : "get";
      if (action === "set") {
        const value = args.value === undefined ? "" : String(args.value);
        window.localStorage.setItem(STORAGE_PREFIX + key, value);
        document.dispatchEvent(new CustomEvent("tambo:storage"));
        return JSON.stringify({ key, value, stored: true });
      }
      const value = window.localStorage.getItem(STORAGE_PREFIX + key);
      return JSON.stringify({ key, value });
    },
  },
  {
    name: "ask_confirmation",
    description: "Asks the person a yes/no question on the page and returns their answer.",
    inputSchema: {
      type: "object",
      properties: { question: { type: "string", default: "Shall I go ahead?" } },
    },
    async run(args, { signal } = {}) {
      const question = typeof args.question === "string" && args.question.trim() ? args.question : "Shall I go ahead?";
      const yes = await askPerson(question, signal);
      return JSON.stringify({ question, confirmed: yes });
    },
  },
];

export function storedValues() {
  const values = [];
  for (let i = 0; i < window.localStorage.length; i += 1) {
    const key = window.localStorage.key(i);
    if (key?.startsWith(STORAGE_PREFIX)) values.push([key.slice(STORAGE_PREFIX.length), window.localStorage.getItem(key)]);
  }
  return values.sort(([a], [b]) => a.localeCompare(b));
}

export function toolSpecs() {
  return browserTools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema }));
}

export function openAiTools() {
  return browserTools.map(({ name, description, inputSchema }) => ({
    type: "function",
    function: { name, description, parameters: inputSchema },
  }));
}

// Runs one call; returns { text, isError }. Never throws except on abort.
export async function runTool(name, argumentsText, signal) {
  const tool = browserTools.find((t) => t.name === name);
  if (!tool) return { text: `This page has no tool named ${name}.`, isError: true };
  let args;
  try {
    args = argumentsText ? JSON.parse(argumentsText) : {};
  } catch {
    return { text: "The tool call's arguments are not valid JSON.", isError: true };
  }
  if (args === null || typeof args !== "object" || Array.isArray(args)) args = {};
  try {
    const text = await tool.run(args, { signal });
    if (signal?.aborted) throw abortError();
    return { text: String(text), isError: false };
  } catch (error) {
    if (error?.name === "AbortError") throw error;
    return { text: `Tool call failed: ${error?.message || error}`, isError: true };
  }
}
