// runs.stream in every stream mode, with and without subgraphs: event names
// and order, SSE ids, payload shapes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, collect } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

const config = { configurable: { user_id: "123" } };
const input = { messages: [{ type: "human", content: "foo", id: "initial-message" }] };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// stream runs the agent on a new thread and returns the thread id and chunks.
async function stream(streamMode, opts = {}) {
  const thread = await client.threads.create();
  const chunks = await collect(client.runs.stream(thread.thread_id, opts.graph ?? "agent", {
    input: opts.input ?? input, streamMode, config, ...opts.extra,
  }));
  return { threadId: thread.thread_id, chunks };
}

// checkRun asserts the metadata event opens the stream with sequential ids
// and that the run it names succeeded.
async function checkRun(threadId, chunks, status = "success") {
  assert.equal(chunks[0].event, "metadata");
  assert.deepEqual(Object.keys(chunks[0].data).sort(), ["attempt", "run_id"]);
  assert.equal(chunks[0].data.attempt, 1);
  assert.deepEqual(chunks.map((c) => c.id), chunks.map((_, i) => String(i)));
  const run = await client.runs.get(threadId, chunks[0].data.run_id);
  assert.equal(run.status, status);
  return run;
}

const names = (chunks) => chunks.map((c) => c.event);

test("values: input state then one per superstep, message ids stable", async () => {
  const { threadId, chunks } = await stream("values");
  await checkRun(threadId, chunks);
  assert.deepEqual(names(chunks), ["metadata", "values", "values", "values", "values"]);
  let previous = [];
  for (const c of chunks.slice(1)) {
    const ids = c.data.messages.map((m) => m.id);
    assert.deepEqual(ids.slice(0, -1), previous);
    previous = ids;
  }
  const last = chunks.at(-1).data;
  assert.deepEqual(last.messages.map((m) => m.content), ["foo", "begin", "tool_call__begin", "end"]);
  assert.deepEqual(last.messages[0], { content: "foo", additional_kwargs: {}, response_metadata: {}, type: "human", id: "initial-message" });
  assert.deepEqual(Object.keys(last.messages[1]).sort(),
    ["additional_kwargs", "content", "id", "invalid_tool_calls", "response_metadata", "tool_call_chunks", "tool_calls", "type"]);
  assert.equal(last.messages[2].tool_call_id, "tool_call_id");
  // channels never written are absent, as in LangGraph
  assert.deepEqual(Object.keys(last).sort(), ["interrupt", "messages", "sharedStateFromStoreConfig"]);
  assert.deepEqual(last.sharedStateFromStoreConfig, { id: "123" });
  assert.deepEqual((await client.threads.getState(threadId)).values, last);
});

test("updates: one event per node", async () => {
  const { threadId, chunks } = await stream("updates");
  await checkRun(threadId, chunks);
  assert.deepEqual(names(chunks), ["metadata", "updates", "updates", "updates"]);
  assert.deepEqual(chunks.slice(1).map((c) => Object.keys(c.data)), [["agent"], ["tool"], ["agent"]]);
  assert.equal(chunks[1].data.agent.interrupt, false);
  assert.deepEqual(chunks[1].data.agent.messages.map((m) => [m.type, m.content]), [["ai", "begin"]]);
  assert.deepEqual(chunks[2].data.tool.messages.map((m) => [m.type, m.content]), [["tool", "tool_call__begin"]]);
});

test("messages-tuple: a chunk per character, then the tool message", async () => {
  const { threadId, chunks } = await stream("messages-tuple");
  await checkRun(threadId, chunks);
  assert.deepEqual([...new Set(names(chunks))], ["metadata", "messages"]);
  const msgs = chunks.filter((c) => c.event === "messages");
  assert.deepEqual(msgs.map((c) => c.data[0].content), [..."begin", "tool_call__begin", ..."end"]);
  const begin = msgs.slice(0, 5).map((c) => c.data[0]);
  assert.ok(begin.every((m) => m.id === begin[0].id && m.type === "AIMessageChunk"));
  assert.match(begin[0].id, UUID);
  const end = msgs.slice(6).map((c) => c.data[0]);
  assert.ok(end.every((m) => m.id === end[0].id));
  assert.notEqual(end[0].id, begin[0].id);
  assert.equal(msgs[5].data[0].type, "tool");

  const [, meta] = msgs[0].data;
  assert.equal(meta.langgraph_node, "agent");
  assert.equal(meta.langgraph_step, 1);
  assert.deepEqual(meta.langgraph_triggers, ["branch:to:agent"]);
  assert.deepEqual(meta.langgraph_path, ["__pregel_pull", "agent"]);
  assert.match(meta.langgraph_checkpoint_ns, /^agent:/);
  assert.deepEqual(meta.tags, []);
  assert.equal(msgs[5].data[1].langgraph_node, "tool");
  assert.equal(msgs[6].data[1].langgraph_step, 3);

  // the state's AI messages carry the streamed ids
  const state = await client.threads.getState(threadId);
  assert.equal(state.values.messages[1].id, begin[0].id);
  assert.equal(state.values.messages[3].id, end[0].id);
  assert.deepEqual(state.values.messages[1].tool_call_chunks, []);
});

test("messages (legacy): metadata, accumulated partials, completes", async () => {
  const { threadId, chunks } = await stream("messages");
  await checkRun(threadId, chunks);
  assert.deepEqual(new Set(names(chunks)), new Set(["metadata", "messages/metadata", "messages/partial", "messages/complete"]));
  const partials = {};
  const completes = [];
  const announced = [];
  for (const c of chunks.slice(1)) {
    if (c.event === "messages/metadata") {
      const [id] = Object.keys(c.data);
      announced.push(id);
      assert.ok(c.data[id].metadata.langgraph_node);
    } else if (c.event === "messages/partial") {
      const [m] = c.data;
      assert.ok(announced.includes(m.id), "metadata comes before a message's first partial");
      partials[m.id] = m.content;
    } else {
      completes.push(c.data[0]);
    }
  }
  assert.deepEqual(Object.values(partials), ["begin", "end"]);
  assert.deepEqual(completes.map((m) => [m.type, m.content]), [["ai", "begin"], ["tool", "tool_call__begin"], ["ai", "end"]]);
  for (const m of completes.filter((m) => m.type === "ai")) assert.equal(m.content, partials[m.id]);
  assert.deepEqual(chunks.filter((c) => c.event === "messages/partial").map((c) => c.data[0].content).slice(0, 5),
    ["b", "be", "beg", "begi", "begin"]);
  assert.equal(chunks.at(-1).event, "messages/complete");
  assert.equal(chunks.at(-1).data[0].content, "end");
  assert.equal(new Set(announced).size, 3);
});

test("messages and values together", async () => {
  const { threadId, chunks } = await stream(["messages", "values"]);
  await checkRun(threadId, chunks);
  assert.deepEqual(new Set(names(chunks)), new Set(["metadata", "messages/metadata", "messages/partial", "messages/complete", "values"]));
  assert.equal(chunks.filter((c) => c.event === "values").length, 4);
  const lastValues = chunks.findLast((c) => c.event === "values").data;
  assert.deepEqual(lastValues.messages.map((m) => m.content), ["foo", "begin", "tool_call__begin", "end"]);
  assert.equal(chunks.filter((c) => c.event === "error").length, 0);
});

test("events: chain and chat model events, graph first and last", async () => {
  const { threadId, chunks } = await stream("events");
  await checkRun(threadId, chunks);
  assert.deepEqual([...new Set(names(chunks))], ["metadata", "events"]);
  const events = chunks.slice(1).map((c) => c.data);
  assert.deepEqual(new Set(events.map((e) => e.event)),
    new Set(["on_chain_start", "on_chain_end", "on_chat_model_start", "on_chat_model_stream", "on_chat_model_end"]));
  assert.equal(events[0].event, "on_chain_start");
  assert.equal(events.at(-1).event, "on_chain_end");
  assert.equal(events[0].run_id, events.at(-1).run_id);
  const streamed = events.filter((e) => e.event === "on_chat_model_stream").map((e) => e.data.chunk.content).join("");
  assert.equal(streamed, "beginend");
  const ends = events.filter((e) => e.event === "on_chat_model_end").map((e) => e.data.output.content);
  assert.deepEqual(ends, ["begin", "end"]);
  const nodeStarts = events.filter((e) => e.event === "on_chain_start" && e.metadata?.langgraph_node).map((e) => e.name);
  assert.deepEqual(nodeStarts, ["agent", "tool", "agent"]);
  for (const e of events) assert.equal(typeof e.run_id, "string");
});

test("debug: checkpoints match history; tasks and results pair up", async () => {
  const { threadId, chunks } = await stream("debug", { graph: "weather", input: { messages: [{ role: "human", content: "What's the weather in SF?" }] } });
  await checkRun(threadId, chunks);
  const debug = chunks.slice(1).map((c) => c.data);
  assert.ok(debug.every((d) => ["checkpoint", "task", "task_result"].includes(d.type) && typeof d.step === "number" && typeof d.timestamp === "string"));
  assert.deepEqual(debug.map((d) => d.type), ["checkpoint", "checkpoint", "task", "task_result", "checkpoint", "task", "task_result"]);
  const checkpoints = debug.filter((d) => d.type === "checkpoint").map((d) => d.payload);
  const history = (await client.threads.getHistory(threadId, { limit: checkpoints.length })).reverse();
  const pick = (i) => ({ step: i.metadata.step, checkpoint: i.checkpoint, parent_checkpoint: i.parent_checkpoint, next: i.next });
  assert.deepEqual(checkpoints.map(pick), history.map(pick));
  assert.deepEqual(checkpoints[0].config.configurable.checkpoint_id, history[0].checkpoint.checkpoint_id);
  const [task, result] = debug.filter((d) => d.type !== "checkpoint");
  assert.equal(task.payload.name, "router_node");
  assert.deepEqual(task.payload.triggers, ["branch:to:router_node"]);
  assert.equal(result.payload.id, task.payload.id);
  assert.deepEqual(result.payload.result, { route: "weather" });
  assert.equal(result.payload.error, null);
});

test("tasks and checkpoints", async () => {
  const { threadId, chunks } = await stream(["tasks", "checkpoints"]);
  await checkRun(threadId, chunks);
  const tasks = chunks.filter((c) => c.event === "tasks").map((c) => c.data);
  assert.deepEqual(tasks.map((t) => [t.name, "input" in t ? "start" : "end"]),
    [["agent", "start"], ["agent", "end"], ["tool", "start"], ["tool", "end"], ["agent", "start"], ["agent", "end"]]);
  for (let i = 0; i < tasks.length; i += 2) {
    assert.equal(tasks[i].id, tasks[i + 1].id);
    assert.deepEqual(tasks[i + 1].interrupts, []);
    assert.equal(tasks[i + 1].error, null);
  }
  assert.deepEqual(tasks[3].result.sharedStateFromStoreConfig, { id: "123" });
  const cps = chunks.filter((c) => c.event === "checkpoints").map((c) => c.data);
  const history = (await client.threads.getHistory(threadId)).reverse();
  assert.deepEqual(cps.map((c) => c.next), history.map((h) => h.next));
  assert.deepEqual(cps.map((c) => c.metadata.step), [-1, 0, 1, 2, 3]);
  assert.deepEqual(cps.map((c) => c.config.configurable.checkpoint_id), history.map((h) => h.checkpoint.checkpoint_id));
  assert.deepEqual(cps.at(-1).values, history.at(-1).values);
});

test("custom: what the node writes, in order", async () => {
  const { threadId, chunks } = await stream(["custom", "updates"], {
    input: { messages: [{ type: "human", content: "foo" }], sleep: { steps: 3, ms: 10 } },
  });
  await checkRun(threadId, chunks);
  assert.deepEqual(chunks.slice(1).map((c) => [c.event, c.data.type === "sleep" ? c.data : Object.keys(c.data)[0]]), [
    ["custom", { type: "sleep", step: 0 }],
    ["custom", { type: "sleep", step: 1 }],
    ["custom", { type: "sleep", step: 2 }],
    ["updates", "agent"],
    ["updates", "tool"],
    ["updates", "agent"],
  ]);
});

test("weather without subgraphs: breakpoint ends the stream with __interrupt__", async () => {
  const { threadId, chunks } = await stream(undefined, { graph: "weather", input: { messages: [{ role: "human", content: "SF", id: "initial-message" }] } });
  await checkRun(threadId, chunks);
  const sf = { content: "SF", additional_kwargs: {}, response_metadata: {}, type: "human", id: "initial-message" };
  assert.deepEqual(chunks.slice(1), [
    { event: "values", data: { messages: [sf] }, id: "1" },
    { event: "values", data: { messages: [sf], route: "weather" }, id: "2" },
    { event: "values", data: { __interrupt__: [] }, id: "3" },
  ]);
  assert.equal((await client.threads.get(threadId)).status, "interrupted");
});

test("weather with subgraphs: namespaced events, then continue", async () => {
  const thread = await client.threads.create();
  const first = await collect(client.runs.stream(thread.thread_id, "weather", {
    input: { messages: [{ role: "human", content: "SF", id: "initial-message" }] }, streamMode: ["values", "updates"], streamSubgraphs: true,
  }));
  await checkRun(thread.thread_id, first);
  const ns = first.find((c) => c.event.includes("|")).event.split("|")[1];
  assert.match(ns, /^weather_graph:[0-9a-f-]{36}$/);
  assert.deepEqual(names(first), [
    "metadata", "values", "updates", "values",
    `values|${ns}`, `updates|${ns}`, `values|${ns}`, `updates|${ns}`, `values|${ns}`,
    "updates", "values",
  ]);
  assert.deepEqual(first[5].data, { model_node: { city: "San Francisco" } });
  assert.deepEqual(first.at(-1).data, { __interrupt__: [] });
  const state = await client.threads.getState(thread.thread_id);
  assert.equal(`weather_graph:${state.tasks[0].id}`, ns);

  const cont = await collect(client.runs.stream(thread.thread_id, "weather", {
    input: null, streamMode: ["values", "updates"], streamSubgraphs: true,
  }));
  await checkRun(thread.thread_id, cont);
  assert.deepEqual(names(cont), ["metadata", "values", `values|${ns}`, `updates|${ns}`, `values|${ns}`, "updates", "values"]);
  const sunny = { content: "It's sunny in San Francisco!", additional_kwargs: {}, response_metadata: {}, type: "ai", tool_calls: [], invalid_tool_calls: [] };
  assert.equal(cont[3].data.weather_node.messages.length, 1);
  const { id, ...upd } = cont[3].data.weather_node.messages[0];
  assert.match(id, UUID);
  assert.deepEqual(upd, sunny);
  assert.deepEqual(Object.keys(cont[5].data), ["weather_graph"]);
  assert.deepEqual(cont.at(-1).data.messages.map((m) => m.content), ["SF", "It's sunny in San Francisco!"]);
  assert.equal(cont.at(-1).data.route, "weather");
  assert.equal((await client.threads.get(thread.thread_id)).status, "idle");

  // without subgraphs, no namespaced events
  const plain = await stream(["updates", "messages-tuple"], { graph: "weather", input: { messages: [{ role: "human", content: "SF" }] } });
  assert.ok(plain.chunks.every((c) => !c.event.includes("|")));
});

test("subgraph events in every mode carry the namespace", async () => {
  const modes = ["values", "updates", "debug", "tasks", "checkpoints", "custom", "messages-tuple"];
  const thread = await client.threads.create();
  const chunks = await collect(client.runs.stream(thread.thread_id, "weather", {
    input: { messages: [{ role: "human", content: "SF" }] }, streamMode: modes, streamSubgraphs: true,
  }));
  await checkRun(thread.thread_id, chunks);
  const namespaced = new Set(chunks.filter((c) => c.event.includes("|")).map((c) => c.event.split("|")[0]));
  assert.deepEqual([...namespaced].sort(), ["checkpoints", "debug", "tasks", "updates", "values"]);
  const root = new Set(chunks.filter((c) => !c.event.includes("|")).map((c) => c.event));
  assert.deepEqual([...root].sort(), ["checkpoints", "debug", "metadata", "tasks", "updates", "values"]);
});

test("agent_simple: Send to the tool, U+2028 survives SSE, x- headers reach the graph", async () => {
  const { threadId, chunks } = await stream(["updates", "values"], { graph: "agent_simple", input: { messages: [{ role: "human", content: "hi" }] } });
  await checkRun(threadId, chunks);
  assert.deepEqual(chunks.filter((c) => c.event === "updates").map((c) => Object.keys(c.data)[0]), ["agent", "tool", "agent"]);
  const last = chunks.at(-1).data.messages.at(-1);
  assert.equal(last.content, "end\u2028");
  assert.equal(last.type, "ai");
  // the agent stored the first human message under ["ALL"]/key_one
  assert.deepEqual((await client.store.getItem(["ALL"], "key_one")).value, { text: "hi" });

  const { Client } = await import("@langchain/langgraph-sdk");
  const withHeader = new Client({ apiUrl: server.url, apiKey: null, defaultHeaders: { "x-configurable-header": "extra-client" } });
  const out = await withHeader.runs.wait(null, "agent_simple", { input: { messages: [{ role: "human", content: "input" }] } });
  assert.deepEqual(out.messages.map((m) => m.content), ["input", "end: extra-client"]);
});
