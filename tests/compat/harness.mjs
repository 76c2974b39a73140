// Runs named scenarios and reports each as one JSON line, for tests/support/node.py:
// `{"scenario": name, "ok": true, ...facts}` or `{"scenario": name, "ok": false, "error": message}`.
// With no names on the command line it runs them all; it exits 1 if any failed, 2 on an unknown name.
// Plain JavaScript with no imports, so every Node folder of tests/compat can use it.

const SCENARIO_TIMEOUT_MS = Number(process.env.COMPAT_SCENARIO_TIMEOUT_MS || 30000);

function withTimeout(promise, ms, name) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`scenario ${name} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export async function runScenarios(scenarios) {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((name) => !(name in scenarios));
  if (unknown.length) {
    console.error(`Unknown scenario(s): ${unknown.join(", ")}. Known: ${Object.keys(scenarios).join(", ")}`);
    process.exit(2);
  }
  let failed = 0;
  for (const name of wanted.length ? wanted : Object.keys(scenarios)) {
    try {
      const facts = await withTimeout(scenarios[name](), SCENARIO_TIMEOUT_MS, name);
      console.log(JSON.stringify({ scenario: name, ok: true, ...facts }));
    } catch (error) {
      failed += 1;
      const detail = error?.stack || String(error);
      console.log(JSON.stringify({ scenario: name, ok: false, error: String(error?.message ?? error), detail }));
      console.error(`scenario ${name} FAILED: ${detail}`);
    }
  }
  process.exit(failed ? 1 : 0);
}
