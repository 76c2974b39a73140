// Component renderers (generative UI). The model picks one and streams its props; the page draws
// it on every props change. Each renderer is
//   { name, description, propsSchema, render(container, props, state, setState) }
// and builds DOM nodes only (textContent, createElementNS): model output never becomes HTML.
// The schemas carry `default`s, which the offline model uses when the message names no props.

const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

const asText = (value) => (value === undefined || value === null ? "" : typeof value === "object" ? JSON.stringify(value) : String(value));

export const components = [
  {
    name: "DataCard",
    description: "A card showing one key figure with a title, a value, a unit and a short description. The person can pin it.",
    propsSchema: {
      type: "object",
      properties: {
        title: { type: "string", default: "Monthly revenue" },
        value: { type: "number", default: 48200 },
        unit: { type: "string", default: "EUR" },
        description: { type: "string", default: "Up 12% on last month." },
      },
      required: ["title", "value"],
    },
    render(container, props, state, setState) {
      const card = el("div", { class: "c-datacard" });
      card.append(el("div", { class: "c-title" }, props.title ?? "…"));
      const figure = el("div", { class: "c-figure" });
      figure.append(el("span", { class: "c-value" }, asText(props.value)));
      if (props.unit) figure.append(el("span", { class: "c-unit" }, props.unit));
      card.append(figure);
      if (props.description) card.append(el("p", { class: "c-description" }, props.description));
      const pin = el("button", { type: "button", class: "c-action", "aria-pressed": String(Boolean(state.pinned)) },
        state.pinned ? "Pinned ★" : "Pin ☆");
      pin.addEventListener("click", () => setState({ ...state, pinned: !state.pinned }));
      card.append(pin);
      container.append(card);
    },
  },
  {
    name: "DataTable",
    description: "A table with column headings and rows of cells. The person can select a row.",
    propsSchema: {
      type: "object",
      properties: {
        title: { type: "string", default: "Top products" },
        columns: { type: "array", items: { type: "string" }, default: ["Product", "Units", "Revenue"] },
        rows: {
          type: "array",
          items: { type: "array", items: { type: ["string", "number"] } },
          default: [["Widget", 120, 2400], ["Gadget", 80, 3200], ["Doohickey", 45, 900]],
        },
      },
      required: ["columns", "rows"],
    },
    render(container, props, state, setState) {
      const wrap = el("div", { class: "c-datatable" });
      if (props.title) wrap.append(el("div", { class: "c-title" }, props.title));
      const table = el("table");
      const head = el("tr");
      for (const column of Array.isArray(props.columns) ? props.columns : []) head.append(el("th", {}, asText(column)));
      // append() returns nothing, so the head row goes into its own variable.
      const thead = el("thead");
      thead.append(head);
      table.append(thead);
      const body = el("tbody");
      (Array.isArray(props.rows) ? props.rows : []).forEach((row, index) => {
        const tr = el("tr", { tabindex: "0", "aria-selected": String(state.selectedRow === index) });
        for (const cell of Array.isArray(row) ? row : [row]) tr.append(el("td", {}, asText(cell)));
        const choose = () => setState({ ...state, selectedRow: state.selectedRow === index ? null : index });
        tr.addEventListener("click", choose);
        tr.addEventListener("keydown", (event) => {
          if (event.key === "Enter" || event.key === " ") {
            event.preventDefault();
            choose();
          }
        });
        body.append(tr);
      });
      table.append(body);
      wrap.append(table);
      container.append(wrap);
    },
  },
  {
    name: "BarChart",
    description: "A simple bar chart of labelled values. The person can highlight a bar.",
    propsSchema: {
      type: "object",
      properties: {
        title: { type: "string", default: "Visitors per day" },
        bars: {
          type: "array",
          items: {
            type: "object",
            properties: { label: { type: "string" }, value: { type: "number" } },
            required: ["label", "value"],
          },
          default: [
            { label: "Mon", value: 120 }, { label: "Tue", value: 180 }, { label: "Wed", value: 150 },
            { label: "Thu", value: 210 }, { label: "Fri", value: 90 },
          ],
        },
      },
      required: ["bars"],
    },
    render(container, props, state, setState) {
      const wrap = el("div", { class: "c-barchart" });
      if (props.title) wrap.append(el("div", { class: "c-title" }, props.title));
      const bars = (Array.isArray(props.bars) ? props.bars : []).filter((b) => b && typeof b === "object");
      const width = 320;
      const height = 180;
      const gap = 8;
      const max = Math.max(1, ...bars.map((b) => Number(b.value) || 0));
      const barWidth = bars.length ? (width - gap * (bars.length + 1)) / bars.length : 0;
      const chart = svg("svg", { viewBox: `0 0 ${width} ${height + 24}`, role: "img", class: "c-chart" });
      chart.append(Object.assign(svg("title"), { textContent: props.title || "Bar chart" }));
      bars.forEach((bar, index) => {
        const value = Math.max(0, Number(bar.value) || 0);
        const h = (value / max) * (height - 20);
        const x = gap + index * (barWidth + gap);
        const label = asText(bar.label);
        const group = svg("g", { class: "c-bar", tabindex: "0", "data-label": label,
          "aria-pressed": String(state.highlighted === label) });
        const rect = svg("rect", { x, y: height - h, width: Math.max(barWidth, 1), height: h, rx: 3 });
        const valueText = svg("text", { x: x + barWidth / 2, y: height - h - 4, "text-anchor": "middle", class: "c-bar-value" });
        valueText.textContent = asText(bar.value);
        const labelText = svg("text", { x: x + barWidth / 2, y: height + 16, "text-anchor": "middle" });
        labelText.textContent = label;
        group.append(rect, valueText, labelText);
        const choose = () => setState({ ...state, highlighted: state.highlighted === label ? null : label });
        group.addEventListener("click", choose);
        group.addEventListener("keydown", (event) => {
          if (event.key === "Enter" || event.key === " ") {
            event.preventDefault();
            choose();
          }
        });
        chart.append(group);
      });
      wrap.append(chart);
      container.append(wrap);
    },
  },
];

export function componentSpecs() {
  return components.map(({ name, description, propsSchema }) => ({ name, description, propsSchema }));
}

export function rendererFor(name) {
  return components.find((c) => c.name === name) || null;
}
