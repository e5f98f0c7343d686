import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

test("put, get, search, list namespaces, delete", async () => {
  await client.store.putItem(["users", "ann"], "prefs", { theme: "dark", size: 3 });
  await client.store.putItem(["users", "bob"], "prefs", { theme: "light", size: 5 });
  await client.store.putItem(["docs"], "d1", { text: "hello" });

  const item = await client.store.getItem(["users", "ann"], "prefs");
  assert.deepEqual(item.namespace, ["users", "ann"]);
  assert.equal(item.key, "prefs");
  assert.deepEqual(item.value, { theme: "dark", size: 3 });
  assert.ok(item.createdAt && item.updatedAt, "SDK maps created_at/updated_at");
  assert.equal(await client.store.getItem(["users", "ann"], "missing"), null);

  const found = await client.store.searchItems(["users"], { filter: { theme: "light" } });
  assert.deepEqual(found.items.map((i) => i.namespace), [["users", "bob"]]);
  const big = await client.store.searchItems(["users"], { filter: { size: { $gt: 3 } } });
  assert.deepEqual(big.items.map((i) => i.value.size), [5]);

  const ns = await client.store.listNamespaces({ prefix: ["users"] });
  assert.deepEqual(ns.namespaces, [["users", "ann"], ["users", "bob"]]);
  const shallow = await client.store.listNamespaces({ maxDepth: 1 });
  assert.deepEqual(shallow.namespaces, [["docs"], ["users"]]);

  await client.store.deleteItem(["users", "ann"], "prefs");
  assert.equal(await client.store.getItem(["users", "ann"], "prefs"), null);
  await assert.rejects(client.store.putItem(["bad.label"], "k", { a: 1 }), () => true);
});

test("search by query ranks indexed items; paging; namespaces by suffix and paged", async () => {
  await client.store.putItem(["q"], "a", { text: "the quick brown fox" });
  await client.store.putItem(["q"], "b", { text: "lazy dogs sleep" });
  await client.store.putItem(["q"], "c", { text: "fox and dogs" }, { index: false });
  await client.store.putItem(["q", "sub"], "d", { text: "fox fox" }, { ttl: 10 });

  const fox = await client.store.searchItems(["q"], { query: "fox" });
  assert.deepEqual(fox.items.map((i) => i.key).sort(), ["a", "d"], "only indexed matches");
  assert.ok(fox.items.every((i) => typeof i.score === "number"));
  assert.ok(fox.items[0].score >= fox.items[1].score);

  const all = await client.store.searchItems(["q"]);
  assert.deepEqual(all.items.map((i) => i.key), ["d", "c", "b", "a"], "newest first");
  assert.ok(all.items.every((i) => i.score === null));
  const page = await client.store.searchItems(["q"], { limit: 2, offset: 1 });
  assert.deepEqual(page.items.map((i) => i.key), ["c", "b"]);

  assert.deepEqual((await client.store.listNamespaces({ suffix: ["sub"] })).namespaces, [["q", "sub"]]);
  assert.deepEqual((await client.store.listNamespaces({ prefix: ["q"], limit: 1, offset: 1 })).namespaces, [["q", "sub"]]);
  assert.deepEqual((await client.store.getItem(["q", "sub"], "d", { refreshTtl: false })).value, { text: "fox fox" });
});
