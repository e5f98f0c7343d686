import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

test("system assistants exist for every reference graph", async () => {
  const all = await client.assistants.search({ metadata: { created_by: "system" }, limit: 100 });
  const graphs = all.map((a) => a.graph_id).sort();
  for (const g of ["agent", "agent_simple", "weather", "nested", "error", "delay", "dynamic", "simple_runtime",
    "state_schema_graph", "zod_registry_graph", "plain_zod_graph"]) {
    assert.ok(graphs.includes(g), `missing system assistant for ${g}`);
  }
  const agent = all.find((a) => a.graph_id === "agent");
  assert.equal(agent.assistant_id, "fe096781-5601-53d2-b2f6-0d3403f7e9ca");
  assert.equal(agent.name, "agent");
  assert.deepEqual(agent.config, { configurable: { model_name: "openai" } });
  assert.ok((await client.assistants.count()) >= 11);
});

test("create, get, update with versions, set latest, delete", async () => {
  const a = await client.assistants.create({ graphId: "agent", config: { configurable: { model_name: "x" } }, metadata: { team: "e2e" }, name: "mine" });
  assert.match(a.assistant_id, UUID);
  assert.equal(a.graph_id, "agent");
  assert.equal(a.version, 1);
  assert.equal(a.name, "mine");
  assert.deepEqual(a.metadata, { team: "e2e" });

  const got = await client.assistants.get(a.assistant_id);
  assert.deepEqual(got, a);

  const u = await client.assistants.update(a.assistant_id, { metadata: { extra: 1 }, name: "renamed" });
  assert.equal(u.version, 2);
  assert.equal(u.name, "renamed");
  assert.deepEqual(u.metadata, { team: "e2e", extra: 1 });

  const versions = await client.assistants.getVersions(a.assistant_id);
  assert.deepEqual(versions.map((v) => v.version), [2, 1]);
  assert.equal(versions[1].name, "mine");

  const back = await client.assistants.setLatest(a.assistant_id, 1);
  assert.equal(back.version, 1);
  assert.equal(back.name, "mine");
  assert.deepEqual(back.metadata, { team: "e2e" });

  await assert.rejects(client.assistants.create({ graphId: "agent", assistantId: a.assistant_id }), (e) => e.status === 409);
  const same = await client.assistants.create({ graphId: "agent", assistantId: a.assistant_id, ifExists: "do_nothing" });
  assert.equal(same.assistant_id, a.assistant_id);

  await client.assistants.delete(a.assistant_id);
  await assert.rejects(client.assistants.get(a.assistant_id), (e) => e.status === 404);
  await assert.rejects(client.assistants.create({ graphId: "no_such_graph" }), (e) => e.status === 404);
});

test("search with paging, sort, select and count", async () => {
  const ids = [];
  for (let i = 0; i < 5; i++) {
    ids.push((await client.assistants.create({ graphId: "agent_simple", name: `paged-${i}`, metadata: { page: "yes", i } })).assistant_id);
  }
  const first = await client.assistants.search({ metadata: { page: "yes" }, limit: 2, offset: 0, sortBy: "name", sortOrder: "asc", includePagination: true });
  assert.deepEqual(first.assistants.map((a) => a.name), ["paged-0", "paged-1"]);
  assert.equal(first.next, "2");
  const last = await client.assistants.search({ metadata: { page: "yes" }, limit: 2, offset: 4, sortBy: "name", sortOrder: "asc", includePagination: true });
  assert.deepEqual(last.assistants.map((a) => a.name), ["paged-4"]);
  assert.equal(last.next, null);

  const projected = await client.assistants.search({ metadata: { page: "yes" }, select: ["assistant_id", "name"], limit: 1 });
  assert.deepEqual(Object.keys(projected[0]).sort(), ["assistant_id", "name"]);

  assert.equal(await client.assistants.count({ metadata: { page: "yes" } }), 5);
  assert.equal(await client.assistants.count({ graphId: "agent_simple", name: "PAGED-3" }), 1);
});

test("versions filtered by metadata and paged; delete with deleteThreads removes the assistant's threads", async () => {
  const a = await client.assistants.create({ graphId: "agent_simple", metadata: { v: 1 } });
  await client.assistants.update(a.assistant_id, { metadata: { v: 2 } });
  const v2 = await client.assistants.getVersions(a.assistant_id, { metadata: { v: 2 } });
  assert.deepEqual(v2.map((v) => [v.version, v.metadata.v]), [[2, 2]]);
  const paged = await client.assistants.getVersions(a.assistant_id, { limit: 1, offset: 1 });
  assert.deepEqual(paged.map((v) => v.version), [1]);

  const used = await client.threads.create();
  await client.runs.wait(used.thread_id, a.assistant_id, { input: { messages: [{ role: "human", content: "q" }] } });
  assert.equal((await client.threads.get(used.thread_id)).metadata.assistant_id, a.assistant_id);
  const other = await client.threads.create();
  await client.assistants.delete(a.assistant_id, { deleteThreads: true });
  await assert.rejects(client.threads.get(used.thread_id), (e) => e.status === 404);
  assert.equal((await client.threads.get(other.thread_id)).thread_id, other.thread_id);
});
