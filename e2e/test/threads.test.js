import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { startServer } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

test("thread CRUD", async () => {
  const id = randomUUID();
  const t = await client.threads.create({ threadId: id, metadata: { owner: "ann" } });
  assert.equal(t.thread_id, id);
  assert.equal(t.status, "idle");
  assert.equal(t.values, null);
  assert.deepEqual(t.interrupts, {});
  assert.deepEqual(t.metadata, { owner: "ann" });

  await assert.rejects(client.threads.create({ threadId: id }), (e) => e.status === 409);
  const again = await client.threads.create({ threadId: id, ifExists: "do_nothing" });
  assert.equal(again.created_at, t.created_at);

  const u = await client.threads.update(id, { metadata: { tag: "x" } });
  assert.deepEqual(u.metadata, { owner: "ann", tag: "x" });
  assert.ok(u.updated_at >= t.updated_at);

  assert.deepEqual(await client.threads.get(id), u);
  await client.threads.delete(id);
  await assert.rejects(client.threads.get(id), (e) => e.status === 404);
});

test("search and count by metadata and status", async () => {
  const mark = randomUUID();
  for (let i = 0; i < 3; i++) await client.threads.create({ metadata: { mark, i } });
  const found = await client.threads.search({ metadata: { mark }, sortBy: "created_at", sortOrder: "asc" });
  assert.deepEqual(found.map((t) => t.metadata.i), [0, 1, 2]);
  assert.equal(await client.threads.count({ metadata: { mark }, status: "idle" }), 3);
  assert.equal(await client.threads.count({ metadata: { mark }, status: "busy" }), 0);
  const page = await client.threads.search({ metadata: { mark }, limit: 1, offset: 1, sortBy: "created_at", sortOrder: "asc", select: ["thread_id", "metadata"] });
  assert.equal(page.length, 1);
  assert.deepEqual(Object.keys(page[0]).sort(), ["metadata", "thread_id"]);
  assert.equal(page[0].metadata.i, 1);
});

test("copy keeps metadata under a new id; prune deletes", async () => {
  const src = await client.threads.create({ metadata: { copy: "me" } });
  const cp = await client.threads.copy(src.thread_id);
  assert.notEqual(cp.thread_id, src.thread_id);
  assert.equal(cp.metadata.copy, "me");
  const res = await client.threads.prune([src.thread_id, cp.thread_id]);
  assert.equal(res.pruned_count, 2);
  await assert.rejects(client.threads.get(cp.thread_id), (e) => e.status === 404);
  await assert.rejects(client.threads.copy(src.thread_id), (e) => e.status === 409);
});

test("prune keep_latest keeps the thread and its latest checkpoint only", async () => {
  const t = await client.threads.create();
  await client.runs.wait(t.thread_id, "agent_simple", { input: { messages: [{ role: "human", content: "x" }] } });
  const [latest] = await client.threads.getHistory(t.thread_id, { limit: 1 });
  assert.equal((await client.threads.getHistory(t.thread_id, { limit: 100 })).length, 5);
  assert.deepEqual(await client.threads.prune([t.thread_id], { strategy: "keep_latest" }), { pruned_count: 1 });
  const left = await client.threads.getHistory(t.thread_id, { limit: 100 });
  assert.deepEqual(left.map((s) => s.checkpoint.checkpoint_id), [latest.checkpoint.checkpoint_id]);
  assert.deepEqual(left[0].values, latest.values);
  assert.deepEqual((await client.threads.get(t.thread_id)).values, latest.values);
});

test("ttl: set on create and update, shown only with include=ttl", async () => {
  const t = await client.threads.create({ ttl: 60 });
  assert.equal(t.ttl, undefined);
  const got = await client.threads.get(t.thread_id, { include: ["ttl"] });
  assert.equal(got.ttl.strategy, "delete");
  assert.equal(got.ttl.ttl_minutes, 60);
  assert.equal(Date.parse(got.ttl.expires_at) - Date.parse(t.created_at), 60 * 60000);

  const u = await client.threads.update(t.thread_id, { ttl: { ttl: 5, strategy: "keep_latest" } });
  assert.equal(u.ttl, undefined);
  const { ttl } = await client.threads.get(t.thread_id, { include: ["ttl"] });
  assert.deepEqual([ttl.strategy, ttl.ttl_minutes], ["keep_latest", 5]);
  assert.equal(Date.parse(ttl.expires_at) - Date.parse(u.updated_at), 5 * 60000);
  assert.equal((await client.threads.get(t.thread_id)).ttl, undefined);
  await assert.rejects(client.threads.create({ ttl: -1 }), (e) => e.status === 422);
});
