// Bundles the app into dist/ with esbuild: `node build.mjs`. Two pages: index.html (app.js, the chat)
// and mcp.html (mcp.js, the project's MCP prompts and resources through the SDK's MCP provider).
// tests/browser/test_react_app.py calls it before serving dist/ from its own origin.
import { copyFile, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = join(here, "dist");

await mkdir(outdir, { recursive: true });
await build({
  entryPoints: { app: join(here, "src", "main.jsx"), mcp: join(here, "src", "mcp.jsx") },
  outdir,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  // React's development build reports mistakes (keys, hooks, bad props) on the console, which the
  // test reads: a warning there is a failure, not noise.
  define: { "process.env.NODE_ENV": '"development"' },
  sourcemap: "linked",
  logLevel: "warning",
});
for (const page of ["index.html", "mcp.html"]) await copyFile(join(here, page), join(outdir, page));
await copyFile(join(here, "app.css"), join(outdir, "app.css"));
