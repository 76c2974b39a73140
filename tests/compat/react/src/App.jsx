import { useEffect, useState } from "react";
import {
  TamboProvider,
  useTambo,
  useTamboSuggestions,
  useTamboThreadInput,
  useTamboThreadList,
} from "@tambo-ai/react";

import { lookupPopulation, onToolCall, toolCalls, weatherCard } from "./registry.jsx";

export function App({ config }) {
  return (
    <TamboProvider
      apiKey={config.apiKey}
      tamboUrl={config.tamboUrl}
      userKey={config.userKey}
      userToken={config.userToken}
      components={[weatherCard]}
      tools={[lookupPopulation]}
    >
      <div className="layout">
        <ThreadList />
        <main>
          <Status />
          <Messages />
          <Suggestions />
          <MessageInput />
        </main>
      </div>
    </TamboProvider>
  );
}

function ThreadList() {
  const { currentThreadId, switchThread, startNewThread, isIdle, isIdentified } = useTambo();
  const { data, refetch, isSuccess } = useTamboThreadList();
  // The SDK refreshes the list when it names a thread; a thread it just created, or a run that
  // just ended, is the app's business to show.
  useEffect(() => {
    if (isIdentified && isIdle) void refetch();
  }, [currentThreadId, isIdle, isIdentified, refetch]);
  return (
    <aside>
      <h2>Threads</h2>
      <button type="button" onClick={() => startNewThread()}>New thread</button>
      <ul data-testid="thread-list" data-loaded={String(isSuccess)}>
        {(data?.threads ?? []).map((thread) => (
          <li key={thread.id}>
            <button type="button" data-thread-id={thread.id} aria-current={String(thread.id === currentThreadId)}
              onClick={() => switchThread(thread.id)}>
              <span className="thread-name">{thread.name ?? "Untitled"}</span>
            </button>
          </li>
        ))}
      </ul>
    </aside>
  );
}

function Status() {
  const { currentThreadId, thread, authState, isIdle, streamingState } = useTambo();
  // A reopened thread's name is in the thread list (same query, so no extra request), not in the
  // stream state the SDK rebuilds from its messages.
  const { data } = useTamboThreadList();
  const name = thread?.thread.name ?? data?.threads.find((listed) => listed.id === currentThreadId)?.name;
  const [count, setCount] = useState(toolCalls.length);
  useEffect(() => onToolCall(setCount), []);
  return (
    <header className="status" data-testid="status" data-auth={authState.status} data-idle={String(isIdle)}
      data-thread-id={currentThreadId}>
      <h1 data-testid="thread-title">{name ?? "New conversation"}</h1>
      <span>auth: {authState.status}</span> · <span>run: {streamingState.status}</span> ·{" "}
      <span>tool calls: <output data-testid="tool-call-count">{count}</output></span>
      {streamingState.error && <p role="alert">{streamingState.error.message}</p>}
    </header>
  );
}

function Messages() {
  const { messages } = useTambo();
  return (
    <section className="messages" data-testid="messages" aria-live="polite">
      {messages.map((message) => (
        <article key={message.id} className="message" data-role={message.role} data-message-id={message.id}>
          <div className="role">{message.role}</div>
          {message.content.map((block, index) => (
            <Block key={`${message.id}-${index}`} block={block} />
          ))}
        </article>
      ))}
    </section>
  );
}

function Block({ block }) {
  switch (block.type) {
    case "text":
      return <p className="text">{block.text}</p>;
    case "component":
      // The SDK renders registered components itself, with the props streamed so far.
      return <div className="component" data-component={block.name}>{block.renderedComponent}</div>;
    case "tool_use":
      return (
        <p className="tool-use" data-tool={block.name} data-completed={String(Boolean(block.hasCompleted))}>
          called {block.name}({JSON.stringify(block.input)})
        </p>
      );
    case "tool_result":
      return <p className="tool-result">result for {block.toolUseId}</p>;
    case "resource":
      return block.resource?.blob && block.resource.mimeType?.startsWith("image/")
        ? <img className="image" alt={block.resource.name ?? "image"}
            src={`data:${block.resource.mimeType};base64,${block.resource.blob}`} />
        : <p className="resource">{block.resource?.name ?? block.resource?.uri}</p>;
    default:
      return null;
  }
}

function Suggestions() {
  const { suggestions, accept, isAccepting } = useTamboSuggestions({ maxSuggestions: 3 });
  if (suggestions.length === 0) return null;
  return (
    <nav className="suggestions" data-testid="suggestions" aria-label="Suggestions"
      data-message-id={suggestions[0].messageId}>
      {suggestions.map((suggestion) => (
        <button key={suggestion.id} type="button" disabled={isAccepting} title={suggestion.description}
          data-detailed={suggestion.detailedSuggestion}
          onClick={() => void accept({ suggestion, shouldSubmit: true })}>
          {suggestion.title}
        </button>
      ))}
    </nav>
  );
}

function MessageInput() {
  const { value, setValue, submit, isPending, isDisabled, images, addImages } = useTamboThreadInput();
  const { isIdentified } = useTambo();
  return (
    // A failed send is logged by the SDK (console.error) and shown in the status line.
    <form onSubmit={(event) => { event.preventDefault(); void submit().catch(() => {}); }}>
      <input aria-label="Message" value={value} onChange={(event) => setValue(event.target.value)}
        placeholder="Ask something" />
      {/* The SDK's own image staging (addImage/addImages), as Tambo's MessageInput uses it. */}
      <input type="file" aria-label="Image" accept="image/*" multiple
        onChange={(event) => { void addImages([...event.target.files]); event.target.value = ""; }} />
      <output data-testid="staged-images">{images.length}</output>
      <button type="submit" disabled={isPending || isDisabled || !isIdentified}>Send</button>
      <StopButton />
    </form>
  );
}

// Stop, as Tambo's own message input offers it: the SDK's cancelRun (a DELETE of the run).
function StopButton() {
  const { cancelRun, isIdle } = useTambo();
  return <button type="button" disabled={isIdle} onClick={() => void cancelRun()}>Stop</button>;
}
