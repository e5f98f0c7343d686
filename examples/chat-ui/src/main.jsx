// A chat page on the official useStream hook (@langchain/langgraph-sdk/react),
// served by examples/quickstart at /chat/. It talks to the API one level up
// from the page (/chat/ -> /), keeps the thread id in the URL (?thread=), and
// lists the latest threads to switch between them.
import { StrictMode, useCallback, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

// The API is mounted one level above the page.
const apiUrl = new URL("..", window.location.href).href.replace(/\/$/, "");
const assistantId = new URLSearchParams(window.location.search).get("assistant") ?? "chat";

// threadFromURL reads ?thread= (null for a new chat).
const threadFromURL = () => new URLSearchParams(window.location.search).get("thread");

// text returns a message's content as plain text.
function text(message) {
  if (typeof message.content === "string") return message.content;
  if (Array.isArray(message.content)) {
    return message.content.map((part) => (typeof part === "string" ? part : part.text ?? "")).join("");
  }
  return "";
}

// errorText returns what to show of a stream or request error.
function errorText(error) {
  if (error == null) return "";
  if (typeof error === "string") return error;
  return error.message ?? JSON.stringify(error);
}

function Threads({ client, current, refresh, onSelect }) {
  const [threads, setThreads] = useState([]);
  const [failed, setFailed] = useState("");
  useEffect(() => {
    let live = true;
    client.threads
      .search({ limit: 30, sortBy: "updated_at", sortOrder: "desc" })
      .then((list) => { if (live) { setThreads(list); setFailed(""); } })
      .catch((err) => { if (live) setFailed(errorText(err)); });
    return () => { live = false; };
  }, [client, current, refresh]);
  return (
    <nav className="threads" aria-label="Threads">
      <button type="button" data-testid="new-thread" onClick={() => onSelect(null)}>New chat</button>
      {failed && <p className="error">{failed}</p>}
      <ul>
        {threads.map((t) => {
          const messages = t.values?.messages ?? [];
          const first = messages.find((m) => m.type === "human");
          return (
            <li key={t.thread_id}>
              <button
                type="button"
                data-testid="thread"
                data-thread-id={t.thread_id}
                aria-current={t.thread_id === current ? "true" : undefined}
                onClick={() => onSelect(t.thread_id)}
              >
                <span className="title">{first ? text(first) : "(empty)"}</span>
                <span className="meta">{t.status} · {messages.length} messages</span>
              </button>
            </li>
          );
        })}
      </ul>
    </nav>
  );
}

function App() {
  const [threadId, setThreadId] = useState(threadFromURL);
  const [draft, setDraft] = useState("");
  const [finished, setFinished] = useState(0); // bumps the thread list

  const selectThread = useCallback((id) => {
    setThreadId(id);
    const url = new URL(window.location.href);
    if (id) url.searchParams.set("thread", id);
    else url.searchParams.delete("thread");
    window.history.pushState(null, "", url);
  }, []);
  useEffect(() => {
    const onPop = () => setThreadId(threadFromURL());
    window.addEventListener("popstate", onPop);
    return () => window.removeEventListener("popstate", onPop);
  }, []);

  const stream = useStream({
    apiUrl,
    assistantId,
    messagesKey: "messages",
    threadId,
    onThreadId: selectThread,
    reconnectOnMount: true, // a reload rejoins a reply still streaming
    onFinish: () => setFinished((n) => n + 1),
    onError: () => setFinished((n) => n + 1),
  });

  const send = (event) => {
    event.preventDefault();
    const content = draft.trim();
    if (!content || stream.isLoading) return;
    setDraft("");
    stream.submit(
      { messages: [{ type: "human", content }] },
      {
        optimisticValues: (prev) => ({
          ...prev,
          messages: [...(prev.messages ?? []), { type: "human", content, id: `pending-${Date.now()}` }],
        }),
      },
    );
  };

  const messages = stream.messages;
  return (
    <div className="app">
      <Threads client={stream.client} current={threadId} refresh={finished} onSelect={selectThread} />
      <main className="chat">
        <header>
          <h1>graphserver chat</h1>
          <span data-testid="status" className="status">{stream.isLoading ? "streaming" : "idle"}</span>
        </header>
        <ol className="messages" data-testid="messages" data-thread-id={threadId ?? ""}>
          {messages.map((m, i) => (
            <li key={m.id ?? i} data-testid="message" data-type={m.type} className={m.type}>
              {text(m)}
            </li>
          ))}
          {stream.isThreadLoading && <li className="loading">Loading…</li>}
        </ol>
        {stream.error != null && (
          <p className="error" data-testid="error" role="alert">{errorText(stream.error)}</p>
        )}
        <form onSubmit={send}>
          <textarea
            data-testid="input"
            value={draft}
            placeholder="Message (try /fail to see an error)"
            onChange={(e) => setDraft(e.target.value)}
            onKeyDown={(e) => { if (e.key === "Enter" && !e.shiftKey) send(e); }}
          />
          {stream.isLoading ? (
            <button type="button" data-testid="stop" onClick={() => stream.stop()}>Stop</button>
          ) : (
            <button type="submit" data-testid="send" disabled={!draft.trim()}>Send</button>
          )}
        </form>
      </main>
    </div>
  );
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
