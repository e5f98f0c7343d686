// A run longer than any server-side request or run time-out in the way:
// 12 seconds (the delay graph), joined and streamed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, collect } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

test("a 12-second run completes: join, joinStream and state", { timeout: 30000 }, async () => {
  const thread = await client.threads.create();
  const run = await client.runs.create(thread.thread_id, "delay", { input: { messages: [], delay: 12000 } });
  const started = Date.now();
  const [joined, streamed] = await Promise.all([
    client.runs.join(thread.thread_id, run.run_id),
    collect(client.runs.joinStream(thread.thread_id, run.run_id)),
  ]);
  assert.ok(Date.now() - started >= 11000, "the run really took its time");
  assert.equal((await client.runs.get(thread.thread_id, run.run_id)).status, "success");
  assert.deepEqual(joined.messages.map((m) => [m.type, m.content]), [["human", "finished after 12000ms"]]);
  assert.equal(joined.delay, 12000);
  assert.equal(streamed.at(-1).event, "values");
  assert.deepEqual(streamed.at(-1).data, joined);
  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(state.values, joined);
});
