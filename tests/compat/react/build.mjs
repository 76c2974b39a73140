// Bundles the app into dist/ (index.html, app.css, app.js) with esbuild: `node build.mjs`.
// tests/browser/test_react_app.py calls it before serving dist/ from its own origin.
import { copyFile, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = join(here, "dist");

await mkdir(outdir, { recursive: true });
await build({
  entryPoints: [join(here, "src", "main.jsx")],
  outfile: join(outdir, "app.js"),
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
await copyFile(join(here, "index.html"), join(outdir, "index.html"));
await copyFile(join(here, "app.css"), join(outdir, "app.css"));
