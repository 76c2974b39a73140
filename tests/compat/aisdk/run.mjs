#!/usr/bin/env node
// Drives the gateway with the Vercel AI SDK as its README shows: `createOpenAI({ baseURL, apiKey })` and the
// provider's default `openai("model")`, which calls the Responses API (`POST /api/responses`).
//
//   TAMBO_URL=http://127.0.0.1:8000 TAMBO_API_KEY=tk_... node run.mjs [scenario ...]
import assert from "node:assert/strict";
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject, generateText, streamText, tool, stepCountIs } from "ai";
import { z } from "zod";
import { runScenarios } from "../harness.mjs";

const openai = createOpenAI({ baseURL: `${process.env.TAMBO_URL}/api`, apiKey: process.env.TAMBO_API_KEY });
const MODEL = process.env.AISDK_MODEL || "offline";

const scenarios = {
  /** generateText and streamText on the default (Responses) model. */
  async text() {
    const whole = await generateText({ model: openai(MODEL), system: "Be brief.", prompt: "Hello AI SDK" });
    const streamed = streamText({ model: openai(MODEL), prompt: "Stream AI SDK" });
    let text = "";
    for await (const part of streamed.textStream) text += part;
    const usage = await streamed.usage;
    assert.ok(whole.text.length > 0 && text.length > 0);
    return { wholeText: whole.text, streamedText: text, finishReason: whole.finishReason,
             totalTokens: usage.totalTokens };
  },

  /** A tool the SDK runs itself between two model calls (function_call, then function_call_output). */
  async tool_loop() {
    const ran = [];
    const result = await generateText({
      model: openai(MODEL),
      prompt: 'What is the weather in Oslo?',
      tools: {
        get_weather: tool({
          description: "Weather for a city.",
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => { ran.push(city); return { city, forecast: "rain" }; },
        }),
      },
      stopWhen: stepCountIs(3),
    });
    return { ran, text: result.text, steps: result.steps.length };
  },

  /** generateObject: structured output through text.format json_schema. */
  async object() {
    const { object } = await generateObject({ model: openai(MODEL), prompt: "A city as JSON.",
                                              schema: z.object({ name: z.string() }) });
    return { object };
  },

  /** Chat-completions mode (`openai.chat(model)`): text, then generateObject through response_format. */
  async chat_mode() {
    const whole = await generateText({ model: openai.chat(MODEL), prompt: "Hello chat mode" });
    const { object } = await generateObject({ model: openai.chat(MODEL), prompt: "A city as JSON.",
                                              schema: z.object({ name: z.string() }) });
    return { text: whole.text, object, totalTokens: whole.usage.totalTokens };
  },
};

await runScenarios(scenarios);
