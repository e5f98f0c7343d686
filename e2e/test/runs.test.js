// Run lifecycle through the SDK: wait, background + join, resumable
// joinStream, cancel, multitask strategies, breakpoints and interrupts,
// errors.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { startServer, collect } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

const config = { configurable: { user_id: "123" } };
const human = (content, id) => ({ role: "human", content, ...(id ? { id } : {}) });
const contents = (values) => values.messages.map((m) => m.content);

// untilStatus polls a run until pred(status) holds (runs move on their own;
// polling is how an SDK client observes that).
async function untilStatus(threadId, runId, pred, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await client.runs.get(threadId, runId);
    if (pred(run.status)) return run.status;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
    await delay(25);
  }
}
const finished = (s) => !["pending", "running"].includes(s);

test("wait returns the final values; the thread is idle", async () => {
  const thread = await client.threads.create();
  const out = await client.runs.wait(thread.thread_id, "agent", { input: { messages: [human("foo")] }, config });
  assert.deepEqual(contents(out), ["foo", "begin", "tool_call__begin", "end"]);
  const t = await client.threads.get(thread.thread_id);
  assert.equal(t.status, "idle");
  assert.deepEqual(t.values, out);
  assert.equal(t.metadata.graph_id, "agent");
  const runs = await client.runs.list(thread.thread_id);
  assert.equal(runs.length, 1);
  assert.equal(runs[0].status, "success");
  assert.equal(runs[0].assistant_id, "fe096781-5601-53d2-b2f6-0d3403f7e9ca");

  // stateless wait, and the U+2028 reply of agent_simple survives JSON
  const simple = await client.runs.wait(null, "agent_simple", { input: { messages: [human("hi")] } });
  assert.deepEqual(contents(simple), ["hi", "begin", "tool_call__begin", "end\u2028"]);
});

test("background run + join; list runs by status; cancel a pending run", async () => {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, "agent", { input: { messages: [human("foo")] }, config });
  assert.equal(run.thread_id, thread.thread_id);
  assert.ok(["pending", "running", "success"].includes(run.status));
  const out = await client.runs.join(thread.thread_id, run.run_id);
  assert.deepEqual(contents(out), ["foo", "begin", "tool_call__begin", "end"]);
  assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "success");
  // joining a finished run gives the thread's values
  assert.deepEqual(await client.runs.join(thread.thread_id, run.run_id), out);

  const later = await client.runs.create(thread.thread_id, "agent", { input: { messages: [human("bar")] }, config, afterSeconds: 30 });
  assert.equal(later.status, "pending");
  assert.equal((await client.runs.list(thread.thread_id)).length, 2);
  assert.deepEqual((await client.runs.list(thread.thread_id, { status: "pending" })).map((r) => r.run_id), [later.run_id]);
  assert.equal((await client.threads.get(thread.thread_id)).status, "busy");
  await client.runs.cancel(thread.thread_id, later.run_id);
  assert.deepEqual((await client.runs.list(thread.thread_id, { status: "interrupted" })).map((r) => r.run_id), [later.run_id]);
  assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
});

test("joinStream with lastEventId -1 replays a resumable run identically", async () => {
  const thread = await client.threads.create();
  let created;
  const runCreated = new Promise((ok) => { created = ok; });
  const source = collect(client.runs.stream(thread.thread_id, "agent", {
    input: { messages: [human("input")], sleep: { steps: 3, ms: 200 } },
    streamMode: ["values", "custom"], streamResumable: true, config, onRunCreated: created,
  }));
  const { run_id } = await runCreated;
  await delay(300); // join mid-run: part of the stream is replayed, the rest is live
  const join = await collect(client.runs.joinStream(thread.thread_id, run_id, { lastEventId: "-1" }));
  const original = await source;
  assert.deepEqual(join, original);
  assert.deepEqual(original.map((c) => c.event), ["metadata", "values", "custom", "custom", "custom", "values", "values", "values"]);
  assert.deepEqual(original.map((c) => c.id), original.map((_, i) => String(i)));
  assert.deepEqual(original.filter((c) => c.event === "custom").map((c) => c.data.step), [0, 1, 2]);

  // after the end, the log is still replayable, and from a given id
  const again = await collect(client.runs.joinStream(thread.thread_id, run_id, { lastEventId: "-1" }));
  assert.deepEqual(again, original);
  const tail = await collect(client.runs.joinStream(thread.thread_id, run_id, { lastEventId: "4" }));
  assert.deepEqual(tail.filter((c) => c.event !== "metadata"), original.slice(5));
});

test("cancel a running run: interrupt keeps it, rollback deletes it", async () => {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, "delay", { input: { messages: [], delay: 5000 } });
  await untilStatus(thread.thread_id, run.run_id, (s) => s === "running");
  await client.runs.cancel(thread.thread_id, run.run_id, true);
  assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "interrupted");
  // the thread's status follows its last checkpoint, which still schedules the node
  assert.deepEqual((await client.threads.getState(thread.thread_id)).next, ["long_running"]);
  assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");

  const second = await client.runs.create(thread.thread_id, "delay", { input: { messages: [], delay: 5000 } });
  await untilStatus(thread.thread_id, second.run_id, (s) => s === "running");
  await client.runs.cancel(thread.thread_id, second.run_id, true, "rollback");
  await assert.rejects(client.runs.get(thread.thread_id, second.run_id), (e) => e.status === 404);
  assert.deepEqual((await client.runs.list(thread.thread_id)).map((r) => r.run_id), [run.run_id]);
});

test("multitask reject: the second run is refused while the first runs", async () => {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, "agent", { input: { messages: [human("foo")], sleep: 1 }, config });
  await assert.rejects(
    client.runs.create(thread.thread_id, "agent", { input: { messages: [human("bar")] }, multitaskStrategy: "reject", config }),
    (e) => e.status === 409,
  );
  assert.equal(await untilStatus(thread.thread_id, run.run_id, finished), "success");
  assert.equal((await client.runs.list(thread.thread_id)).length, 1);
});

test("multitask interrupt: the first run is interrupted, the second continues from its checkpoint", async () => {
  const thread = await client.threads.create();
  const run1 = await client.runs.create(thread.thread_id, "agent", { input: { messages: [human("foo", "m1")], sleep: 2 }, config });
  await untilStatus(thread.thread_id, run1.run_id, (s) => s === "running");
  const run2 = await client.runs.create(thread.thread_id, "agent", {
    input: { messages: [human("bar", "m2")], sleep: 0 }, multitaskStrategy: "interrupt", config,
  });
  assert.equal(await untilStatus(thread.thread_id, run1.run_id, finished), "interrupted");
  assert.equal(await untilStatus(thread.thread_id, run2.run_id, finished), "success");
  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(contents(state.values), ["foo", "bar", "begin", "tool_call__begin", "end"]);
});

test("multitask rollback: the first run and its checkpoints are deleted", async () => {
  const thread = await client.threads.create();
  const run1 = await client.runs.create(thread.thread_id, "agent", { input: { messages: [human("foo", "m1")], sleep: 4 }, config });
  await untilStatus(thread.thread_id, run1.run_id, (s) => s === "running");
  const run2 = await client.runs.create(thread.thread_id, "agent", {
    input: { messages: [human("bar", "m2")] }, multitaskStrategy: "rollback", config,
  });
  assert.equal(await untilStatus(thread.thread_id, run2.run_id, finished), "success");
  await assert.rejects(client.runs.get(thread.thread_id, run1.run_id), (e) => e.status === 404);
  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(contents(state.values), ["bar", "begin", "tool_call__begin", "end"]);
  const history = await client.threads.getHistory(thread.thread_id);
  assert.ok(history.every((h) => h.metadata.run_id === run2.run_id), "no checkpoint of the rolled-back run is left");
});

test("multitask enqueue: the second run waits for the first", async () => {
  const thread = await client.threads.create();
  const run1 = await client.runs.create(thread.thread_id, "agent", { input: { messages: [human("foo", "m1")], sleep: 0.5 }, config });
  const run2 = await client.runs.create(thread.thread_id, "agent", {
    input: { messages: [human("bar", "m2")], sleep: 0 }, multitaskStrategy: "enqueue", config,
  });
  assert.equal(run2.status, "pending");
  const out = await client.runs.join(thread.thread_id, run2.run_id);
  assert.equal((await client.runs.get(thread.thread_id, run1.run_id)).status, "success");
  assert.equal((await client.runs.get(thread.thread_id, run2.run_id)).status, "success");
  assert.deepEqual(contents(out), ["foo", "begin", "tool_call__begin", "end", "bar", "begin", "tool_call__begin", "end"]);
});

test("interrupt_before then continue with input null", async () => {
  const thread = await client.threads.create();
  const first = await collect(client.runs.stream(thread.thread_id, "agent", {
    input: { messages: [human("foo", "initial-message")] }, interruptBefore: ["tool"], config,
  }));
  assert.deepEqual(first.map((c) => c.event), ["metadata", "values", "values", "values"]);
  assert.deepEqual(contents(first[2].data), ["foo", "begin"]);
  assert.deepEqual(first[3].data, { __interrupt__: [] });
  assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");
  assert.deepEqual((await client.threads.getState(thread.thread_id)).next, ["tool"]);

  const cont = await collect(client.runs.stream(thread.thread_id, "agent", { input: null, config }));
  assert.deepEqual(cont.map((c) => c.event), ["metadata", "values", "values", "values"]);
  assert.deepEqual(contents(cont.at(-1).data), ["foo", "begin", "tool_call__begin", "end"]);
  assert.notEqual(cont[0].data.run_id, first[0].data.run_id);
  assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
  assert.equal((await client.threads.getHistory(thread.thread_id)).length, 5);
});

test("interrupt() then command resume, with updates streamed", async () => {
  const thread = await client.threads.create();
  const first = await collect(client.runs.stream(thread.thread_id, "agent", {
    input: { messages: [human("SF")], interrupt: true }, streamMode: ["updates"], config,
  }));
  assert.deepEqual(first.map((c) => c.event), ["metadata", "updates"]);
  const [intr] = first[1].data.__interrupt__;
  assert.equal(intr.value, "i want to interrupt");
  assert.equal(typeof intr.id, "string");
  const t = await client.threads.get(thread.thread_id);
  assert.equal(t.status, "interrupted");
  assert.deepEqual(Object.values(t.interrupts), [[intr]]);

  const resumed = await collect(client.runs.stream(thread.thread_id, "agent", {
    command: { resume: "i want to resume" }, streamMode: ["updates"], config,
  }));
  assert.deepEqual(resumed.slice(1).map((c) => Object.keys(c.data)[0]), ["agent", "tool", "agent"]);
  assert.equal(resumed[1].data.agent.interrupt, false);
  assert.deepEqual(contents(await client.threads.getState(thread.thread_id).then((s) => s.values)), ["SF", "begin", "tool_call__begin", "end"]);

  // command update without resume writes the keys as a node update
  await collect(client.runs.stream(thread.thread_id, "agent", { command: { update: { keyOne: "value3", keyTwo: "value4" } }, config }));
  const st = await client.threads.getState(thread.thread_id);
  assert.equal(st.values.keyOne, "value3");
  assert.equal(st.values.keyTwo, "value4");
});

test("errors: error event, __error__ output, run and thread status", async () => {
  const thread = await client.threads.create();
  const chunks = await collect(client.runs.stream(thread.thread_id, "error", { input: { messages: [] }, streamMode: ["debug", "events"] }));
  assert.deepEqual(chunks.at(-1), { event: "error", data: { error: "CustomError", message: "Boo!" }, id: String(chunks.length - 1) });
  assert.equal(chunks[0].event, "metadata");
  assert.equal((await client.runs.get(thread.thread_id, chunks[0].data.run_id)).status, "error");
  assert.equal((await client.threads.get(thread.thread_id)).status, "error");

  const t2 = await client.threads.create();
  await assert.rejects(client.runs.wait(t2.thread_id, "error", { input: { messages: [] } }), /CustomError: Boo!/);
  const raw = await client.runs.wait(t2.thread_id, "error", { input: { messages: [] }, raiseError: false });
  assert.deepEqual(raw, { __error__: { error: "CustomError", message: "Boo!" } });

  const t3 = await client.threads.create();
  const run = await client.runs.create(t3.thread_id, "error", { input: { messages: [] } });
  const joined = await collect(client.runs.joinStream(t3.thread_id, run.run_id));
  assert.deepEqual(joined.at(-1).event, "error");
  assert.deepEqual(joined.at(-1).data, { error: "CustomError", message: "Boo!" });
  assert.deepEqual(await client.runs.join(t3.thread_id, run.run_id), { __error__: { error: "CustomError", message: "Boo!" } });
  assert.equal((await client.runs.get(t3.thread_id, run.run_id)).status, "error");

  const t4 = await client.threads.create();
  await assert.rejects(
    client.runs.wait(t4.thread_id, "agent", { input: { messages: [human("foo")] }, config: { ...config, recursion_limit: 1 } }),
    /GraphRecursionError/,
  );
  assert.equal((await client.threads.get(t4.thread_id)).status, "error");

  // a node's own error name and message (agent's checkSharedState)
  const t5 = await client.threads.create();
  await assert.rejects(client.runs.wait(t5.thread_id, "agent", { input: { messages: [human("___check_state_value")] }, config }), /Value is not true/);
  await client.store.putItem(["inputtedState", "data"], "my_key", { isTrue: true });
  const ok = await client.runs.wait(t5.thread_id, "agent", { input: { messages: [human("___check_state_value")] }, config });
  assert.equal(ok.messages.length, 4);

  await assert.rejects(client.runs.wait(t5.thread_id, "non-existent", { input: {} }), (e) => e.status === 404);
  await assert.rejects(collect(client.runs.stream(t5.thread_id, "non-existent", { input: {} })), (e) => e.status === 404);
});

test("store written by a graph: shared state between runs", async () => {
  const thread = await client.threads.create();
  const input = { messages: [human("should_end")] };
  const first = await client.runs.wait(thread.thread_id, "agent", { input, config: { configurable: { user_id: "start_user_id" } } });
  assert.ok(!("sharedStateValue" in first), "a channel never written is absent");
  assert.deepEqual(contents(first), ["should_end", "begin"]);
  const item = await client.store.getItem(["sharedState", "data"], "user_id");
  assert.deepEqual(item.value, { id: "start_user_id" });
});

test("createBatch: stateless runs, each with its own thread; joinStream(null) replays one after it ended", async () => {
  const runs = await client.runs.createBatch([
    { assistantId: "agent_simple", input: { messages: [human("a")] }, metadata: { b: 1 } },
    { assistantId: "agent_simple", input: { messages: [human("b")] }, metadata: { b: 2 }, on_completion: "keep" },
  ]);
  assert.deepEqual(runs.map((r) => [r.status, r.metadata.b, r.assistant_id]),
    [["pending", 1, "41237ec1-a1e5-5297-9ec9-e27936781bda"], ["pending", 2, "41237ec1-a1e5-5297-9ec9-e27936781bda"]]);
  assert.deepEqual(runs.map((r) => r.kwargs.input.messages[0].content), ["a", "b"]);
  assert.notEqual(runs[0].thread_id, runs[1].thread_id);
  const kept = await client.runs.join(runs[1].thread_id, runs[1].run_id);
  assert.deepEqual(contents(kept), ["b", "begin", "tool_call__begin", "end\u2028"]);
  assert.equal((await client.threads.get(runs[1].thread_id)).metadata.graph_id, "agent_simple");
  const joined = await collect(client.runs.joinStream(null, runs[0].run_id));
  assert.deepEqual(joined.map((c) => c.event), ["metadata", "values", "values", "values", "values"]);
  assert.equal(joined[0].data.run_id, runs[0].run_id);
  assert.deepEqual(contents(joined.at(-1).data), ["a", "begin", "tool_call__begin", "end\u2028"]);
  await assert.rejects(client.runs.createBatch([]), (e) => e.status === 422);
  await assert.rejects(client.runs.createBatch([{ assistantId: "no_such_graph", input: {} }]), (e) => e.status === 404);
});

test("runs.list with select and paging; runs.delete drops a run and its checkpoints", async () => {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, "agent_simple", { input: { messages: [human("x")] } });
  await client.runs.wait(thread.thread_id, "agent_simple", { input: { messages: [human("y")] } });
  const [second, first] = await client.runs.list(thread.thread_id, { select: ["run_id", "status"] });
  assert.deepEqual(Object.keys(first).sort(), ["run_id", "status"]);
  assert.deepEqual([first.status, second.status], ["success", "success"]);
  assert.deepEqual(await client.runs.list(thread.thread_id, { limit: 1, offset: 1, select: ["run_id"] }), [{ run_id: first.run_id }]);

  const pending = await client.runs.create(thread.thread_id, "agent_simple", { input: { messages: [human("z")] }, afterSeconds: 60 });
  await assert.rejects(client.runs.delete(thread.thread_id, pending.run_id), (e) => e.status === 409);
  await client.runs.cancel(thread.thread_id, pending.run_id);
  await client.runs.delete(thread.thread_id, pending.run_id);
  await client.runs.delete(thread.thread_id, second.run_id);
  await assert.rejects(client.runs.delete(thread.thread_id, second.run_id), (e) => e.status === 404);
  assert.deepEqual((await client.runs.list(thread.thread_id)).map((r) => r.run_id), [first.run_id]);
  assert.deepEqual(contents((await client.threads.get(thread.thread_id)).values), ["x", "begin", "tool_call__begin", "end\u2028"]);
  assert.ok((await client.threads.getHistory(thread.thread_id)).every((h) => h.metadata.run_id === first.run_id));
});

test("cancelMany: by thread and run ids, or by status with rollback", async () => {
  const thread = await client.threads.create();
  const later = (content, multitaskStrategy) => client.runs.create(thread.thread_id, "agent_simple",
    { input: { messages: [human(content)] }, afterSeconds: 60, multitaskStrategy });
  const r1 = await later("a");
  const r2 = await later("b", "enqueue");
  await client.runs.cancelMany({ threadId: thread.thread_id, runIds: [r1.run_id] });
  assert.deepEqual((await client.runs.list(thread.thread_id, { select: ["run_id", "status"] })),
    [{ run_id: r2.run_id, status: "pending" }, { run_id: r1.run_id, status: "interrupted" }]);
  await client.runs.cancelMany({ status: "pending", action: "rollback" });
  assert.deepEqual((await client.runs.list(thread.thread_id)).map((r) => r.run_id), [r1.run_id]);
  assert.equal((await client.threads.get(thread.thread_id)).status, "idle");

  await assert.rejects(client.runs.cancelMany({ status: "running" }), (e) => e.status === 404);
  await assert.rejects(client.runs.cancelMany({ status: "success" }), (e) => e.status === 422);
  await assert.rejects(client.runs.cancelMany({ threadId: thread.thread_id, runIds: [r1.run_id], status: "all" }), (e) => e.status === 422);
});
