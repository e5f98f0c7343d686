// The API mounted under a path prefix (examples/reference -prefix /agents,
// an http.StripPrefix in front of httpapi, as the README's embedding
// snippet mounts it), driven by the SDK pointed at the prefixed URL. The
// SDK resolves the Location and Content-Location headers of run endpoints
// against its apiUrl (client/base.js prepareFetchOptions: `${apiUrl}${path}`),
// so they are API-relative paths: a stream whose connection drops
// reconnects under the prefix (SDK-JS utils/stream.js streamWithRetry).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";
import { startServer, collect } from "./server.js";

let server;
before(async () => { server = await startServer("-prefix", "/agents"); });
after(async () => { await server?.stop(); });

const human = (content) => ({ role: "human", content });

// dropAfterFrames passes the first n SSE frames of a response through, then
// fails its body as a dropped connection does.
function dropAfterFrames(res, n) {
  const reader = res.body.getReader();
  let frames = 0;
  let prevNL = false;
  let cut = false;
  const body = new ReadableStream({
    async pull(controller) {
      if (cut) {
        // fail a little later, as a connection dropping between two events
        // does: an error discards the chunks still queued in the SDK's
        // decoding pipeline, so let it consume the frames first
        await new Promise((ok) => setTimeout(ok, 50));
        controller.error(new TypeError("fetch failed"));
        return;
      }
      const { done, value } = await reader.read();
      if (done) { controller.close(); return; }
      for (let i = 0; i < value.length; i++) {
        const nl = value[i] === 10;
        if (nl && prevNL && ++frames === n) {
          controller.enqueue(value.subarray(0, i + 1));
          cut = true;
          await reader.cancel();
          return;
        }
        prevNL = nl;
      }
      controller.enqueue(value);
    },
  });
  return new Response(body, { status: res.status, headers: res.headers });
}

test("the server answers under the prefix only", async () => {
  assert.match(server.url, /\/agents$/);
  const root = new URL(server.url).origin;
  assert.equal((await fetch(`${root}/ok`)).status, 404);
  assert.deepEqual(await (await fetch(`${server.url}/ok`)).json(), { ok: true });
  const landing = await (await fetch(`${server.url}/`)).json();
  assert.equal(landing.docs, "/agents/docs");
  assert.ok(landing.graphs.includes("agent"));
});

test("a run stream that drops reconnects through Location under the prefix", async () => {
  const requests = [];
  let dropped = false;
  const client = new Client({
    apiUrl: server.url,
    apiKey: null,
    callerOptions: {
      fetch: async (url, init) => {
        const path = new URL(url).pathname;
        const headers = new Headers(init?.headers);
        requests.push({ method: init?.method ?? "GET", path, lastEventId: headers.get("last-event-id") });
        const res = await fetch(url, init);
        if (!dropped && path.endsWith("/runs/stream")) {
          dropped = true;
          return dropAfterFrames(res, 2); // metadata and the first values
        }
        return res;
      },
    },
  });
  const thread = await client.threads.create();
  let created;
  const chunks = await collect(client.runs.stream(thread.thread_id, "agent", {
    input: { messages: [human("input")], sleep: { steps: 3, ms: 100 } },
    streamMode: ["values", "custom"], streamResumable: true,
    onRunCreated: (meta) => { created = meta; },
  }));
  // Content-Location under the prefix still names the run
  assert.equal(created.thread_id, thread.thread_id);
  const runId = created.run_id;

  // one reconnection, to the prefixed stream URL, after the last event seen
  const streams = requests.filter((r) => r.path.includes("/runs"));
  assert.deepEqual(streams.map((r) => `${r.method} ${r.path}`), [
    `POST /agents/threads/${thread.thread_id}/runs/stream`,
    `GET /agents/threads/${thread.thread_id}/runs/${runId}/stream`,
  ]);
  assert.equal(streams[1].lastEventId, "1");

  // nothing was lost or repeated: the events equal the run's whole log
  const full = await collect(client.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1" }));
  const body = (cs) => cs.filter((c) => c.event !== "metadata");
  assert.deepEqual(body(chunks), body(full));
  assert.deepEqual(body(full).map((c) => c.event), ["values", "custom", "custom", "custom", "values", "values", "values"]);
});

test("a stateless run stream reconnects under the prefix too", async () => {
  const requests = [];
  let dropped = false;
  const client = new Client({
    apiUrl: server.url,
    apiKey: null,
    callerOptions: {
      fetch: async (url, init) => {
        const path = new URL(url).pathname;
        requests.push(`${init?.method ?? "GET"} ${path}`);
        const res = await fetch(url, init);
        if (!dropped && path === "/agents/runs/stream") {
          dropped = true;
          return dropAfterFrames(res, 1);
        }
        return res;
      },
    },
  });
  const chunks = await collect(client.runs.stream(null, "agent", {
    input: { messages: [human("input")], sleep: { steps: 2, ms: 100 } },
    streamMode: ["custom"], streamResumable: true,
  }));
  assert.equal(requests.length, 2, requests.join("\n"));
  assert.match(requests[1], /^GET \/agents\/runs\/[0-9a-f-]+\/stream$/);
  assert.deepEqual(chunks.filter((c) => c.event === "custom").map((c) => c.data.step), [0, 1]);
});
