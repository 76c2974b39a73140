// The admin's thread page: draws each assistant text block with the page's own Markdown renderer, so
// the admin shows an answer exactly as the page does (sanitized, raw HTML as text, code highlighted).
import { renderMarkdown } from "./markdown.js";

for (const node of document.querySelectorAll("[data-markdown]")) {
  renderMarkdown(node, node.textContent);
}
