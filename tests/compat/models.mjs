#!/usr/bin/env node
// Project models through the official `@tambo-ai/client` (1.1.x): client tool names the model providers
// refuse (dots, slashes, 150 characters) are registered, called and answered under the client's own
// names, and a project's reasoning shows as `message.reasoning`.
//
//   TAMBO_URL=http://127.0.0.1:8000 TAMBO_API_KEY=tk_... [TAMBO_USER_KEY=alice] node models.mjs [scenario ...]
//
// One JSON line per scenario `{"scenario": name, "ok": true|false, ...facts | "error": message}`.
import assert from "node:assert/strict";
import { TamboClient } from "@tambo-ai/client";
import { z } from "zod";
import { runScenarios } from "./harness.mjs";

const BASE_URL = process.env.TAMBO_URL;
const API_KEY = process.env.TAMBO_API_KEY;
const USER_KEY = process.env.TAMBO_USER_KEY || "compat-user";

if (!BASE_URL || !API_KEY) {
  console.error("Set TAMBO_URL (the server's base URL) and TAMBO_API_KEY (a project API key).");
  process.exit(2);
}

export const DOTTED = "github__search.repos";
export const LONG = "mcp/server.example/" + "x".repeat(150 - "mcp/server.example/".length);

async function drain(stream) {
  const events = [];
  for await (const item of stream) events.push(item.event ?? item);
  return events;
}

const scenarios = {
  /** Two tools whose names no provider accepts: the client sees and answers its own names. */
  async dotted_tool_names() {
    const client = new TamboClient({ apiKey: API_KEY, tamboUrl: BASE_URL, userKey: USER_KEY });
    const calls = [];
    for (const name of [DOTTED, LONG]) {
      client.registerTool({
        name,
        description: `The tool ${name}.`,
        tool: async ({ q }) => {
          calls.push({ name, q });
          return { found: `${q} via ${name.length}` };
        },
        inputSchema: z.object({ q: z.string() }),
        outputSchema: z.object({ found: z.string() }),
      });
    }
    const stream = client.run(`Use ${DOTTED} and ${LONG} with {"q": "tambo"}`);
    const events = await drain(stream);
    const thread = await stream.thread;
    const started = events.filter((e) => e.type === "TOOL_CALL_START").map((e) => e.toolCallName);
    assert.deepEqual(started, [DOTTED, LONG], "tool call events carry the client's own names");
    const awaiting = events.find((e) => e.type === "CUSTOM" && e.name === "tambo.run.awaiting_input");
    assert.deepEqual(awaiting.value.pendingToolCalls.map((c) => c.toolName), [DOTTED, LONG]);
    assert.deepEqual(calls.map((c) => c.name), [DOTTED, LONG], "the client ran both tools by their names");
    assert.equal(events.at(-1).type, "RUN_FINISHED");
    const uses = thread.messages.flatMap((m) => m.content).filter((c) => c.type === "tool_use");
    assert.deepEqual(uses.map((u) => u.name), [DOTTED, LONG]);
    return { threadId: thread.id, toolNames: started };
  },
};

await runScenarios(scenarios);
