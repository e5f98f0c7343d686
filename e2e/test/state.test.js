// Thread state, state updates (as_node, subgraph namespace), history
// (before, metadata), supersteps and copies, through the SDK's threads API.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, collect } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

const config = { configurable: { user_id: "123" } };
const contents = (values) => values.messages.map((m) => m.content);
const human = (content, id) => ({ type: "human", content, ...(id ? { id } : {}) });

test("state and history of an agent run: five checkpoints, newest first", async () => {
  const thread = await client.threads.create();
  assert.deepEqual(await client.threads.getHistory(thread.thread_id), []);
  const empty = await client.threads.getState(thread.thread_id);
  assert.deepEqual(empty.values, {});
  assert.deepEqual(empty.next, []);
  assert.equal(empty.checkpoint, null);

  await client.runs.wait(thread.thread_id, "agent", { input: { messages: [human("foo")] }, config });
  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(contents(state.values), ["foo", "begin", "tool_call__begin", "end"]);
  assert.deepEqual(state.next, []);
  assert.deepEqual(state.tasks, []);
  assert.equal(state.checkpoint.thread_id, thread.thread_id);
  assert.equal(state.checkpoint.checkpoint_ns, "");
  assert.equal(state.metadata.source, "loop");
  assert.equal(state.metadata.step, 3);

  const history = await client.threads.getHistory(thread.thread_id);
  assert.equal(history.length, 5);
  assert.deepEqual(history.map((h) => h.next), [[], ["agent"], ["tool"], ["agent"], ["__start__"]]);
  assert.deepEqual(history.map((h) => h.metadata.source), ["loop", "loop", "loop", "loop", "input"]);
  assert.deepEqual(history.map((h) => h.metadata.step), [3, 2, 1, 0, -1]);
  assert.deepEqual(history[0].checkpoint, state.checkpoint);
  for (let i = 0; i < 4; i++) {
    assert.equal(history[i].parent_checkpoint.checkpoint_id, history[i + 1].checkpoint.checkpoint_id);
  }
  assert.equal(history[4].parent_checkpoint, null);
  assert.deepEqual(history[4].values.messages, []);

  // by checkpoint id (string) and by checkpoint object
  const third = history[2];
  const byId = await client.threads.getState(thread.thread_id, third.checkpoint.checkpoint_id);
  assert.deepEqual(byId.values, third.values);
  assert.deepEqual(byId.next, ["tool"]);
  const byObj = await client.threads.getState(thread.thread_id, third.checkpoint);
  assert.deepEqual(byObj.checkpoint, third.checkpoint);

  // before and limit
  const older = await client.threads.getHistory(thread.thread_id, { before: { configurable: third.checkpoint }, limit: 10 });
  assert.deepEqual(older.map((h) => h.checkpoint.checkpoint_id), history.slice(3).map((h) => h.checkpoint.checkpoint_id));
  const two = await client.threads.getHistory(thread.thread_id, { limit: 2 });
  assert.deepEqual(two.map((h) => h.checkpoint.checkpoint_id), history.slice(0, 2).map((h) => h.checkpoint.checkpoint_id));

  // metadata filter: only the second run's checkpoints
  await client.runs.wait(thread.thread_id, "agent", { input: { messages: [human("bar")] }, metadata: { run_metadata: "second" }, config });
  const full = await client.threads.getHistory(thread.thread_id, { limit: 100 });
  assert.equal(full.length, 10);
  const filtered = await client.threads.getHistory(thread.thread_id, { metadata: { run_metadata: "second" } });
  assert.equal(filtered.length, 5);
  assert.equal(filtered.at(-1).values.messages.length, 4);
  assert.deepEqual(filtered.map((h) => h.metadata.step), [8, 7, 6, 5, 4]);
});

test("interrupt() inside a node: task interrupts, thread interrupts, resume", async () => {
  const thread = await client.threads.create();
  const out = await client.runs.wait(thread.thread_id, "agent", {
    input: { messages: [human("SF", "initial-message")], interrupt: true }, config,
  });
  assert.deepEqual(out.__interrupt__.map((i) => i.value), ["i want to interrupt"]);
  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(state.next, ["agent"]);
  assert.equal(state.tasks.length, 1);
  const [task] = state.tasks;
  assert.equal(task.name, "agent");
  assert.deepEqual(task.path, ["__pregel_pull", "agent"]);
  assert.equal(task.error, null);
  assert.equal(task.checkpoint, null);
  assert.equal(task.state, null);
  assert.equal(task.interrupts.length, 1);
  assert.equal(task.interrupts[0].value, "i want to interrupt");
  assert.equal(typeof task.interrupts[0].id, "string");
  assert.deepEqual(state.interrupts, task.interrupts);

  const t = await client.threads.get(thread.thread_id);
  assert.equal(t.status, "interrupted");
  assert.deepEqual(t.interrupts, { [task.id]: task.interrupts });

  const chunks = await collect(client.runs.stream(thread.thread_id, "agent", { command: { resume: "i want to resume" }, config }));
  assert.deepEqual(chunks.map((c) => c.event), ["metadata", "values", "values", "values", "values"]);
  assert.deepEqual(contents(chunks.at(-1).data), ["SF", "begin", "tool_call__begin", "end"]);
  assert.equal(chunks.at(-1).data.interrupt, false);
  const done = await client.threads.get(thread.thread_id);
  assert.equal(done.status, "idle");
  assert.deepEqual(done.interrupts, {});
});

test("breakpoint, update state as the last node, continue", async () => {
  const thread = await client.threads.create();
  const out = await client.runs.wait(thread.thread_id, "agent", {
    input: { messages: [human("foo", "initial-message")] }, interruptBefore: ["tool"], config,
  });
  assert.deepEqual(out, { __interrupt__: [] }, "the last values event of a breakpoint");
  const paused = await client.threads.get(thread.thread_id);
  assert.equal(paused.status, "interrupted");
  assert.deepEqual(paused.interrupts, {});
  assert.deepEqual(contents(paused.values), ["foo", "begin"]);

  const last = paused.values.messages.at(-1);
  const res = await client.threads.updateState(thread.thread_id, { values: { messages: [{ ...last, content: "modified" }] } });
  assert.equal(res.checkpoint.thread_id, thread.thread_id);
  assert.equal(res.checkpoint.checkpoint_ns, "");

  const st = await client.threads.getState(thread.thread_id);
  assert.deepEqual(st.checkpoint, res.checkpoint);
  assert.deepEqual(contents(st.values), ["foo", "modified"]);
  assert.equal(st.values.messages[1].id, last.id, "a message with a known id is replaced");
  assert.deepEqual(st.next, ["tool"]);
  assert.equal(st.metadata.source, "update");
  assert.deepEqual(st.tasks.map((t) => [t.name, t.error, t.interrupts]), [["tool", null, []]]);
  assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");

  const cont = await client.runs.wait(thread.thread_id, "agent", { input: null, config });
  assert.deepEqual(contents(cont), ["foo", "modified", "tool_call__modified", "end"]);
  const history = await client.threads.getHistory(thread.thread_id);
  assert.equal(history.length, 6);
  assert.deepEqual(history.map((h) => h.metadata.source), ["loop", "loop", "update", "loop", "loop", "input"]);
});

test("update state as_node picks the next node; busy thread refuses updates", async () => {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, "agent", { input: { messages: [human("foo")] }, config });
  // as if "agent" had answered: the conditional edge sends "begin" to the tool
  await client.threads.updateState(thread.thread_id, { values: { messages: [{ type: "ai", content: "begin" }] }, asNode: "agent" });
  let st = await client.threads.getState(thread.thread_id);
  assert.deepEqual(st.next, ["tool"]);
  assert.equal(st.metadata.source, "update");
  // as_node tool: the agent runs next
  await client.threads.updateState(thread.thread_id, { values: { messages: [{ type: "tool", content: "x", tool_call_id: "c" }] }, asNode: "tool" });
  st = await client.threads.getState(thread.thread_id);
  assert.deepEqual(st.next, ["agent"]);
  await assert.rejects(client.threads.updateState(thread.thread_id, { values: {}, asNode: "nope" }), (e) => e.status >= 400 && e.status < 500);

  const run = await client.runs.create(thread.thread_id, "agent_simple", { input: { messages: [human("later")] }, afterSeconds: 30 });
  await assert.rejects(
    client.threads.updateState(thread.thread_id, { values: { messages: [{ type: "ai", content: "Sisyphus" }] }, asNode: "agent" }),
    (e) => e.status === 409,
  );
  await client.runs.cancel(thread.thread_id, run.run_id);
  assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "interrupted");
  assert.ok(!JSON.stringify(await client.threads.getState(thread.thread_id)).includes("Sisyphus"));
});

test("weather subgraph: breakpoint state, subgraphs=true, update by namespace, inner history", async () => {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, "weather", { input: { messages: [{ role: "human", content: "SF", id: "initial-message" }] } });
  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(state.next, ["weather_graph"]);
  assert.equal(state.tasks.length, 1);
  const [task] = state.tasks;
  assert.equal(task.name, "weather_graph");
  assert.deepEqual(task.path, ["__pregel_pull", "weather_graph"]);
  assert.deepEqual(task.interrupts, []);
  assert.equal(task.state, null);
  assert.equal(task.checkpoint.thread_id, thread.thread_id);
  assert.equal(task.checkpoint.checkpoint_ns, `weather_graph:${task.id}`);
  assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");

  const deep = await client.threads.getState(thread.thread_id, undefined, { subgraphs: true });
  const sub = deep.tasks[0].state;
  assert.equal(deep.tasks[0].checkpoint, null);
  assert.deepEqual(sub.next, ["weather_node"]);
  assert.equal(sub.values.city, "San Francisco");
  assert.deepEqual(contents(sub.values), ["SF"]);
  assert.deepEqual(sub.tasks.map((t) => [t.name, t.path]), [["weather_node", ["__pregel_pull", "weather_node"]]]);

  const res = await client.threads.updateState(thread.thread_id, { values: { city: "LA" }, checkpoint: task.checkpoint });
  assert.equal(res.checkpoint.checkpoint_ns, task.checkpoint.checkpoint_ns);
  const inner = await client.threads.getState(thread.thread_id, task.checkpoint);
  assert.equal(inner.values.city, "LA");
  assert.deepEqual(inner.next, ["weather_node"]);

  const out = await client.runs.wait(thread.thread_id, "weather", { input: null });
  assert.deepEqual(contents(out), ["SF", "It's sunny in LA!"]);
  assert.equal(out.route, "weather");
  assert.equal((await client.threads.get(thread.thread_id)).status, "idle");

  const history = await client.threads.getHistory(thread.thread_id);
  assert.deepEqual(history.map((h) => h.next), [[], ["weather_graph"], ["router_node"], ["__start__"]]);
  const innerHistory = await client.threads.getHistory(thread.thread_id, { checkpoint: task.checkpoint });
  assert.equal(innerHistory.length, 5);
  assert.deepEqual(innerHistory[0].next, []);
  assert.equal(innerHistory[0].values.messages.length, 2);
  assert.deepEqual(innerHistory.at(-1).next, ["__start__"]);
});

test("supersteps rebuild a thread's history; copy keeps state and history", async () => {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, "agent", { input: { messages: [human("foo")] }, config });
  const history = await client.threads.getHistory(thread.thread_id);

  // the input, then one superstep per node that ran, with its update
  const msgs = history[0].values.messages;
  const input = { messages: [human("foo")] };
  const supersteps = [
    { updates: [{ asNode: "__input__", values: input }] },
    { updates: [{ asNode: "__start__", values: input }] },
    { updates: [{ asNode: "agent", values: { messages: [msgs[1]] } }] },
    { updates: [{ asNode: "tool", values: { messages: [msgs[2]] } }] },
    { updates: [{ asNode: "agent", values: { messages: [msgs[3]] } }] },
  ];
  const clone = await client.threads.create({ graphId: "agent", supersteps });
  const cloned = await client.threads.getHistory(clone.thread_id);
  assert.deepEqual(cloned.map((h) => h.next), history.map((h) => h.next));
  assert.deepEqual(cloned.map((h) => contents(h.values)), history.map((h) => contents(h.values)));
  assert.deepEqual(contents((await client.threads.get(clone.thread_id)).values), ["foo", "begin", "tool_call__begin", "end"]);

  const copy = await client.threads.copy(thread.thread_id);
  const [orig, copied] = await Promise.all([client.threads.getState(thread.thread_id), client.threads.getState(copy.thread_id)]);
  assert.deepEqual(copied.values, orig.values);
  assert.deepEqual(copied.checkpoint, { ...orig.checkpoint, thread_id: copy.thread_id });
  assert.deepEqual(copied.parent_checkpoint, { ...orig.parent_checkpoint, thread_id: copy.thread_id });
  assert.equal(orig.metadata.thread_id, thread.thread_id);
  assert.deepEqual(copied.metadata, { ...orig.metadata, thread_id: copy.thread_id });
  const copiedHistory = await client.threads.getHistory(copy.thread_id);
  assert.deepEqual(copiedHistory.map((h) => h.checkpoint.checkpoint_id), history.map((h) => h.checkpoint.checkpoint_id));

  // a run on the copy leaves the original untouched
  await client.runs.wait(copy.thread_id, "agent", { input: { messages: [human("bar")] }, config });
  assert.deepEqual(contents((await client.threads.getState(copy.thread_id)).values),
    ["foo", "begin", "tool_call__begin", "end", "bar", "begin", "tool_call__begin", "end"]);
  assert.deepEqual(await client.threads.getState(thread.thread_id), orig);
});

test("dynamic graph: built per run and rebuilt from the thread's config on update", async () => {
  const a = await client.assistants.create({ graphId: "dynamic", config: { configurable: { nodeName: "assistant" } } });
  const thread = await client.threads.create({ graphId: "dynamic" });
  const chunks = await collect(client.runs.stream(thread.thread_id, a.assistant_id, {
    input: { messages: ["input"], configurable: { nodeName: "ignored" } }, streamMode: ["updates"],
  }));
  assert.deepEqual(chunks.filter((c) => c.event === "updates").map((c) => c.data), [{ assistant: { node: "assistant", messages: ["assistant"] } }]);

  await client.threads.updateState(thread.thread_id, { values: { messages: "update" }, asNode: "assistant" });
  const st = await client.threads.getState(thread.thread_id);
  assert.deepEqual(st.values, { node: "assistant", messages: ["input", "assistant", "update"] });

  const stateless = await collect(client.runs.stream(null, "dynamic", {
    input: { messages: ["input"] }, config: { configurable: { nodeName: "runtime" } }, streamMode: ["updates"],
  }));
  assert.deepEqual(stateless.filter((c) => c.event === "updates").flatMap((c) => Object.keys(c.data)), ["runtime"]);
  const dflt = await client.runs.wait(null, "dynamic", { input: { messages: ["x"] } });
  assert.deepEqual(dflt, { node: "default", messages: ["x", "default"] });
});
