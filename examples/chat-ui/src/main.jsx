// A chat page on the official useStream hooks, served by examples/quickstart
// at /chat/. It talks to the API one level up from the page (/chat/ -> /),
// keeps the thread id in the URL (?thread=), and lists the latest threads to
// switch between them.
//
// ?protocol= picks the streaming protocol: without it (or "legacy") the page
// uses useStream of @langchain/langgraph-sdk/react on the run endpoints;
// "v2" (SSE) and "v2-websocket" use useStream of @langchain/react, the
// SDK's protocol-v2 hook (commands on /threads/{id}/commands, events on
// /threads/{id}/stream/events).
import { StrictMode, useCallback, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream as useLegacyStream } from "@langchain/langgraph-sdk/react";
import { useStream as useV2Stream } from "@langchain/react";

// The API is mounted one level above the page.
const apiUrl = new URL("..", window.location.href).href.replace(/\/$/, "");
const params = new URLSearchParams(window.location.search);
const assistantId = params.get("assistant") ?? "chat";
const protocol = params.get("protocol") ?? "legacy";

// threadFromURL reads ?thread= (null for a new chat).
const threadFromURL = () => new URLSearchParams(window.location.search).get("thread");

// messageType is a message's type: "human", "ai", ... (plain objects carry
// it as type; @langchain/core message classes also answer getType()).
function messageType(message) {
  if (typeof message.getType === "function") return message.getType();
  return message.type;
}

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
          const first = messages.find((m) => messageType(m) === "human");
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

// useThreadURL keeps the thread id in ?thread= (browser history included).
function useThreadURL() {
  const [threadId, setThreadId] = useState(threadFromURL);
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
  return [threadId, selectThread];
}

// LegacyApp streams runs (POST /threads/{id}/runs/stream) with the
// SDK's original useStream.
function LegacyApp() {
  const [threadId, selectThread] = useThreadURL();
  const [finished, setFinished] = useState(0); // bumps the thread list
  const stream = useLegacyStream({
    apiUrl,
    assistantId,
    messagesKey: "messages",
    threadId,
    onThreadId: selectThread,
    reconnectOnMount: true, // a reload rejoins a reply still streaming
    onFinish: () => setFinished((n) => n + 1),
    onError: () => setFinished((n) => n + 1),
  });
  const submit = (content) =>
    stream.submit(
      { messages: [{ type: "human", content }] },
      {
        optimisticValues: (prev) => ({
          ...prev,
          messages: [...(prev.messages ?? []), { type: "human", content, id: `pending-${Date.now()}` }],
        }),
      },
    );
  return (
    <Chat stream={stream} threadId={threadId} selectThread={selectThread} refresh={finished} submit={submit}
      interrupt={stream.interrupt} respond={(value) => stream.submit(null, { command: { resume: value } })} />
  );
}

// V2App streams the thread's protocol-v2 events with @langchain/react's
// useStream, over SSE or a WebSocket.
function V2App({ transport }) {
  const [threadId, selectThread] = useThreadURL();
  const [finished, setFinished] = useState(0);
  const stream = useV2Stream({
    apiUrl,
    assistantId,
    messagesKey: "messages",
    threadId,
    transport,
    onThreadId: selectThread,
    onCompleted: () => setFinished((n) => n + 1),
  });
  const submit = (content) => stream.submit({ messages: [{ type: "human", content }] });
  return (
    <Chat stream={stream} threadId={threadId} selectThread={selectThread} refresh={finished} submit={submit}
      interrupt={stream.interrupt} respond={(value) => stream.respond(value)} />
  );
}

// Chat renders a stream of either hook: the thread list, the messages,
// the error, a pending interrupt's question and the composer.
function Chat({ stream, threadId, selectThread, refresh, submit, interrupt, respond }) {
  const [draft, setDraft] = useState("");
  const [answer, setAnswer] = useState("");

  const send = (event) => {
    event.preventDefault();
    const content = draft.trim();
    if (!content || stream.isLoading) return;
    setDraft("");
    submit(content);
  };
  const reply = (event) => {
    event.preventDefault();
    const value = answer.trim();
    if (!value) return;
    setAnswer("");
    respond(value);
  };

  const messages = stream.messages;
  const question = interrupt?.value ?? interrupt?.payload;
  return (
    <div className="app">
      <Threads client={stream.client} current={threadId} refresh={refresh} onSelect={selectThread} />
      <main className="chat">
        <header>
          <h1>graphserver chat</h1>
          <span data-testid="status" className="status">{stream.isLoading ? "streaming" : "idle"}</span>
          <span data-testid="protocol" className="status">{protocol}</span>
        </header>
        <ol className="messages" data-testid="messages" data-thread-id={threadId ?? ""}>
          {messages.map((m, i) => (
            <li key={m.id ?? i} data-testid="message" data-type={messageType(m)} className={messageType(m)}>
              {text(m)}
            </li>
          ))}
          {stream.isThreadLoading && <li className="loading">Loading…</li>}
        </ol>
        {stream.error != null && (
          <p className="error" data-testid="error" role="alert">{errorText(stream.error)}</p>
        )}
        {interrupt != null && !stream.isLoading && (
          <form className="interrupt" onSubmit={reply}>
            <label data-testid="interrupt">{typeof question === "string" ? question : JSON.stringify(question)}</label>
            <input data-testid="answer" value={answer} onChange={(e) => setAnswer(e.target.value)} />
            <button type="submit" data-testid="respond" disabled={!answer.trim()}>Answer</button>
          </form>
        )}
        <form onSubmit={send}>
          <textarea
            data-testid="input"
            value={draft}
            placeholder="Message (try /fail to see an error, /ask for a question)"
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

function App() {
  switch (protocol) {
    case "v2":
      return <V2App transport="sse" />;
    case "v2-websocket":
      return <V2App transport="websocket" />;
    default:
      return <LegacyApp />;
  }
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
