// Protocol v2 (thread-centric streaming) through the JS SDK's
// client.threads.stream, over SSE, against examples/integration (the graphs
// of the Python SDK's integration suite). What each graph must show follows
// LangGraph's Python server (sdk-integration-graphs.md §5): root-level node
// events at the namespace [], input.requested carrying the interrupt's
// value, tool events at the root for a root-level tool node, the deep
// agent's subagent at a one-segment namespace tools:<task_id>.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Client } from "@langchain/langgraph-sdk";
import { startIntegrationServer } from "./server.js";

let server, client;
before(async () => {
  server = await startIntegrationServer();
  client = new Client({ apiUrl: server.url, apiKey: null, streamProtocol: "v2" });
});
after(async () => { await server?.stop(); });

const agentInput = { messages: [], value: "init", items: [] };
const terminalItems = ["streamed", "tool", "asked", "sub"];

// take reads n items from an async iterable (failing after a timeout).
async function take(iterable, n, ms = 15000) {
  const out = [];
  const it = iterable[Symbol.asyncIterator]();
  const deadline = Date.now() + ms;
  while (out.length < n) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`only ${out.length} of ${n} items: ${JSON.stringify(out).slice(0, 2000)}`);
    const r = await Promise.race([it.next(), new Promise((_, fail) => setTimeout(() => fail(new Error(`timeout after ${out.length} items: ${JSON.stringify(out).slice(0, 2000)}`)), left))]);
    if (r.done) break;
    out.push(r.value);
  }
  await it.return?.();
  return out;
}

async function waitFor(cond, ms = 15000) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((ok) => setTimeout(ok, 20));
  }
}

// collect subscribes to channels and gathers the thread's events (through
// onEvent: the SDK ends a subscription's iteration as soon as its lifecycle
// watcher, a stream of its own, sees the run end, which may be before the
// shared stream's replay arrives) until stop(events) holds.
async function collect(thread, channels, options, stop) {
  const seen = [];
  const off = thread.onEvent((e) => seen.push(e));
  const sub = await thread.subscribe(channels, options);
  try {
    await waitFor(() => stop(seen));
  } catch (err) {
    throw new Error(`${err.message}: ${JSON.stringify(seen.map((e) => [e.method, e.params?.namespace, e.params?.data?.event]))}`);
  } finally {
    off();
    await sub.unsubscribe();
  }
  return seen;
}

const rootTerminal = (e) => e.method === "lifecycle" && e.params.namespace.length === 0 && ["completed", "failed"].includes(e.params.data.event);

test("agent: progress events after run.start lose nothing; messages join to the text; interrupt and input.respond; output", async () => {
  const thread = client.threads.stream({ assistantId: "agent" });
  try {
    const started = await thread.run.start({ input: agentInput });
    assert.ok(started.run_id);
    // Subscribed after run.start: the replay has every progress event, in
    // order, at the root namespace. (Collected with onEvent: the SDK ends a
    // subscription's iteration when its lifecycle watcher, a stream of its
    // own, sees the interrupt, which may be before the replay arrives.)
    const seen = [];
    const off = thread.onEvent((e) => seen.push(e));
    const progress = await thread.subscribe(["custom", "messages"]);
    const isProgress = (e) => e.method === "custom" && e.params.data.name === "progress";
    await waitFor(() => seen.filter(isProgress).length >= 5 && seen.some((e) => e.method === "messages" && e.params.data.event === "message-finish"));
    off();
    await progress.unsubscribe();
    const events = seen.filter(isProgress);
    assert.deepEqual(events.map((e) => e.params.data.step), ["stream_message", "stream_message", "call_tool", "call_tool", "ask_human"]);
    assert.deepEqual(events.map((e) => e.params.data.phase), ["start", "end", "start", "end", "start"]);
    for (const e of events) assert.deepEqual(e.params.namespace, []);

    const mevs = seen.filter((e) => e.method === "messages");
    assert.deepEqual(mevs.map((e) => e.params.data.event), ["message-start", "content-block-start", "content-block-delta", "content-block-delta", "content-block-finish", "message-finish"]);
    assert.equal(mevs[0].params.data.id, "ai-msg-1");
    assert.equal(mevs[0].params.data.metadata.langgraph_node, "stream_message");
    assert.equal(mevs.filter((e) => e.params.data.event === "content-block-delta").map((e) => e.params.data.delta.text).join(""), "Hello, world!");
    for (const e of mevs) assert.deepEqual(e.params.namespace, []);

    await waitFor(() => thread.interrupted && thread.interrupts.length === 1);
    const intr = thread.interrupts[0];
    assert.equal(intr.payload, "Are we good?");
    assert.deepEqual(intr.namespace, []);
    const ends = [];
    const off2 = thread.onEvent((e) => { if (rootTerminal(e)) ends.push(e.params.data.event); });
    await thread.input.respond({ interrupt_id: intr.interruptId, namespace: [], response: "yes" });
    await waitFor(() => ends.length > 0);
    off2();
    assert.deepEqual(ends, ["completed"]);
    const state = await client.threads.getState(thread.threadId);
    assert.deepEqual(state.values.items, terminalItems);
    assert.deepEqual(state.values.messages.map((m) => m.id), ["ai-msg-1", "ai-msg-2", "tool-tc-1", "ai-msg-3", "sub-msg-1"].map((id) => (id === "tool-tc-1" ? state.values.messages[2].id : id)));
  } finally {
    await thread.close();
  }
});

test("tools_agent: tool-started and tool-finished at the root namespace", async () => {
  const thread = client.threads.stream({ assistantId: "tools_agent" });
  try {
    await thread.run.start({ input: { messages: [{ role: "human", content: "search for v3" }] } });
    const isTool = (e) => e.method === "tools";
    const evs = await collect(thread, ["tools", "lifecycle"], { namespaces: [[]], depth: 0 }, (all) => all.some(rootTerminal) && all.filter(isTool).length >= 2);
    const tools = evs.filter((e) => e.method === "tools").map((e) => e.params.data);
    assert.deepEqual(tools.map((t) => t.event), ["tool-started", "tool-finished"]);
    assert.equal(tools[0].tool_call_id, "tc-1");
    assert.equal(tools[0].tool_name, "search");
    assert.deepEqual(tools[0].input, { query: "v3" });
    assert.equal(tools[1].output.status, "success");
    assert.equal(tools[1].output.content, "result for 'v3'");
    assert.equal(evs.find(rootTerminal).params.data.event, "completed");
    const out = await thread.output;
    assert.deepEqual(out.messages.map((m) => m.content), ["search for v3", "", "result for 'v3'", "done."]);
  } finally {
    await thread.close();
  }
});

test("input.inject: a message sent while the agent runs is added after its run (a queued run)", async () => {
  const thread = client.threads.stream({ assistantId: "tools_agent" });
  try {
    await thread.run.start({ input: { messages: [{ role: "human", content: "search for v3" }] } });
    await thread.input.inject({ namespace: [], message: { role: "user", content: "and be brief" } });
    let runs;
    for (let i = 0; i < 500; i++) {
      runs = await client.runs.list(thread.threadId);
      if (runs.length === 2 && runs.every((r) => r.status === "success")) break;
      await new Promise((ok) => setTimeout(ok, 20));
    }
    assert.deepEqual(runs.map((r) => r.status), ["success", "success"]);
    const state = await client.threads.getState(thread.threadId);
    assert.deepEqual(state.values.messages.filter((m) => m.type === "human").map((m) => m.content), ["search for v3", "and be brief"]);
    // A namespace below the root takes no input.
    await assert.rejects(thread.input.inject({ namespace: ["tools:1"], message: { role: "user", content: "x" } }), /root namespace/);
  } finally {
    await thread.close();
  }
});

test("deep_agent: the researcher subagent runs at one segment tools:<task_id>", async () => {
  const thread = client.threads.stream({ assistantId: "deep_agent" });
  try {
    await thread.run.start({ input: { messages: [{ role: "user", content: "research the v3 spec" }] } });
    const childDone = (e) => e.method === "messages" && e.params.namespace.length === 1 && e.params.data.event === "message-finish";
    const evs = await collect(thread, ["messages", "tasks", "tools", "lifecycle"], { namespaces: [[]] }, (all) => all.some(rootTerminal) && all.some(childDone));
    const started = evs.filter((e) => e.method === "lifecycle" && e.params.data.event === "started" && e.params.namespace.length === 1);
    assert.equal(started.length, 1, JSON.stringify(evs.map((e) => [e.method, e.params.namespace])));
    assert.match(started[0].params.namespace[0], /^tools:/);
    const childText = evs.filter((e) => e.method === "messages" && e.params.namespace.length === 1 && e.params.data.event === "content-block-delta")
      .map((e) => e.params.data.delta.text).join("");
    assert.equal(childText, "v3 streaming is event-typed and thread-centric.");
    const out = await thread.output;
    assert.equal(out.messages.at(-1).content, "Research complete.");
  } finally {
    await thread.close();
  }
});

test("factory_agent: built per call, told it runs for threads.create_run", async () => {
  const thread = client.threads.stream({ assistantId: "factory_agent" });
  try {
    await thread.run.start({ input: { text: "hi" } });
    const out = await thread.output;
    assert.deepEqual(out, { text: "hi echoed", access_context: "threads.create_run", is_for_execution: true });
  } finally {
    await thread.close();
  }
  const drawing = await client.assistants.getGraph("factory_agent");
  assert.ok(drawing.nodes.some((n) => n.id === "echo"));
});

test("cancel: runs.cancel on the run run.start started ends it with a failed lifecycle", async () => {
  const thread = client.threads.stream({ assistantId: "agent" });
  try {
    await thread.run.start({ input: agentInput });
    await waitFor(() => thread.interrupted);
    const id = thread.interrupts[0].interruptId;
    // Resume, then cancel the resumed run at once (it may already be done).
    const seen = [];
    const off = thread.onEvent((e) => seen.push(e));
    await thread.input.respond({ interrupt_id: id, namespace: [], response: "yes" });
    const runs = await client.runs.list(thread.threadId);
    assert.equal(runs.length, 2, "input.respond started an ordinary run");
    await client.runs.cancel(thread.threadId, runs[0].run_id, false);
    await waitFor(() => seen.some(rootTerminal));
    off();
    const end = seen.find(rootTerminal).params.data;
    const run = await client.runs.get(thread.threadId, runs[0].run_id);
    // Cancelled before it finished: failed ("Run was cancelled."), else completed.
    assert.equal(end.event, run.status === "interrupted" ? "failed" : "completed");
  } finally {
    await thread.close();
  }
});

// Raw SSE: two subscribers and a reconnect with since each get every event
// exactly once, the same as a full replay (since 0).
async function sse(threadId, body, signal) {
  const res = await fetch(`${server.url}/threads/${threadId}/stream/events`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal,
  });
  assert.equal(res.status, 200);
  return res.body.pipeThrough(new TextDecoderStream());
}

async function readEvents(stream, stop) {
  const out = [];
  let buf = "";
  for await (const chunk of stream) {
    buf += chunk;
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = frame.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (!data) continue;
      const ev = JSON.parse(data);
      out.push(ev);
      if (stop(ev, out)) return out;
    }
  }
  return out;
}

test("two subscribers and a reconnect with since lose and duplicate nothing (vs a full replay)", async () => {
  const threadId = crypto.randomUUID();
  const channels = ["values", "updates", "messages", "lifecycle", "input", "tasks", "custom", "checkpoints"];
  const ctrl = new AbortController();
  try {
    const a = readEvents(await sse(threadId, { channels }, ctrl.signal), (e) => rootTerminal(e));
    const b = readEvents(await sse(threadId, { channels }, ctrl.signal), (e) => rootTerminal(e));
    // c drops after the interrupt and reconnects with since = the last seq it saw.
    const cFirst = readEvents(await sse(threadId, { channels }, ctrl.signal), (e) => e.method === "input.requested");
    const res = await fetch(`${server.url}/threads/${threadId}/commands`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: 1, method: "run.start", params: { assistant_id: "agent", input: agentInput } }),
    });
    const reply = await res.json();
    assert.equal(reply.type, "success");
    assert.equal(typeof reply.meta.applied_through_seq, "number");
    const c1 = await cFirst;
    const intr = c1.at(-1).params.data.interrupt_id;
    const c2 = readEvents(await sse(threadId, { channels, since: c1.at(-1).seq }, ctrl.signal), (e) => rootTerminal(e));
    const res2 = await fetch(`${server.url}/threads/${threadId}/commands`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: 2, method: "input.respond", params: { interrupt_id: intr, namespace: [], response: "yes" } }),
    });
    assert.equal((await res2.json()).type, "success");
    const [ea, eb, ec2] = await Promise.all([a, b, c2]);
    const full = await readEvents(await sse(threadId, { channels, since: 0 }, ctrl.signal), (e, out) => out.length === ea.length && rootTerminal(e));
    const ids = (evs) => evs.map((e) => e.event_id);
    assert.deepEqual(ids(ea), ids(full));
    assert.deepEqual(ids(eb), ids(full));
    assert.deepEqual([...ids(c1), ...ids(ec2)], ids(full));
    assert.equal(new Set(ids(full)).size, full.length);
    const seqs = full.map((e) => e.seq);
    assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y));
  } finally {
    ctrl.abort();
  }
});

test("websocket transport (v2-websocket): events until the interrupt, input.respond, completed, each event once", async () => {
  const flags = typeof WebSocket === "undefined" ? ["--experimental-websocket"] : [];
  const { stdout } = await promisify(execFile)(process.execPath, [...flags, new URL("./v2-websocket-client.mjs", import.meta.url).pathname, server.url], { timeout: 60000 });
  const got = JSON.parse(stdout.trim().split("\n").at(-1));
  assert.deepEqual(got.steps.slice(0, 5), ["stream_message", "stream_message", "call_tool", "call_tool", "ask_human"]);
  assert.equal(got.text, "Hello, world!");
  assert.equal(new Set(got.ids).size, got.ids.length, "no event twice");
});
