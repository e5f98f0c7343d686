// Runs through the official SDK: wait, stream (Content-Location, metadata,
// custom events), background create + join, list/get/delete, resumable
// join-stream replay, cancel (wait), multitask reject, stateless runs,
// interrupt and resume.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, collect } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

const config = { configurable: { user_id: "123" } };
const human = (content) => ({ type: "human", content });
const contents = (values) => values.messages.map((m) => m.content);

test("wait on a thread returns the final values and leaves the thread idle", async () => {
  const thread = await client.threads.create();
  const values = await client.runs.wait(thread.thread_id, "agent", { input: { messages: [human("foo")] }, config });
  assert.deepEqual(contents(values), ["foo", "begin", "tool_call__begin", "end"]);
  const t = await client.threads.get(thread.thread_id);
  assert.equal(t.status, "idle");
  assert.equal(t.metadata.graph_id, "agent");
  const runs = await client.runs.list(thread.thread_id);
  assert.equal(runs.length, 1);
  assert.equal(runs[0].status, "success");
});

test("stream: metadata first, custom events, run id from Content-Location", async () => {
  const thread = await client.threads.create();
  let created;
  const chunks = await collect(client.runs.stream(thread.thread_id, "agent", {
    input: { messages: [human("foo")], sleep: { steps: 2, ms: 5 } },
    config,
    streamMode: ["values", "custom"],
    onRunCreated: (meta) => { created = meta; },
  }));
  assert.equal(chunks[0].event, "metadata");
  assert.equal(chunks[0].data.run_id, created.run_id);
  assert.equal(created.thread_id, thread.thread_id);
  assert.equal(chunks[0].data.attempt, 1);
  const custom = chunks.filter((c) => c.event === "custom").map((c) => c.data);
  assert.deepEqual(custom, [{ type: "sleep", step: 0 }, { type: "sleep", step: 1 }]);
  const last = chunks.filter((c) => c.event === "values").at(-1);
  assert.deepEqual(contents(last.data), ["foo", "begin", "tool_call__begin", "end"]);
});

test("background create, join, get, delete", async () => {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, "agent", { input: { messages: [human("foo")] }, config });
  assert.equal(run.status, "pending");
  assert.equal(run.kwargs.config.configurable.run_id, run.run_id);
  const values = await client.runs.join(thread.thread_id, run.run_id);
  assert.deepEqual(contents(values), ["foo", "begin", "tool_call__begin", "end"]);
  const got = await client.runs.get(thread.thread_id, run.run_id);
  assert.equal(got.status, "success");
  await client.runs.delete(thread.thread_id, run.run_id);
  await assert.rejects(client.runs.get(thread.thread_id, run.run_id), (e) => e.status === 404);
});

test("resumable join stream replays everything from -1", async () => {
  const thread = await client.threads.create();
  let runId;
  const first = await collect(client.runs.stream(thread.thread_id, "agent", {
    input: { messages: [human("foo")] }, config, streamMode: ["values", "updates"], streamResumable: true,
    onRunCreated: (meta) => { runId = meta.run_id; },
  }));
  const replay = await collect(client.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1" }));
  assert.deepEqual(replay.map((c) => c.event), first.map((c) => c.event));
  assert.deepEqual(replay.map((c) => c.data), first.map((c) => c.data));
});

test("cancel a running run with wait, and multitask reject", async () => {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, "agent", {
    input: { messages: [human("foo")], sleep: { steps: 200, ms: 50 } }, config,
  });
  for (let i = 0; i < 100 && (await client.runs.get(thread.thread_id, run.run_id)).status !== "running"; i++) {
    await new Promise((ok) => setTimeout(ok, 20));
  }
  await assert.rejects(
    client.runs.create(thread.thread_id, "agent", { input: { messages: [human("x")] }, multitaskStrategy: "reject" }),
    (e) => e.status === 409,
  );
  await client.runs.cancel(thread.thread_id, run.run_id, true, "interrupt");
  const got = await client.runs.get(thread.thread_id, run.run_id);
  assert.equal(got.status, "interrupted");
  assert.notEqual((await client.threads.get(thread.thread_id)).status, "busy");
});

test("stateless wait deletes its temporary thread", async () => {
  let created;
  const values = await client.runs.wait(null, "agent", {
    input: { messages: [human("foo")] }, config, onRunCreated: (meta) => { created = meta; },
  });
  assert.deepEqual(contents(values), ["foo", "begin", "tool_call__begin", "end"]);
  if (created?.thread_id) {
    await assert.rejects(client.threads.get(created.thread_id), (e) => e.status === 404);
  }
});

test("interrupt then resume with a command", async () => {
  const thread = await client.threads.create();
  const out = await client.runs.wait(thread.thread_id, "agent", { input: { messages: [human("foo")], interrupt: true }, config });
  assert.ok(Array.isArray(out.__interrupt__), JSON.stringify(out));
  assert.equal(out.__interrupt__[0].value, "i want to interrupt");
  const t = await client.threads.get(thread.thread_id);
  assert.equal(t.status, "interrupted");
  assert.equal(Object.keys(t.interrupts).length, 1);
  const values = await client.runs.wait(thread.thread_id, "agent", { command: { resume: "yes" }, config });
  assert.equal(values.messages.at(-1).content, "end");
  assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
});
