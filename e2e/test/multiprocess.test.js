// Three reference servers on one PostgreSQL database, driven only through
// the official SDK: a run created on A is streamed live from B and
// cancelled from C; a thread stream and a protocol-v2 threads.stream
// subscriber on B follow a run executed on A; another run created on A is
// streamed from B while A is killed with SIGKILL, and finishes on B or C,
// B's stream carrying on; a thread stream read on B resumes on C after any
// event id (the same ids on every server), with a state update made on C.
// Needs GRAPHSERVER_POSTGRES_URL (.ci/run sets it); skips without it. Each
// run of the file creates a database of its own and drops it after.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { Client } from "@langchain/langgraph-sdk";
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

async function waitFor(cond, what, ms = 30000) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not in time`);
    await new Promise((ok) => setTimeout(ok, 20));
  }
}

test("a thread stream and a protocol-v2 subscriber on B follow a run executed on A", { skip, timeout: 60000 }, async () => {
  const [a, b, c] = servers.map((s) => s.client);
  const thread = await a.threads.create();

  // Both subscribe on B before the run is created on A. (The SDK sends
  // joinStream's request at the first read: "-" takes what B holds for the
  // thread by then.)
  const ctrl = new AbortController();
  const live = b.threads.joinStream(thread.thread_id, { lastEventId: "-", signal: ctrl.signal })[Symbol.asyncIterator]();
  const v2b = new Client({ apiUrl: servers[1].url, apiKey: null, streamProtocol: "v2" });
  const tb = v2b.threads.stream(thread.thread_id, { assistantId: "agent" });
  const v2seen = [];
  const off = tb.onEvent((e) => v2seen.push(e));
  const sub = await tb.subscribe(["values", "custom", "lifecycle"]);

  const run = await a.runs.create(thread.thread_id, "agent", {
    input: { messages: [human("threads")], sleep: { steps: 10, ms: 30 } },
    streamMode: ["custom", "values"], streamResumable: true, config,
  });
  const runDone = (ch) => ch.event === "metadata" && ch.data?.status === "run_done";
  const seen = [];
  try {
    await until(live, runDone, seen);
  } finally {
    ctrl.abort();
  }
  const rootEnd = (e) => e.method === "lifecycle" && e.params.namespace.length === 0 && e.params.data.event === "completed";
  try {
    await waitFor(() => v2seen.some(rootEnd), `v2 events on B: ${JSON.stringify(v2seen.map((e) => e.method))}`);
  } finally {
    off();
    await sub.unsubscribe();
    await tb.close();
  }
  assert.equal((await c.runs.get(thread.thread_id, run.run_id)).status, "success");

  // Compared with a full replay of the run's stored log (from C): every
  // event once, in order, then the run_done marker.
  const replay = [];
  await rest(c.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" })[Symbol.asyncIterator](), replay);
  const strip = (chunks) => chunks.filter((ch) => ch.event).map((ch) => ({ event: ch.event, data: ch.data }));
  const events = strip(seen);
  assert.deepEqual(events.at(-1), { event: "metadata", data: { status: "run_done", run_id: run.run_id } });
  assert.deepEqual(events.slice(0, -1), strip(replay), "B's thread stream has the run's events, none lost or repeated");
  assert.deepEqual(events[0].data, { run_id: run.run_id, attempt: 1 });
  assert.equal(events.filter(sleepStep).length, 10);

  // Protocol v2 on B: the same custom and values payloads, one running
  // and one completed lifecycle event at the root.
  const unique = new Set(v2seen.map((e) => e.event_id));
  assert.equal(unique.size, v2seen.length, "no v2 event twice");
  const root = v2seen.filter((e) => e.params.namespace.length === 0);
  assert.deepEqual(root.filter((e) => e.method === "custom").map((e) => e.params.data),
    strip(replay).filter((ch) => ch.event === "custom").map((ch) => ch.data));
  assert.deepEqual(root.filter((e) => e.method === "values").map((e) => e.params.data),
    strip(replay).filter((ch) => ch.event === "values").map((ch) => ch.data));
  assert.deepEqual(root.filter((e) => e.method === "lifecycle").map((e) => e.params.data.event), ["running", "completed"]);
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

// sseFrames reads GET /threads/{id}/stream from a server over plain HTTP
// (the SDK yields no ids) until a frame satisfies last, and returns the
// frames as {id, event, data}.
async function sseFrames(url, threadId, headers, last) {
  const ctrl = new AbortController();
  const res = await fetch(`${url}/threads/${threadId}/stream?stream_mode=run_modes&stream_mode=state_update`, { headers, signal: ctrl.signal });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const frames = [];
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended after ${frames.length} frames`);
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const f = {};
        for (const line of block.split("\n")) {
          const m = line.match(/^(id|event|data): ?(.*)$/);
          if (m) f[m[1]] = m[1] === "data" ? JSON.parse(m[2]) : m[2];
        }
        if (!f.event) continue; // a heartbeat
        frames.push(f);
        if (last(f)) return frames;
      }
    }
  } finally {
    ctrl.abort();
  }
}

// (After the previous test, A is dead: B and C remain.)
test("a thread stream read on B resumes on C after any event id; a state update made on C reaches B", { skip, timeout: 60000 }, async () => {
  const [, b, c] = servers.map((s) => s.client);
  const thread = await c.threads.create();
  const run = await c.runs.create(thread.thread_id, "agent", {
    input: { messages: [human("resume")], sleep: { steps: 5, ms: 10 } },
    streamMode: ["custom", "values"], streamResumable: true, config,
  });
  await c.runs.join(thread.thread_id, run.run_id);
  await c.threads.updateState(thread.thread_id, { values: { messages: [human("edited")] }, asNode: "agent" });

  const isUpdate = (f) => f.event === "state_update";
  const full = await sseFrames(servers[1].url, thread.thread_id, { "Last-Event-ID": "-" }, isUpdate);
  assert.deepEqual(full.at(-2).data, { status: "run_done", run_id: run.run_id });
  assert.equal(full.at(-1).data.state.values.messages.at(-1).content, "edited", "C's state update, on B");
  // The same ids on C: resumed after each event, C sends exactly the rest.
  for (let k = 0; k < full.length - 1; k++) {
    const rest = await sseFrames(servers[2].url, thread.thread_id, { "Last-Event-ID": full[k].id }, isUpdate);
    assert.deepEqual(rest, full.slice(k + 1), `resumed on C after ${full[k].id}`);
  }

  // Through the SDK: B's thread stream in state_update mode carries C's update.
  const ctrl = new AbortController();
  try {
    for await (const chunk of b.threads.joinStream(thread.thread_id, { lastEventId: "-", streamMode: ["state_update"], signal: ctrl.signal })) {
      assert.equal(chunk.event, "state_update");
      assert.equal(chunk.data.thread_id, thread.thread_id);
      assert.equal(chunk.data.state.values.messages.at(-1).content, "edited");
      break;
    }
  } finally {
    ctrl.abort();
  }
});
