import { createRoot } from "react-dom/client";

import { App } from "./App.jsx";
import { readConfig } from "./config.js";

const { config, problems } = readConfig();
const root = createRoot(document.getElementById("root"));
if (problems.length) {
  root.render(<p role="alert">This app is misconfigured: {problems.join("; ")}.</p>);
} else {
  root.render(<App config={config} />);
}
