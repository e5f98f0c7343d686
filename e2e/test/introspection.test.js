// Assistants' graph drawing, JSON schemas and subgraphs, as the SDK's
// assistants.getGraph / getSchemas / getSubgraphs return them.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "./server.js";

let server, client;
before(async () => { server = await startServer(); client = server.client; });
after(async () => { await server?.stop(); });

const edgeKey = (e) => `${e.source}->${e.target}${e.conditional ? " (conditional)" : ""}`;

test("agent drawing: schema pseudo-nodes, runnable nodes, conditional edges", async () => {
  const a = await client.assistants.create({ graphId: "agent" });
  const g = await client.assistants.getGraph(a.assistant_id);
  const nodes = Object.fromEntries(g.nodes.map((n) => [n.id, n]));
  assert.deepEqual(Object.keys(nodes).sort(), ["__end__", "__start__", "agent", "checkSharedState", "tool"]);
  assert.equal(nodes.__start__.type, "schema");
  assert.equal(nodes.__end__.type, "schema");
  for (const id of ["agent", "tool", "checkSharedState"]) {
    assert.equal(nodes[id].type, "runnable");
    assert.equal(nodes[id].data.name, id);
  }
  assert.deepEqual(g.edges.map(edgeKey).sort(), [
    "__start__->agent",
    "agent->__end__ (conditional)",
    "agent->checkSharedState (conditional)",
    "agent->tool (conditional)",
    "checkSharedState->__end__",
    "tool->agent",
  ]);
  // the graph id works in place of an assistant id
  assert.deepEqual(await client.assistants.getGraph("agent"), g);
});

test("weather drawing with xray expands the subgraph", async () => {
  const flat = await client.assistants.getGraph("weather");
  assert.ok(flat.nodes.some((n) => n.id === "weather_graph"));
  assert.ok(flat.edges.some((e) => e.source === "router_node" && e.target === "weather_graph" && e.conditional));
  const xray = await client.assistants.getGraph("weather", { xray: true });
  const ids = xray.nodes.map((n) => n.id);
  assert.ok(ids.includes("weather_graph:model_node"), ids.join(","));
  assert.ok(ids.includes("weather_graph:weather_node"), ids.join(","));
  assert.ok(!ids.includes("weather_graph"));
});

test("schemas: config, context, state with langgraph_type", async () => {
  const agent = await client.assistants.getSchemas("agent");
  assert.equal(agent.graph_id, "agent");
  assert.notEqual(agent.input_schema, null);
  assert.notEqual(agent.output_schema, null);
  assert.deepEqual(agent.config_schema.properties, { model_name: { type: "string" } });
  assert.equal(agent.config_schema.type, "object");
  assert.equal(agent.state_schema.type, "object");
  assert.equal(agent.state_schema.properties.messages.type, "array");
  for (const key of ["messages", "sharedStateValue", "interrupt", "keyOne", "keyTwo", "sleep", "sharedStateFromStoreConfig"]) {
    assert.ok(key in agent.state_schema.properties, key);
  }

  const model = { type: "object", properties: { model: { type: "string", enum: ["anthropic", "openai", "unknown"] } } };
  const runtime = await client.assistants.getSchemas("simple_runtime");
  assert.deepEqual(runtime.config_schema, model);
  assert.deepEqual(runtime.context_schema, model);

  const ss = await client.assistants.getSchemas("state_schema_graph");
  assert.equal(ss.state_schema.properties.messages.langgraph_type, "messages");
  assert.equal(ss.state_schema.properties.count.type, "number");

  const zr = await client.assistants.getSchemas("zod_registry_graph");
  assert.equal(zr.state_schema.properties.messages.langgraph_type, "messages");
  assert.deepEqual(zr.state_schema.properties.status.enum, ["idle", "processing", "done"]);

  const pz = await client.assistants.getSchemas("plain_zod_graph");
  assert.deepEqual(Object.keys(pz.state_schema.properties).sort(), ["counter", "items", "label"]);
  assert.equal(pz.state_schema.properties.items.type, "array");
  assert.equal(pz.state_schema.properties.items.langgraph_type, undefined);
});

test("subgraphs of nested, flat and recursive, and by namespace", async () => {
  const a = await client.assistants.create({ graphId: "nested" });
  const flat = await client.assistants.getSubgraphs(a.assistant_id);
  assert.deepEqual(Object.keys(flat), ["gp_two"]);

  const all = await client.assistants.getSubgraphs(a.assistant_id, { recurse: true });
  assert.deepEqual(Object.keys(all).sort(), ["gp_two", "gp_two|p_two"]);
  const parent = all.gp_two.state_schema;
  assert.equal(parent.type, "object");
  assert.deepEqual(parent.properties.parent, { type: "string", enum: ["parent_one", "parent_two"] });
  assert.equal(parent.properties.messages.type, "array");
  const child = all["gp_two|p_two"].state_schema;
  assert.deepEqual(child.properties.child, { type: "string", enum: ["child_one", "child_two"] });
  assert.equal(child.properties.messages.type, "array");

  const one = await client.assistants.getSubgraphs(a.assistant_id, { namespace: "gp_two" });
  assert.deepEqual(Object.keys(one), ["gp_two"]);

  const weather = await client.assistants.getSubgraphs("weather");
  assert.deepEqual(Object.keys(weather), ["weather_graph"]);
  assert.deepEqual(Object.keys(weather.weather_graph.state_schema.properties).sort(), ["city", "messages"]);
  assert.deepEqual(await client.assistants.getSubgraphs("agent"), {});
});
