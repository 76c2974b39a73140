import { createRoot } from "react-dom/client";

import { readConfig } from "./config.js";
import { McpApp } from "./McpPanel.jsx";

// The second page (mcp.html): the MCP panel alone, configured like the chat page.
const { config, problems } = readConfig();
const root = createRoot(document.getElementById("root"));
if (problems.length) {
  root.render(<p role="alert">This app is misconfigured: {problems.join("; ")}.</p>);
} else {
  root.render(<McpApp config={config} />);
}
