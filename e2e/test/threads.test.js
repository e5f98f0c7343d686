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
