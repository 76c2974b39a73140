import { useState } from "react";
import { TamboProvider } from "@tambo-ai/react";
import {
  TamboMcpProvider,
  useTamboMcpPrompt,
  useTamboMcpPromptList,
  useTamboMcpResource,
  useTamboMcpResourceList,
} from "@tambo-ai/react/mcp";

// The project's MCP prompts and resources, reached as Tambo's own apps reach them: the SDK's MCP
// provider fetches a token (POST /auth/mcp/access-token, by `contextKey`) and connects to the
// server's `/mcp` (docs/tools.md#the-browsers-mcp-endpoint). Names and URIs carry the SDK's prefix
// for that server, then ours (`tambo-…:demo:summarise`).
export function McpApp({ config }) {
  return (
    <TamboProvider apiKey={config.apiKey} tamboUrl={config.tamboUrl} userKey={config.userKey}
      userToken={config.userToken}>
      {/* TamboProvider's own MCP provider has no contextKey, so it fetches no token: this one does. */}
      <TamboMcpProvider contextKey={config.userKey ?? "token-user"}>
        <McpPanel />
      </TamboMcpProvider>
    </TamboProvider>
  );
}

function McpPanel() {
  const prompts = useTamboMcpPromptList();
  const resources = useTamboMcpResourceList();
  const [promptName, setPromptName] = useState();
  const [resourceUri, setResourceUri] = useState();
  return (
    <main className="mcp">
      <h2>Prompts</h2>
      <ul data-testid="mcp-prompts" data-loaded={String(prompts.isSuccess)}>
        {prompts.data.map(({ prompt }) => (
          <li key={prompt.name}>
            <button type="button" data-name={prompt.name} onClick={() => setPromptName(prompt.name)}>
              {prompt.name}
            </button> {prompt.description}
          </li>
        ))}
      </ul>
      {promptName && <PromptView key={promptName} entry={prompts.data.find((e) => e.prompt.name === promptName)} />}
      <h2>Resources</h2>
      <ul data-testid="mcp-resources" data-loaded={String(resources.isSuccess)}>
        {resources.data.map(({ resource }) => (
          <li key={resource.uri}>
            <button type="button" data-uri={resource.uri} onClick={() => setResourceUri(resource.uri)}>
              {resource.uri}
            </button> {resource.description}
          </li>
        ))}
      </ul>
      {resourceUri && <ResourceView uri={resourceUri} />}
    </main>
  );
}

// A prompt with arguments is fetched once each is filled in, as the input's `/` menu would.
function PromptView({ entry }) {
  const declared = entry?.prompt.arguments ?? [];
  const [values, setValues] = useState({});
  const [submitted, setSubmitted] = useState(declared.length ? null : {});
  return (
    <section data-testid="mcp-prompt">
      <form onSubmit={(event) => { event.preventDefault(); setSubmitted(values); }}>
        {declared.map((argument) => (
          <input key={argument.name} aria-label={argument.name} value={values[argument.name] ?? ""}
            onChange={(event) => setValues({ ...values, [argument.name]: event.target.value })} />
        ))}
        {declared.length > 0 && <button type="submit">Get prompt</button>}
      </form>
      {submitted && <PromptMessages name={entry.prompt.name} args={submitted} />}
    </section>
  );
}

function PromptMessages({ name, args }) {
  const { data, isSuccess, error } = useTamboMcpPrompt(name, args);
  if (error) return <p role="alert">{error.message}</p>;
  return (
    <ol data-testid="mcp-prompt-messages" data-loaded={String(isSuccess)}>
      {(data?.messages ?? []).map((message, index) => (
        <li key={index} data-role={message.role}>{message.content.type === "text" ? message.content.text : ""}</li>
      ))}
    </ol>
  );
}

function ResourceView({ uri }) {
  const { data, isSuccess, error } = useTamboMcpResource(uri);
  if (error) return <p role="alert">{error.message}</p>;
  return (
    <section data-testid="mcp-resource" data-loaded={String(isSuccess)}>
      {(data?.contents ?? []).map((content) => (
        <pre key={content.uri} data-mime-type={content.mimeType}>{content.text ?? `(${content.blob?.length} base64 bytes)`}</pre>
      ))}
    </section>
  );
}
