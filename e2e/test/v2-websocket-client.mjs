// Drives protocol v2 over the WebSocket transport (streamProtocol
// "v2-websocket") against the server at argv[2]: run.start, the progress
// events and streamed text until the interrupt, input.respond, the end. Run by
// v2.test.js in a node of its own, started with --experimental-websocket where
// the global WebSocket the SDK needs is missing (Node 20); prints a JSON summary.
import { Client } from "@langchain/langgraph-sdk";
const [url] = process.argv.slice(2);
const client = new Client({ apiUrl: url, apiKey: null, streamProtocol: "v2-websocket" });
const thread = client.threads.stream({ assistantId: "agent" });
const seen = [];
thread.onEvent((e) => seen.push(e));
await thread.run.start({ input: { messages: [], value: "init", items: [] } });
const sub = await thread.subscribe(["custom", "messages"]);
const waitFor = async (c) => { const d = Date.now() + 15000; while (!c()) { if (Date.now() > d) throw new Error("timeout " + JSON.stringify(seen.map(e=>[e.method,e.params.data.event]))); await new Promise((r) => setTimeout(r, 20)); } };
await waitFor(() => thread.interrupted && seen.filter((e) => e.method === "custom").length >= 5);
await thread.input.respond({ interrupt_id: thread.interrupts[0].interruptId, namespace: [], response: "yes" });
await waitFor(() => seen.some((e) => e.method === "lifecycle" && e.params.namespace.length === 0 && e.params.data.event === "completed"));
console.log(JSON.stringify({ ids: seen.map((e) => e.event_id), steps: seen.filter((e) => e.method === "custom").map((e) => e.params.data.step), text: seen.filter((e) => e.method === "messages" && e.params.data.event === "content-block-delta").map((e) => e.params.data.delta.text).join(""), payload: thread.interrupts[0]?.payload }));
await sub.unsubscribe().catch(() => {});
await thread.close();
