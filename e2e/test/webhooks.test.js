// Webhooks: a run created through the SDK with `webhook` is POSTed to a local
// receiver when it ends, retried after a failure, with the run record of §6.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { startServer } from "./server.js";

let server, client, receiver, url;
const deliveries = [];
let notify = () => {};

before(async () => {
  server = await startServer("-allow-private-webhooks");
  client = server.client;
  receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => { body += d; });
    req.on("end", () => {
      deliveries.push({ headers: req.headers, body: JSON.parse(body) });
      // The first delivery fails: the server must retry.
      res.writeHead(deliveries.length === 1 ? 503 : 200).end();
      notify();
    });
  });
  await new Promise((ok) => receiver.listen(0, "127.0.0.1", ok));
  url = `http://127.0.0.1:${receiver.address().port}/hook`;
});
after(async () => {
  await server?.stop();
  await new Promise((ok) => receiver?.close(ok));
});

function deliveriesReach(n) {
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`only ${deliveries.length} deliveries`)), 15000);
    notify = () => { if (deliveries.length >= n) { clearTimeout(timer); ok(); } };
    notify();
  });
}

test("a finished run is posted to its webhook, retried after a 503", async () => {
  const thread = await client.threads.create();
  const out = await client.runs.wait(thread.thread_id, "agent", {
    input: { messages: [{ role: "human", content: "foo" }] },
    config: { configurable: { user_id: "123" } },
    webhook: url,
  });
  assert.deepEqual(out.messages.map((m) => m.content), ["foo", "begin", "tool_call__begin", "end"]);

  await deliveriesReach(2);
  const [failed, ok] = deliveries;
  const { webhook_sent_at: sentFirst, ...first } = failed.body;
  const { webhook_sent_at: sentAgain, ...again } = ok.body;
  assert.deepEqual(again, first, "a retry sends the same record");
  assert.ok(Date.parse(sentAgain) > Date.parse(sentFirst), "with a new webhook_sent_at");
  assert.equal(ok.headers["content-type"], "application/json");
  const hook = ok.body;
  const runs = await client.runs.list(thread.thread_id);
  assert.equal(hook.run_id, runs[0].run_id);
  assert.equal(hook.thread_id, thread.thread_id);
  assert.equal(hook.assistant_id, "fe096781-5601-53d2-b2f6-0d3403f7e9ca");
  assert.equal(hook.status, "success");
  assert.equal(hook.kwargs.webhook, url);
  assert.deepEqual(hook.values.messages.map((m) => m.content), ["foo", "begin", "tool_call__begin", "end"]);
  for (const k of ["run_started_at", "run_ended_at", "webhook_sent_at"]) {
    assert.ok(!Number.isNaN(Date.parse(hook[k])), `${k} is a timestamp: ${hook[k]}`);
  }
  assert.ok(Date.parse(hook.run_started_at) <= Date.parse(hook.run_ended_at));
});

test("a private webhook address is refused unless the server allows it", async () => {
  const strict = await startServer();
  try {
    const thread = await strict.client.threads.create();
    await assert.rejects(
      strict.client.runs.create(thread.thread_id, "agent", { input: { messages: [] }, webhook: url }),
      (e) => e.status === 422,
    );
    assert.deepEqual(await strict.client.runs.list(thread.thread_id), [], "nothing was created");
  } finally {
    await strict.stop();
  }
});
