// The JS RemoteGraph (@langchain/langgraph/remote) driving a hosted graph:
// invoke, stream in several modes, state and history through the graph.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { RemoteGraph } from "@langchain/langgraph/remote";
import { startServer, collect } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

const config = { configurable: { user_id: "123" } };
const contents = (values) => values.messages.map((m) => m.content);

test("stream values, stateless", async () => {
  const graph = new RemoteGraph({ graphId: "agent", client, config });
  const chunks = await collect(await graph.stream(
    { messages: [{ type: "human", content: "foo", id: "initial-message" }] },
    { streamMode: "values", ...config },
  ));
  assert.deepEqual(chunks.map(contents), [
    ["foo"],
    ["foo", "begin"],
    ["foo", "begin", "tool_call__begin"],
    ["foo", "begin", "tool_call__begin", "end"],
  ]);
  assert.equal(chunks[0].messages[0].id, "initial-message");
});

test("invoke on a thread it creates, then state and history through the graph", async () => {
  const graph = new RemoteGraph({ graphId: "agent", url: server.url, apiKey: null });
  const threadId = randomUUID();
  const cfg = { configurable: { thread_id: threadId, user_id: "u1" } };
  const out = await graph.invoke({ messages: [{ type: "human", content: "hi" }] }, cfg);
  assert.deepEqual(contents(out), ["hi", "begin", "tool_call__begin", "end"]);
  assert.deepEqual(out.sharedStateFromStoreConfig, { id: "u1" });

  const thread = await client.threads.get(threadId);
  assert.equal(thread.status, "idle");
  assert.deepEqual(contents(thread.values), contents(out));

  const state = await graph.getState(cfg);
  assert.deepEqual(contents(state.values), contents(out));
  assert.deepEqual(state.next, []);
  assert.equal(state.config.configurable.thread_id, threadId);
  const history = await collect(graph.getStateHistory(cfg));
  assert.equal(history.length, 5);
  assert.deepEqual(history.map((h) => h.metadata.step), [3, 2, 1, 0, -1]);

  // a second invoke continues the same remote thread
  const again = await graph.invoke({ messages: [{ type: "human", content: "more" }] }, cfg);
  assert.equal(again.messages.length, 8);
});

test("stream updates and several modes at once", async () => {
  const graph = new RemoteGraph({ graphId: "agent", client });
  const updates = await collect(await graph.stream({ messages: [{ type: "human", content: "foo" }] }, { streamMode: "updates", ...config }));
  assert.deepEqual(updates.map((u) => Object.keys(u)), [["agent"], ["tool"], ["agent"]]);
  assert.equal(updates[1].tool.messages[0].content, "tool_call__begin");

  const mixed = await collect(await graph.stream({ messages: [{ type: "human", content: "foo" }] }, { streamMode: ["updates", "values"], ...config }));
  assert.deepEqual(mixed.map(([mode]) => mode), ["values", "updates", "values", "updates", "values", "updates", "values"]);
  assert.deepEqual(contents(mixed.at(-1)[1]), ["foo", "begin", "tool_call__begin", "end"]);
});

test("a breakpoint surfaces as a GraphInterrupt; continuing runs remotely", async () => {
  const graph = new RemoteGraph({ graphId: "weather", client });
  const threadId = randomUUID();
  const cfg = { configurable: { thread_id: threadId } };
  const seen = [];
  await assert.rejects(async () => {
    for await (const chunk of await graph.stream({ messages: [{ role: "human", content: "SF" }] }, { ...cfg, streamMode: "values" })) seen.push(chunk);
  }, (e) => e.name === "GraphInterrupt" && Array.isArray(e.interrupts) && e.interrupts.length === 0);
  assert.equal(seen.at(-1).route, "weather");
  assert.equal((await client.threads.get(threadId)).status, "interrupted");
  const state = await graph.getState(cfg);
  assert.deepEqual(state.next, ["weather_graph"]);
  const out = await graph.invoke(null, cfg);
  assert.deepEqual(contents(out), ["SF", "It's sunny in San Francisco!"]);
});
