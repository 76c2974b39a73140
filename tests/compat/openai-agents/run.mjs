#!/usr/bin/env node
// Drives the gateway with the OpenAI Agents SDK as its README shows, with its default model API (the
// Responses API, `POST /api/responses`): an OpenAI client pointed at the gateway, an Agent with a
// function tool the SDK runs itself, and `run()`.
//
//   TAMBO_URL=http://127.0.0.1:8000 TAMBO_API_KEY=tk_... AGENTS_MODEL=gpt-fake [AGENTS_API=chat_completions] \
//     node run.mjs [scenario ...]
import assert from "node:assert/strict";
import OpenAI from "openai";
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";
import { runScenarios } from "../harness.mjs";

setTracingDisabled(true);  // traces go to OpenAI's platform, which this server is not
setDefaultOpenAIClient(new OpenAI({ baseURL: `${process.env.TAMBO_URL}/api`, apiKey: process.env.TAMBO_API_KEY }));
const MODEL = process.env.AGENTS_MODEL || "offline";
// AGENTS_API=chat_completions: the SDK's other model API, as its README shows switching to it.
if (process.env.AGENTS_API) setOpenAIAPI(process.env.AGENTS_API);

const scenarios = {
  /** One agent turn that calls a tool, then answers with what it returned. */
  async tool_turn() {
    const ran = [];
    const getWeather = tool({
      name: "get_weather",
      description: "Weather for a city.",
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => { ran.push(city); return `rain in ${city}`; },
    });
    const agent = new Agent({ name: "Weather", instructions: "Be brief.", model: MODEL, tools: [getWeather] });
    const result = await run(agent, "What is the weather in Oslo?");
    assert.deepEqual(ran, ["Oslo"]);
    return { ran, finalOutput: result.finalOutput };
  },
};

await runScenarios(scenarios);
