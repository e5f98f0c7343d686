// Access control through the official SDK, against examples/reference -auth
// (the configuration of reference-auth.md): HS256 bearer JWTs signed here
// with jose, two users, owner stamping and filters on assistants and
// threads (and through them runs, state, history, streams and crons), the
// namespace rule of the store, and the global handler's permission check.
// Ports langgraphjs libs/langgraph-api/tests/auth.test.mts, following our
// contract where it differs: a thread hidden by a filter is a 404 for run
// creation and joins too (reference-auth.md, wire contract §7.5).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { SignJWT } from "jose";
import { Client } from "@langchain/langgraph-sdk";
import { startServer, collect } from "./server.js";

const SECRET = new TextEncoder().encode("09d25e094faa6ca2556c818166b7a9563b93f7099f6f0f4caa6cf63b88e8d3e7");
const config = { configurable: { user_id: "123" } };
const input = { messages: [{ role: "human", content: "foo" }] };

let server;
before(async () => { server = await startServer("-auth"); });
after(async () => { await server?.stop(); });

async function token(sub, scopes, { exp } = {}) {
  const claims = scopes === undefined ? { sub } : { sub, scopes };
  let jwt = new SignJWT(claims).setProtectedHeader({ alg: "HS256" });
  if (exp !== undefined) jwt = jwt.setExpirationTime(exp);
  return jwt.sign(SECRET);
}

async function clientFor(sub, scopes = []) {
  return new Client({ apiUrl: server.url, apiKey: null, defaultHeaders: { Authorization: `Bearer ${await token(sub, scopes)}` } });
}

const status = (code) => (e) => e.status === code;

async function raw(path, headers = {}) {
  const res = await fetch(server.url + path, { headers });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

test("authentication: 401 without a valid token, public routes open", async () => {
  for (const headers of [{}, { Authorization: "Basic abc" }, { Authorization: "Bearer" }]) {
    const res = await raw("/threads/00000000-0000-4000-8000-000000000001", headers);
    assert.equal(res.status, 401);
    assert.deepEqual(res.body, { detail: "Could not validate credentials" });
    assert.equal(res.headers.get("www-authenticate"), "Bearer");
  }
  const expired = await token("johndoe", ["me"], { exp: Math.floor(Date.now() / 1000) - 60 });
  let res = await raw("/assistants/agent", { Authorization: `Bearer ${expired}` });
  assert.equal(res.status, 401);
  assert.deepEqual(res.body, { detail: "Failed to verify JWT token" });
  const forged = await new SignJWT({ sub: "johndoe", scopes: ["me"] }).setProtectedHeader({ alg: "HS256" })
    .sign(new TextEncoder().encode("another secret"));
  res = await raw("/assistants/agent", { Authorization: `bearer ${forged}` });
  assert.deepEqual(res.body, { detail: "Failed to verify JWT token" });

  const stranger = await clientFor("wfh", ["me"]);
  await assert.rejects(stranger.assistants.create({ graphId: "agent" }), status(401), "unknown user");

  assert.equal((await raw("/ok")).status, 200);
  const info = await raw("/info");
  assert.equal(info.status, 200);
  assert.equal(info.body.flags.auth, true);
});

test("assistants: create needs assistants:write, stamps the owner; search, update, delete see only one's own", async () => {
  await assert.rejects((await clientFor("johndoe")).assistants.create({ graphId: "agent" }), status(403), "no scopes");
  await assert.rejects((await clientFor("johndoe", ["foo"])).assistants.create({ graphId: "agent" }), status(403));

  const owner = await clientFor("johndoe", ["assistants:write"]);
  const other = await clientFor("alice", ["assistants:write"]);
  const mine = await owner.assistants.create({ graphId: "agent", metadata: { tag: "auth-e2e" } });
  assert.equal(mine.metadata.owner, "johndoe");
  const theirs = await other.assistants.create({ graphId: "agent", metadata: { tag: "auth-e2e" } });

  const found = await owner.assistants.search({ graphId: "agent", metadata: { tag: "auth-e2e" } });
  assert.deepEqual(found.map((a) => a.assistant_id), [mine.assistant_id]);
  const seen = (await other.assistants.search()).map((a) => a.assistant_id);
  assert.ok(seen.includes(theirs.assistant_id) && !seen.includes(mine.assistant_id));
  assert.equal(await other.assistants.count({ metadata: { tag: "auth-e2e" } }), 1);

  await assert.rejects(other.assistants.get(mine.assistant_id), status(404));
  await assert.rejects(other.assistants.update(mine.assistant_id, { metadata: { foo: "bar" } }), status(404));
  await assert.rejects(other.assistants.delete(mine.assistant_id), status(404));
  await assert.rejects(other.assistants.getGraph(mine.assistant_id), status(404));
  await assert.rejects(other.assistants.getVersions(mine.assistant_id), status(404));
  await assert.rejects(other.assistants.setLatest(mine.assistant_id, 1), status(404));
  const updated = await owner.assistants.update(mine.assistant_id, { metadata: { foo: "bar" } });
  assert.equal(updated.metadata.owner, "johndoe");
  assert.equal(updated.metadata.foo, "bar");
  await owner.assistants.delete(mine.assistant_id);
});

test("threads: create needs me/threads:write; others' threads are missing for every operation", async () => {
  await assert.rejects((await clientFor("johndoe", ["read"])).threads.create(), status(403));
  const owner = await clientFor("johndoe", ["me"]);
  const other = await clientFor("alice", ["me"]);
  const thread = await owner.threads.create({ metadata: { tag: "t-e2e" } });
  assert.equal(thread.metadata.owner, "johndoe");

  await assert.rejects(other.threads.get(thread.thread_id), status(404));
  await assert.rejects(other.threads.update(thread.thread_id, { metadata: { foo: "bar" } }), status(404));
  await assert.rejects(other.threads.delete(thread.thread_id), status(404));
  await assert.rejects(other.threads.copy(thread.thread_id), status(404));
  await assert.rejects(other.threads.getState(thread.thread_id), status(404));
  await assert.rejects(other.threads.updateState(thread.thread_id, { values: { messages: [] } }), status(404));
  await assert.rejects(other.threads.getHistory(thread.thread_id), status(404));
  assert.deepEqual(await other.threads.search({ metadata: { tag: "t-e2e" } }), []);
  assert.equal(await other.threads.count({ metadata: { tag: "t-e2e" } }), 0);
  assert.equal(await owner.threads.count({ metadata: { tag: "t-e2e" } }), 1);

  const copy = await owner.threads.copy(thread.thread_id);
  assert.equal(copy.metadata.owner, "johndoe");
  assert.deepEqual(await owner.threads.getHistory(thread.thread_id), []);
});

test("runs: the owner runs, reads history and joins; the other user cannot run, join, list or cancel", async () => {
  const owner = await clientFor("johndoe", ["me"]);
  const other = await clientFor("alice", ["me"]);
  const thread = await owner.threads.create();
  await owner.runs.wait(thread.thread_id, "agent", { input, config });
  const history = await owner.threads.getHistory(thread.thread_id);
  assert.ok(history.length > 0);
  await assert.rejects(other.threads.getHistory(thread.thread_id), status(404));
  await assert.rejects(other.runs.wait(thread.thread_id, "agent", { input, config }), status(404));
  await assert.rejects(other.runs.create(thread.thread_id, "agent", { input, config }), status(404));

  const run = await owner.runs.create(thread.thread_id, "agent", { input, config });
  assert.equal(run.kwargs.config.configurable.langgraph_auth_user_id, "johndoe");
  assert.deepEqual(run.kwargs.config.configurable.langgraph_auth_permissions, ["me"]);
  assert.equal(run.kwargs.config.configurable.langgraph_auth_user.email, "johndoe@example.com");
  await assert.rejects(collect(other.runs.joinStream(thread.thread_id, run.run_id)), status(404));
  await assert.rejects(other.runs.join(thread.thread_id, run.run_id), status(404));
  await assert.rejects(other.runs.get(thread.thread_id, run.run_id), status(404));
  await assert.rejects(other.runs.list(thread.thread_id), status(404));
  await assert.rejects(other.runs.cancel(thread.thread_id, run.run_id), status(404));
  await assert.rejects(other.runs.delete(thread.thread_id, run.run_id), status(404));
  await assert.rejects(collect(other.threads.joinStream(thread.thread_id)), status(404));
  await owner.runs.join(thread.thread_id, run.run_id);
  assert.equal((await owner.runs.get(thread.thread_id, run.run_id)).status, "success");
  assert.equal((await owner.runs.list(thread.thread_id)).length, 2);
});

test("stateless runs belong to their caller", async () => {
  const owner = await clientFor("johndoe", ["me", "assistants:write"]);
  const other = await clientFor("alice", ["me"]);
  const assistant = await owner.assistants.create({ graphId: "agent" });
  const values = await owner.runs.wait(null, assistant.assistant_id, { input, config });
  assert.ok(values.messages.length > 0);
  const chunks = await collect(owner.runs.stream(null, assistant.assistant_id, { input, config }));
  assert.equal(chunks.find((c) => c.event === "error"), undefined);

  await owner.runs.wait(null, "agent", { input, config, onCompletion: "keep", metadata: { tag: "kept" } });
  const kept = await owner.threads.search({ metadata: { tag: "kept" } });
  assert.equal(kept.length, 1);
  assert.equal(kept[0].metadata.owner, "johndoe");
  assert.deepEqual(await other.threads.search({ metadata: { tag: "kept" } }), []);
});

test("the graph sees the user: agent_simple stores under [identity]", async () => {
  const owner = await clientFor("johndoe", ["me"]);
  const other = await clientFor("alice", ["me"]);
  await owner.runs.wait(null, "agent_simple", { input: { messages: [{ role: "human", content: "remember me" }] } });
  assert.deepEqual((await owner.store.getItem(["johndoe"], "key_one")).value, { text: "remember me" });
  await assert.rejects(other.store.getItem(["johndoe"], "key_one"), status(403));
});

test("store: namespaces must hold the identity; searches and listings see only those", async () => {
  const john = await clientFor("johndoe", ["me"]);
  const alice = await clientFor("alice", ["me"]);
  await john.store.putItem(["johndoe", "notes"], "a", { text: "john's" });
  await alice.store.putItem(["alice", "notes"], "a", { text: "alice's" });
  await assert.rejects(alice.store.putItem(["johndoe", "notes"], "b", { text: "x" }), status(403));
  await assert.rejects(alice.store.getItem(["johndoe", "notes"], "a"), status(403));
  await assert.rejects(alice.store.deleteItem(["johndoe", "notes"], "a"), status(403));
  await assert.rejects(alice.store.searchItems(["johndoe"]), status(403));
  await assert.rejects(alice.store.listNamespaces({ prefix: ["johndoe"] }), status(403));

  const found = await alice.store.searchItems([]);
  assert.ok(found.items.length > 0);
  assert.ok(found.items.every((i) => i.namespace.includes("alice")), JSON.stringify(found.items));
  const ns = await alice.store.listNamespaces();
  assert.ok(ns.namespaces.every((n) => n.includes("alice")), JSON.stringify(ns.namespaces));
  assert.equal((await john.store.getItem(["johndoe", "notes"], "a")).value.text, "john's");
});

test("crons: the global handler needs permissions; a thread's crons are seen only by who sees the thread", async () => {
  const john = await clientFor("johndoe", ["me"]);
  const alice = await clientFor("alice", ["me"]);
  const none = await clientFor("johndoe", []);
  const thread = await john.threads.create();
  await assert.rejects(none.crons.createForThread(thread.thread_id, "agent", { schedule: "0 0 1 1 *", input }), status(403));
  await assert.rejects(none.crons.search(), status(403));

  const cron = await john.crons.createForThread(thread.thread_id, "agent", { schedule: "0 0 1 1 *", input, metadata: { tag: "cron-e2e" } });
  assert.equal(cron.user_id, "johndoe", "the creator is the cron's user_id");
  await assert.rejects(alice.crons.createForThread(thread.thread_id, "agent", { schedule: "0 0 1 1 *", input }), status(404));
  assert.deepEqual((await alice.crons.search({ threadId: thread.thread_id })), []);
  assert.deepEqual((await alice.crons.search({ metadata: { tag: "cron-e2e" } })), []);
  assert.equal(await alice.crons.count({ metadata: { tag: "cron-e2e" } }), 0);
  await assert.rejects(alice.crons.update(cron.cron_id, { schedule: "0 0 2 1 *" }), status(404));
  await assert.rejects(alice.crons.delete(cron.cron_id), status(404));

  const found = await john.crons.search({ metadata: { tag: "cron-e2e" } });
  assert.deepEqual(found.map((c) => c.cron_id), [cron.cron_id]);
  assert.equal(await john.crons.count({ threadId: thread.thread_id }), 1);
  await john.crons.delete(cron.cron_id);
  assert.equal(await john.crons.count({ threadId: thread.thread_id }), 0);
});

test("a user without permissions: the global handler refuses crons, the store asks only for the identity", async () => {
  const none = await clientFor("johndoe", []);
  await assert.rejects(none.crons.create("agent", { schedule: "0 0 1 1 *" }), status(403));
  await assert.rejects(none.threads.create(), status(403), "threads:create needs me");
  await none.store.putItem(["johndoe"], "perm-less", { ok: true });
  const me = await clientFor("johndoe", ["me"]);
  assert.equal((await me.store.getItem(["johndoe"], "perm-less")).value.ok, true);
});
