// Crons through the JS SDK (client.crons.*): create on a thread and
// stateless, search, count, update, delete; the runs a cron creates appear
// on its thread (or on new threads, for a stateless cron). The reference
// server fires due crons every second (Options.CronInterval's default), so
// "@every 1s" schedules fire within a couple of seconds.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { startServer } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

const human = (content) => ({ role: "human", content });
const contents = (values) => values.messages.map((m) => m.content);

// until polls fn until it returns a truthy value (crons fire on their own;
// polling is how an SDK client observes that).
async function until(what, fn, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(50);
  }
}

test("create, search, count, update and delete crons", async () => {
  const tag = randomUUID();
  const thread = await client.threads.create();
  const end = new Date(Date.now() + 48 * 3600 * 1000);
  end.setUTCMilliseconds(0);
  const onThread = await client.crons.createForThread(thread.thread_id, "agent", {
    schedule: "0 9 * * 1-5",
    timezone: "Europe/Paris",
    input: { messages: [human("weekday")] },
    metadata: { tag, kind: "thread" },
    multitaskStrategy: "enqueue",
    endTime: end.toISOString(),
  });
  assert.equal(onThread.thread_id, thread.thread_id);
  assert.equal(onThread.assistant_id, "fe096781-5601-53d2-b2f6-0d3403f7e9ca"); // agent's system assistant
  assert.equal(onThread.schedule, "0 9 * * 1-5");
  assert.equal(onThread.timezone, "Europe/Paris");
  assert.equal(onThread.enabled, true);
  assert.equal(onThread.on_run_completed, null);
  assert.equal(new Date(onThread.end_time).getTime(), end.getTime());
  const next = new Date(onThread.next_run_date);
  assert.ok(next > new Date() && next <= end, `next_run_date ${onThread.next_run_date}`);
  assert.deepEqual(onThread.payload.input, { messages: [human("weekday")] });
  assert.deepEqual(onThread.metadata, { tag, kind: "thread" });

  const stateless = await client.crons.create("agent", {
    schedule: "@hourly",
    input: { messages: [human("hourly")] },
    metadata: { tag, kind: "stateless" },
    onRunCompleted: "keep",
    enabled: false,
  });
  assert.equal(stateless.thread_id, null);
  assert.equal(stateless.timezone, null); // UTC
  assert.equal(stateless.on_run_completed, "keep");
  assert.equal(stateless.enabled, false);

  // search: filters, sort, paging, select
  const byAge = await client.crons.search({ metadata: { tag }, sortBy: "created_at", sortOrder: "asc" });
  assert.deepEqual(byAge.map((c) => c.cron_id), [onThread.cron_id, stateless.cron_id]);
  const newest = await client.crons.search({ metadata: { tag }, limit: 1 });
  assert.deepEqual(newest.map((c) => c.cron_id), [stateless.cron_id], "default order: created_at desc");
  const second = await client.crons.search({ metadata: { tag }, limit: 1, offset: 1 });
  assert.deepEqual(second.map((c) => c.cron_id), [onThread.cron_id]);
  assert.deepEqual(await client.crons.search({ threadId: thread.thread_id, select: ["cron_id", "schedule"] }),
    [{ cron_id: onThread.cron_id, schedule: "0 9 * * 1-5" }]);
  assert.deepEqual((await client.crons.search({ metadata: { tag }, enabled: false })).map((c) => c.cron_id), [stateless.cron_id]);
  assert.deepEqual((await client.crons.search({ assistantId: "agent", metadata: { tag }, sortBy: "next_run_date", sortOrder: "desc" })).length, 2);
  await assert.rejects(client.crons.search({ sortBy: "schedule" }), (e) => e.status === 422);

  // count
  assert.equal(await client.crons.count({ metadata: { tag } }), 2);
  assert.equal(await client.crons.count({ threadId: thread.thread_id }), 1);
  assert.equal(await client.crons.count({ assistantId: "agent", metadata: { tag, kind: "stateless" } }), 1);

  // update: fields change, metadata merges, an absent end_time stays, null clears it
  const updated = await client.crons.update(onThread.cron_id, { schedule: "30 8 * * *", enabled: false, metadata: { v: 2 } });
  assert.equal(updated.schedule, "30 8 * * *");
  assert.equal(updated.enabled, false);
  assert.deepEqual(updated.metadata, { tag, kind: "thread", v: 2 });
  assert.equal(new Date(updated.end_time).getTime(), end.getTime());
  const cleared = await client.crons.update(onThread.cron_id, { endTime: null, enabled: true });
  assert.equal(cleared.end_time, null);
  assert.equal(cleared.enabled, true);
  assert.equal(cleared.schedule, "30 8 * * *");
  await assert.rejects(client.crons.update(onThread.cron_id, { schedule: "every minute" }), (e) => e.status === 422);
  await assert.rejects(client.crons.update(onThread.cron_id, { timezone: "Mars/Olympus" }), (e) => e.status === 422);

  // bad input
  await assert.rejects(client.crons.create("agent", { schedule: "61 * * * *" }), (e) => e.status === 422);
  await assert.rejects(client.crons.createForThread(randomUUID(), "agent", { schedule: "@daily" }), (e) => e.status === 404);

  // delete
  await client.crons.delete(stateless.cron_id);
  await assert.rejects(client.crons.delete(stateless.cron_id), (e) => e.status === 404);
  await assert.rejects(client.crons.update(stateless.cron_id, { enabled: true }), (e) => e.status === 404);
  assert.equal(await client.crons.count({ metadata: { tag } }), 1);
  await client.crons.delete(onThread.cron_id);
  assert.equal(await client.crons.count({ metadata: { tag } }), 0);
});

test("a thread cron's runs appear on its thread; disabling it stops them", async () => {
  const thread = await client.threads.create();
  const cron = await client.crons.createForThread(thread.thread_id, "agent", {
    schedule: "@every 1s",
    input: { messages: [human("tick")] },
    multitaskStrategy: "enqueue",
  });
  const runs = await until("the cron's first run on the thread", async () => {
    const rs = await client.runs.list(thread.thread_id);
    return rs.length > 0 && rs;
  });
  const run = runs[runs.length - 1];
  assert.equal(run.thread_id, thread.thread_id);
  assert.equal(run.assistant_id, cron.assistant_id);
  assert.equal(run.kwargs.config.configurable.cron_id, cron.cron_id, "the run records the cron that made it");
  assert.deepEqual(contents(await client.runs.join(thread.thread_id, run.run_id)).slice(0, 2), ["tick", "begin"]);
  await until("a second firing", async () => (await client.runs.list(thread.thread_id)).length >= 2);

  // Disabled: the firing is claimed in the transaction that creates the
  // run, so once the update answers no new run appears.
  const off = await client.crons.update(cron.cron_id, { enabled: false });
  assert.equal(off.enabled, false);
  const count = (await client.runs.list(thread.thread_id, { limit: 100 })).length;
  await delay(2500); // more than two scheduler ticks and two schedule periods
  assert.equal((await client.runs.list(thread.thread_id, { limit: 100 })).length, count);
  await client.crons.delete(cron.cron_id);
  assert.equal(await client.crons.count({ threadId: thread.thread_id }), 0);
  // the runs it made stay
  assert.equal((await client.runs.list(thread.thread_id, { limit: 100 })).length, count);
});

test("a stateless cron runs on a new thread each time; keep keeps them", async () => {
  const tag = randomUUID();
  const cron = await client.crons.create("agent", {
    schedule: "@every 1s",
    input: { messages: [human("stateless")] },
    metadata: { cron_tag: tag },
    onRunCompleted: "keep",
  });
  const threads = await until("two threads made by the cron", async () => {
    const ts = await client.threads.search({ metadata: { cron_tag: tag } });
    return ts.length >= 2 && ts;
  });
  assert.notEqual(threads[0].thread_id, threads[1].thread_id);
  const runs = await client.runs.list(threads[0].thread_id);
  assert.equal(runs.length, 1);
  assert.equal(runs[0].kwargs.config.configurable.cron_id, cron.cron_id);
  await client.crons.delete(cron.cron_id);
  const made = (await client.threads.search({ metadata: { cron_tag: tag }, limit: 100 })).length;
  await delay(2500);
  assert.equal((await client.threads.search({ metadata: { cron_tag: tag }, limit: 100 })).length, made, "a deleted cron fires no more");
});

test("/info advertises crons", async () => {
  const res = await fetch(`${server.url}/info`);
  assert.equal((await res.json()).flags.crons, true);
});
