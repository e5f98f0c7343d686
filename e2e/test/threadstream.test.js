// GET /threads/{id}/stream (threads.joinStream) and PATCH /threads/{id}/state
// (threads.patchState), through the JS SDK: the thread stream carries every
// run's events, a run_done marker per run and state_update events, filtered
// by stream mode, resumable with lastEventId ("-" replays); it never ends on
// its own, so each read stops with an AbortSignal.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

const human = (content) => ({ type: "human", content });

// readUntil reads a never-ending stream until done(chunks) holds, then aborts it.
async function readUntil(open, done) {
  const ctrl = new AbortController();
  const chunks = [];
  try {
    for await (const chunk of open(ctrl.signal)) {
      chunks.push(chunk);
      if (done(chunks)) break;
    }
  } finally {
    ctrl.abort();
  }
  return chunks;
}

const runDone = (runId) => (chunks) => chunks.some((c) => c.event === "metadata" && c.data.status === "run_done" && c.data.run_id === runId);

test("joinStream replays a run with lastEventId '-': metadata, mode events, run_done", async () => {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, "agent", {
    input: { messages: [human("foo")] }, streamMode: ["values", "updates"], streamResumable: true,
  });
  const chunks = await readUntil(
    (signal) => client.threads.joinStream(thread.thread_id, { lastEventId: "-", signal }),
    runDone(run.run_id),
  );
  assert.equal(chunks[0].event, "metadata");
  assert.deepEqual(chunks[0].data, { run_id: run.run_id, attempt: 1 });
  const names = chunks.map((c) => c.event);
  assert.ok(names.includes("values") && names.includes("updates"), names.join(","));
  assert.deepEqual(chunks.at(-1).data, { status: "run_done", run_id: run.run_id });
  const last = chunks.filter((c) => c.event === "values").at(-1);
  assert.deepEqual(last.data.messages.map((m) => m.content), ["foo", "begin", "tool_call__begin", "end"]);
});

test("joinStream lifecycle mode: only run start and run_done; state_update mode: state updates", async () => {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, "agent", { input: { messages: [human("foo")] }, streamResumable: true });
  const life = await readUntil(
    (signal) => client.threads.joinStream(thread.thread_id, { lastEventId: "-", streamMode: "lifecycle", signal }),
    runDone(run.run_id),
  );
  assert.deepEqual(life.map((c) => c.event), ["metadata", "metadata"]);
  await client.runs.join(thread.thread_id, run.run_id);

  await client.threads.updateState(thread.thread_id, { values: { messages: [human("edited")] }, asNode: "agent" });
  const updates = await readUntil(
    (signal) => client.threads.joinStream(thread.thread_id, { lastEventId: "-", streamMode: ["state_update"], signal }),
    (chunks) => chunks.length === 1,
  );
  assert.equal(updates[0].event, "state_update");
  assert.equal(updates[0].data.thread_id, thread.thread_id);
  assert.equal(updates[0].data.state.values.messages.at(-1).content, "edited");
  assert.ok(updates[0].data.state.checkpoint.checkpoint_id);
});

test("joinStream resumes after an event id, and a run started while joined arrives live", async () => {
  const thread = await client.threads.create();
  const first = await client.runs.create(thread.thread_id, "agent", { input: { messages: [human("foo")] }, streamResumable: true });
  await client.runs.join(thread.thread_id, first.run_id);
  const replay = await readUntil(
    (signal) => client.threads.joinStream(thread.thread_id, { lastEventId: "-", signal }),
    runDone(first.run_id),
  );
  // The SDK yields no ids; resume from the server's id of the first event by
  // reading it over plain HTTP.
  const res = await fetch(`${server.url}/threads/${thread.thread_id}/stream`, { headers: { "Last-Event-ID": "-" } });
  const reader = res.body.getReader();
  let text = "";
  while (!text.includes("\n\n")) text += new TextDecoder().decode((await reader.read()).value);
  await reader.cancel();
  const firstId = text.match(/^id: (\S+)$/m)[1];
  assert.match(firstId, /^\d+-\d+$/);
  const resumed = await readUntil(
    (signal) => client.threads.joinStream(thread.thread_id, { lastEventId: firstId, signal }),
    runDone(first.run_id),
  );
  assert.deepEqual(resumed, replay.slice(1));

  // Live: join, then start a run; its events follow those already replayed.
  const ctrl = new AbortController();
  const seen = [];
  const reading = (async () => {
    for await (const c of client.threads.joinStream(thread.thread_id, { lastEventId: "-", streamMode: "lifecycle", signal: ctrl.signal })) {
      seen.push(c);
      if (seen.filter((s) => s.data.status === "run_done").length === 2) break;
    }
  })();
  const second = await client.runs.create(thread.thread_id, "agent", { input: { messages: [human("bar")] } });
  await reading;
  ctrl.abort();
  assert.deepEqual(seen.map((c) => c.data.run_id), [first.run_id, first.run_id, second.run_id, second.run_id]);
});

test("joinStream rejects an unknown mode, a malformed id and a missing thread", async () => {
  const thread = await client.threads.create();
  const drain = async (it) => { for await (const _ of it) break; };
  await assert.rejects(drain(client.threads.joinStream(thread.thread_id, { streamMode: "values" })), (e) => e.status === 422);
  await assert.rejects(drain(client.threads.joinStream(thread.thread_id, { lastEventId: "x" })), (e) => e.status === 422);
  await assert.rejects(drain(client.threads.joinStream("00000000-0000-4000-8000-000000000000")), (e) => e.status === 404);
});

test("patchState merges metadata into the latest checkpoint", async () => {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, "agent", { input: { messages: [human("foo")] } });
  const before = await client.threads.getState(thread.thread_id);
  assert.equal(await client.threads.patchState(thread.thread_id, { reviewed: true }), undefined);
  const after = await client.threads.getState(thread.thread_id);
  assert.equal(after.metadata.reviewed, true);
  assert.equal(after.metadata.source, before.metadata.source);
  assert.deepEqual(after.checkpoint, before.checkpoint);
  assert.deepEqual(after.values, before.values);
  // by config, as the SDK also allows
  await client.threads.patchState({ configurable: { thread_id: thread.thread_id } }, { label: "x" });
  const history = await client.threads.getHistory(thread.thread_id, { metadata: { label: "x" } });
  assert.equal(history.length, 1);
  assert.equal(history[0].metadata.reviewed, true);

  const fresh = await client.threads.create();
  await assert.rejects(client.threads.patchState(fresh.thread_id, { a: 1 }), (e) => e.status === 404);
});

test("threads.search ids and extract: one path per alias, evaluated per thread", async () => {
  const tag = crypto.randomUUID();
  const a = await client.threads.create({ metadata: { tag } });
  await client.runs.wait(a.thread_id, "agent", { input: { messages: [human("foo")] } });
  const found = await client.threads.search({ ids: [a.thread_id], extract: { last: "values.messages[-1].content", tag: "metadata.tag" } });
  assert.deepEqual(found.map((t) => t.extracted), [{ last: "end", tag }]);
  await assert.rejects(client.threads.search({ extract: { bad: "values.messages[x]" } }), (e) => e.status === 422);
});
