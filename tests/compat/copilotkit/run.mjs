#!/usr/bin/env node
// Drives POST /v1/agui through CopilotKit as an app uses it: a CopilotRuntime (@copilotkit/runtime
// 1.75.0) whose agent is an AG-UI HttpAgent pointing at this server, served over HTTP, and a headless
// CopilotKitCore client (@copilotkit/core) with a frontend tool whose handler runs in the client.
//
//   TAMBO_URL=http://127.0.0.1:8000 TAMBO_API_KEY=tk_... [TAMBO_USER_KEY=alice] node run.mjs [scenario ...]
import assert from "node:assert/strict";
import http from "node:http";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";
import { CopilotRuntime } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";
import { CopilotKitCore } from "@copilotkit/core";
import { z } from "zod";
import { runScenarios } from "../harness.mjs";

const BASE_URL = process.env.TAMBO_URL;
const API_KEY = process.env.TAMBO_API_KEY;
const USER_KEY = process.env.TAMBO_USER_KEY || "copilotkit-user";

/** A CopilotRuntime on a local port whose `default` agent is this server's AG-UI endpoint. */
async function startRuntime() {
  const agent = new HttpAgent({ url: `${BASE_URL}/v1/agui`, headers: { "x-api-key": API_KEY } });
  const runtime = new CopilotRuntime({ agents: { default: agent } });
  const server = http.createServer(createCopilotNodeListener({ runtime, basePath: "/api/copilotkit" }));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}/api/copilotkit` };
}

const scenarios = {
  /** A frontend tool (action): the model calls it, its handler runs in the client, and its result
   *  reaches the model's next call, whose answer the client shows. */
  async frontend_tool() {
    const { server, url } = await startRuntime();
    try {
      // CopilotKitCore connects to its runtime only in a browser (`typeof window`); this headless client
      // runs under Node, so it gets the one global the check looks at.
      globalThis.window ??= globalThis;
      const core = new CopilotKitCore({ runtimeUrl: url, properties: { userKey: USER_KEY } });
      const handled = [];
      core.addTool({
        name: "lookup_weather",
        description: "Looks up the weather for a city.",
        parameters: z.object({ city: z.string() }),
        handler: async ({ city }) => {
          handled.push(city);
          return JSON.stringify({ city, forecast: "sunny" });
        },
      });
      const deadline = Date.now() + 10000;
      while (!core.getAgent("default") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const agent = core.getAgent("default");
      assert.ok(agent, "the runtime's agent never appeared in the client");
      agent.addMessage({ id: randomUUID(), role: "user", content: 'Use lookup_weather {"city": "Paris"}' });
      await core.runAgent({ agent });
      const deadline2 = Date.now() + 10000;
      const last = () => agent.messages.at(-1);
      while (!(last()?.role === "assistant" && typeof last().content === "string" && last().content)
             && Date.now() < deadline2) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.deepEqual(handled, ["Paris"]);
      return { threadId: agent.threadId, roles: agent.messages.map((m) => m.role), finalText: last()?.content };
    } finally {
      server.close();
    }
  },
};

await runScenarios(scenarios);
