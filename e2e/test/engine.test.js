// Engine parity with LangGraph seen through the SDK: the shapes of task
// results and checkpoint tasks in the stream modes, and one truth for a
// thread's state between getState and getHistory.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, collect } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

const human = (content) => ({ type: "human", content });

test("tasks and debug: a task result is an object channel -> value", async () => {
  const thread = await client.threads.create();
  const chunks = await collect(client.runs.stream(thread.thread_id, "agent", {
    input: { messages: [human("foo")] }, streamMode: ["tasks", "debug"], config: { configurable: { user_id: "u" } },
  }));
  const results = chunks.filter((c) => c.event === "tasks" && "result" in c.data).map((c) => c.data);
  assert.deepEqual(results.map((r) => r.name), ["agent", "tool", "agent"]);
  for (const r of results) {
    assert.equal(typeof r.result, "object");
    assert.ok(!Array.isArray(r.result), "LangGraph's map_task_result_writes gives an object");
  }
  assert.deepEqual(Object.keys(results[0].result).sort(), ["interrupt", "messages"]);
  assert.equal(results[0].result.interrupt, false);
  assert.deepEqual(results[1].result.sharedStateFromStoreConfig, { id: "u" });
  const debugResults = chunks.filter((c) => c.event === "debug" && c.data.type === "task_result").map((c) => c.data.payload);
  assert.deepEqual(debugResults, results);
});

test("checkpoints and debug: every task carries state; a subgraph task points at its namespace", async () => {
  const thread = await client.threads.create();
  const chunks = await collect(client.runs.stream(thread.thread_id, "weather", {
    input: { messages: [human("what's the weather in sf")] }, streamMode: ["checkpoints", "debug"],
  }));
  const cps = chunks.filter((c) => c.event === "checkpoints").map((c) => c.data);
  const debug = chunks.filter((c) => c.event === "debug" && c.data.type === "checkpoint").map((c) => c.data.payload);
  assert.equal(cps.length, 3);
  assert.equal(debug.length, 3);
  for (const cp of cps.slice(0, 2)) {
    for (const t of cp.tasks) {
      assert.ok("state" in t, `task ${t.name} has state`);
      assert.equal(t.state, null);
      assert.deepEqual(t.interrupts, []);
    }
  }
  const [sub] = cps[2].tasks;
  assert.equal(sub.name, "weather_graph");
  const ref = { thread_id: thread.thread_id, checkpoint_ns: `weather_graph:${sub.id}` };
  assert.deepEqual(sub.state, { configurable: ref });
  // the debug mode turns the subgraph's config into a checkpoint, as the API server does
  const [dsub] = debug[2].tasks;
  assert.deepEqual(dsub.checkpoint, ref);
  assert.ok(!("state" in dsub));
  assert.equal(debug[0].tasks[0].state, null);

  // the thread state's pointer to the subgraph has no null members
  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(state.tasks[0].checkpoint, ref);
});

test("a failed run: getState and getHistory agree, the error in tasks[].error", async () => {
  const thread = await client.threads.create();
  await assert.rejects(client.runs.wait(thread.thread_id, "error", { input: { messages: [human("x")] } }),
    /CustomError: Boo!/);
  const state = await client.threads.getState(thread.thread_id);
  const [latest] = await client.threads.getHistory(thread.thread_id, { limit: 1 });
  assert.deepEqual(latest, state);
  assert.deepEqual(state.next, ["error_node"]);
  assert.equal(state.tasks[0].error, "CustomError('Boo!')");
});

test("input a reducer rejects: the error is the __start__ task's, in state and history alike", async () => {
  const thread = await client.threads.create();
  await assert.rejects(client.runs.wait(thread.thread_id, "agent", { input: { messages: [{ type: "bogus", content: "x" }] } }),
    /InvalidUpdateError: /);
  const state = await client.threads.getState(thread.thread_id);
  const history = await client.threads.getHistory(thread.thread_id);
  assert.deepEqual(history[0], state);
  assert.deepEqual(state.next, ["__start__"]);
  assert.equal(state.tasks.length, 1);
  assert.match(state.tasks[0].error, /^InvalidUpdateError\(/);
  assert.deepEqual(state.values.messages, []);
  const th = await client.threads.get(thread.thread_id);
  assert.equal(th.status, "error");
});

test("a Command.update the channels reject fails the run and changes nothing", async () => {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, "agent", { input: { messages: [human("foo")], interrupt: true } });
  const before = await client.threads.getState(thread.thread_id);
  assert.deepEqual(before.next, ["agent"]);
  await assert.rejects(client.runs.wait(thread.thread_id, "agent", {
    command: { update: { messages: [{ type: "remove", id: "nope" }] }, resume: "go on" },
  }), /ValueError: Attempting to delete a message with an ID that doesn't exist \('nope'\)/);
  assert.deepEqual(await client.threads.getState(thread.thread_id), before);
  const out = await client.runs.wait(thread.thread_id, "agent", { command: { resume: "go on" } });
  assert.deepEqual(out.messages.map((m) => m.content), ["foo", "begin", "tool_call__begin", "end"]);
});

test("Overwrite replaces a reducer channel: {\"__overwrite__\": value}", async () => {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, "agent", { input: { messages: [human("foo")] } });
  assert.equal((await client.threads.getState(thread.thread_id)).values.messages.length, 4);
  await client.runs.wait(thread.thread_id, "agent", {
    command: { update: { messages: { __overwrite__: [human("start over")] } } },
  });
  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(state.values.messages.map((m) => m.content), ["start over"]);
  assert.equal(typeof state.values.messages[0].id, "string");
});
