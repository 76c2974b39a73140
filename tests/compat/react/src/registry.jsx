// What the app offers the model: one generative component and one browser-side tool, both declared
// with zod schemas the way the SDK's README shows.
import { useTamboStreamStatus } from "@tambo-ai/react";
import { z } from "zod/v4";

// Every call of the client tool is recorded here, so the page (and the test) can see how often the
// SDK ran it: once per call the model made, never again on a re-render or a continuation.
export const toolCalls = [];
window.__reactAppToolCalls = toolCalls;
const toolCallListeners = new Set();

export function onToolCall(listener) {
  toolCallListeners.add(listener);
  return () => toolCallListeners.delete(listener);
}

const POPULATIONS = { Lyon: 522250, Paris: 2102650, Oslo: 709037 };

export const lookupPopulation = {
  name: "lookup_population",
  description: "The population of a city, from the app's own table.",
  inputSchema: z.object({ city: z.string().describe("The city's name") }),
  outputSchema: z.object({ city: z.string(), population: z.number().nullable() }),
  tool: ({ city }) => {
    const result = { city, population: POPULATIONS[city] ?? null };
    toolCalls.push({ input: { city }, result });
    for (const listener of toolCallListeners) listener(toolCalls.length);
    return result;
  },
};

function WeatherCard({ city, temperatureC, conditions }) {
  const { streamStatus } = useTamboStreamStatus();
  return (
    <section className="weather-card" data-testid="weather-card" data-streaming={String(streamStatus.isStreaming)}
      data-done={String(streamStatus.isSuccess)}>
      <h3 data-testid="weather-city">{city ?? "…"}</h3>
      <p>
        <span data-testid="weather-temperature">{temperatureC ?? "…"}</span> °C,{" "}
        <span data-testid="weather-conditions">{conditions ?? "…"}</span>
      </p>
    </section>
  );
}

export const weatherCard = {
  name: "WeatherCard",
  description: "Shows the weather in a city.",
  component: WeatherCard,
  propsSchema: z.object({
    city: z.string().describe("The city's name").default("Oslo"),
    temperatureC: z.number().describe("Temperature in degrees Celsius").default(-3),
    conditions: z.string().describe("A few words about the sky").default("snow"),
  }),
};
