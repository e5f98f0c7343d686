// Three reference servers on one PostgreSQL database, driven only through
// the official SDK: a run created on A is streamed live from B and
// cancelled from C; another run created on A is streamed from B while A is
// killed with SIGKILL, and finishes on B or C, B's stream carrying on.
// Needs GRAPHSERVER_POSTGRES_URL (.ci/run sets it); skips without it. Each
// run of the file creates a database of its own and drops it after.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { startServer } from "./server.js";

const base = process.env.GRAPHSERVER_POSTGRES_URL;
const skip = base ? false : "set GRAPHSERVER_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run the multi-process tests";

const config = { configurable: { user_id: "123" } };
const human = (content) => ({ role: "human", content });
const dbName = `gs_e2e_${randomBytes(6).toString("hex")}`;
let servers = [];

function psql(sql) {
  execFileSync("psql", [base, "-qAtc", sql], { stdio: ["ignore", "pipe", "pipe"] });
}

before(async () => {
  if (skip) return;
  psql(`CREATE DATABASE ${dbName}`);
  const url = new URL(base);
  url.pathname = `/${dbName}`;
  // A short lease: the runs of the killed server are taken over within
  // seconds (the lease, then a sweep every half lease).
  const flags = ["-db", url.toString(), "-lease", "3s"];
  for (let i = 0; i < 3; i++) servers.push(await startServer(...flags));
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  if (!skip) psql(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
});

// until reads a stream until pred(chunk) holds, returning what it read.
async function until(iter, pred, seen) {
  for (;;) {
    const { value, done } = await iter.next();
    if (done) throw new Error(`stream ended before the awaited chunk: ${JSON.stringify(seen.map((c) => c.event))}`);
    seen.push(value);
    if (pred(value)) return;
  }
}

// rest drains a stream.
async function rest(iter, seen) {
  for (;;) {
    const { value, done } = await iter.next();
    if (done) return;
    seen.push(value);
  }
}

const sleepStep = (c) => c.event === "custom" && c.data?.type === "sleep";

test("a run created on A streams live on B and is cancelled from C", { skip, timeout: 60000 }, async () => {
  const [a, b, c] = servers.map((s) => s.client);
  const thread = await a.threads.create();
  const run = await a.runs.create(thread.thread_id, "agent", {
    input: { messages: [human("long")], sleep: { steps: 200, ms: 100 } },
    streamMode: ["custom"], streamResumable: true, config,
  });
  const seen = [];
  const stream = b.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" })[Symbol.asyncIterator]();
  await until(stream, (ch) => sleepStep(ch) && ch.data.step >= 2, seen);
  assert.equal(seen[0].event, "metadata");
  assert.equal(seen[0].data.run_id, run.run_id);
  assert.deepEqual(seen.filter(sleepStep).map((ch) => ch.data.step), [0, 1, 2], "steps arrive live, in order");

  await c.runs.cancel(thread.thread_id, run.run_id, false, "interrupt");
  await rest(stream, seen); // B's stream ends with the run
  const steps = seen.filter(sleepStep).map((ch) => ch.data.step);
  assert.ok(steps.length < 200, `the run stopped early (${steps.length} steps)`);
  assert.equal((await b.runs.get(thread.thread_id, run.run_id)).status, "interrupted");
  assert.notEqual((await a.threads.get(thread.thread_id)).status, "busy");
});

test("a run survives its server being killed: another one finishes it, the stream on B carries on", { skip, timeout: 90000 }, async () => {
  const [a, b, c] = servers.map((s) => s.client);
  const thread = await a.threads.create();
  const run = await a.runs.create(thread.thread_id, "agent", {
    input: { messages: [human("survive")], sleep: { steps: 40, ms: 100 } },
    streamMode: ["custom", "values"], streamResumable: true, config,
  });
  const seen = [];
  const stream = b.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" })[Symbol.asyncIterator]();
  await until(stream, (ch) => sleepStep(ch) && ch.data.step >= 1, seen);

  await servers[0].kill();
  await rest(stream, seen);

  const metadata = seen.filter((ch) => ch.event === "metadata");
  assert.deepEqual(metadata.map((ch) => ch.data.attempt), [1, 2], "the second attempt streams on after the first");
  // (The SDK hands a heartbeat comment over as a chunk without an event.)
  const ids = seen.filter((ch) => ch.event).map((ch) => Number(ch.id));
  assert.deepEqual(ids, ids.map((_, i) => i), "event ids go on across attempts and servers");
  const final = seen.at(-1);
  assert.equal(final.event, "values");
  assert.equal((await c.runs.get(thread.thread_id, run.run_id)).status, "success");
  const state = await b.threads.getState(thread.thread_id);
  assert.deepEqual(final.data, state.values, "the stream ends with the final state");
  assert.equal(state.values.messages[0].content, "survive");
  assert.ok(state.values.messages.length > 1, "the graph ran to its end");
});
