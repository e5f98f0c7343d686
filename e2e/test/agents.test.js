// The five LangGraph agents of examples/agents, driven end to end through
// the official JS SDK: a ReAct loop stopping on RemainingSteps, a map-reduce
// with Send and a join, a supervisor whose sub-agents hand off with a
// Command to the parent graph, a human-in-the-loop approval whose
// interrupt() is in a subgraph invoked from a node, and the functional API
// (an entrypoint calling a task, then interrupt()).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startAgentsServer, collect } from "./server.js";

let server, client;
before(async () => { server = await startAgentsServer(); client = server.client; });
after(async () => { await server?.stop(); });

const human = (content) => ({ type: "human", content });
const of = (chunks, event) => chunks.filter((c) => c.event === event).map((c) => c.data);

test("react: tool loop with streamed tokens", async () => {
  const thread = await client.threads.create();
  const chunks = await collect(client.runs.stream(thread.thread_id, "react", {
    input: { messages: [human("What is the weather in Paris?")] }, streamMode: ["updates", "messages-tuple"],
  }));
  const updates = of(chunks, "updates");
  assert.deepEqual(updates.map((u) => Object.keys(u)[0]), ["agent", "tools", "agent"]);
  assert.deepEqual(updates[0].agent.messages.tool_calls.map((c) => [c.name, c.args]), [["get_weather", { city: "Paris" }]]);
  assert.equal(updates[1].tools.messages[0].content, "It's always sunny in Paris!");
  // the answer streams word by word, all chunks under the final message's id
  const tokens = of(chunks, "messages").filter(([m]) => m.type === "AIMessageChunk" && m.content !== "");
  const answer = "Here is what I found: It's always sunny in Paris!";
  assert.equal(tokens.map(([m]) => m.content).join(""), answer);
  assert.ok(tokens.length > 5);
  assert.equal(tokens[0][1].langgraph_node, "agent");
  const state = await client.threads.getState(thread.thread_id);
  assert.equal(state.values.messages.at(-1).content, answer);
  assert.equal(state.values.messages.at(-1).id, tokens[0][0].id);
  assert.ok(!("remaining_steps" in state.values), "a managed value is not stored");
});

test("react: a loop that would hit the recursion limit stops on RemainingSteps", async () => {
  const thread = await client.threads.create();
  const out = await client.runs.wait(thread.thread_id, "react", {
    input: { messages: [human("keep searching for gold")] }, config: { recursion_limit: 8 },
  });
  const last = out.messages.at(-1);
  assert.equal(last.content, "Sorry, need more steps to process this request.");
  assert.deepEqual(last.tool_calls, []);
  // agent steps 1, 3, 5 called the tool; step 7 had fewer than 2 steps left
  assert.equal(out.messages.filter((m) => m.type === "tool").length, 3);
  const [run] = await client.runs.list(thread.thread_id);
  assert.equal(run.status, "success");
  assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
});

test("map_reduce: Send fans out, the join runs best_joke once after the longer branch", async () => {
  const thread = await client.threads.create();
  const chunks = await collect(client.runs.stream(thread.thread_id, "map_reduce", {
    input: { topic: "cats" }, streamMode: ["tasks", "updates", "values"],
  }));
  const starts = of(chunks, "tasks").filter((t) => "input" in t);
  const jokes = starts.filter((t) => t.name === "generate_joke");
  assert.deepEqual(jokes.map((t) => t.input), [{ subject: "cats at work" }, { subject: "cats at home" }, { subject: "cats on holiday" }]);
  assert.deepEqual(jokes[0].triggers, ["__pregel_push"]);
  const best = starts.filter((t) => t.name === "best_joke");
  assert.equal(best.length, 1, "a join runs its target once");
  assert.deepEqual(best[0].triggers, ["join:generate_joke+audience_summary:best_joke"]);
  assert.ok(starts.indexOf(best[0]) > starts.findIndex((t) => t.name === "audience_summary"));

  // two writes of one channel: a list in updates, {"$writes": [...]} in the task result
  const summary = of(chunks, "tasks").find((t) => t.name === "audience_summary" && "result" in t);
  assert.deepEqual(summary.result, { audience: { $writes: ["summary: keep it short", "summary: tell the home joke"] } });
  const upd = of(chunks, "updates").find((u) => "audience_summary" in u);
  assert.deepEqual(upd.audience_summary, [{ audience: "summary: keep it short" }, { audience: "summary: tell the home joke" }]);

  const final = of(chunks, "values").at(-1);
  assert.equal(final.jokes.length, 3);
  assert.equal(final.best, "Why are cats at home so funny? Because they never stop.");
  const history = await client.threads.getHistory(thread.thread_id);
  assert.deepEqual(history.map((h) => h.next).reverse(),
    [["__start__"], ["audience_survey", "generate_topics"], ["generate_joke", "generate_joke", "generate_joke", "audience_profile"],
      ["audience_summary"], ["best_joke"], []]);
});

test("supervisor: sub-agents hand off with a Command to the parent graph", async () => {
  const thread = await client.threads.create();
  const chunks = await collect(client.runs.stream(thread.thread_id, "supervisor", {
    input: { messages: [human("write a report on cats")] }, streamMode: ["updates"], streamSubgraphs: true,
  }));
  const root = chunks.filter((c) => c.event === "updates").map((c) => Object.keys(c.data)[0]);
  assert.deepEqual(root, ["supervisor", "researcher", "writer", "supervisor"]);
  // the researcher's handoff updated the parent: its messages and the next agent
  const researcher = of(chunks, "updates").find((u) => "researcher" in u).researcher;
  assert.equal(researcher.active_agent, "writer");
  assert.deepEqual(researcher.messages.slice(-2).map((m) => [m.type, m.name, m.content]), [
    ["ai", "researcher", "Research notes on write a report on cats: it is widely loved."],
    ["tool", "transfer_to_writer", "Successfully transferred to writer"],
  ]);
  // each agent's own steps stream under its namespace
  const nested = chunks.filter((c) => c.event.startsWith("updates|researcher:"));
  assert.deepEqual(nested.map((c) => Object.keys(c.data)[0]), ["agent"]);

  const state = await client.threads.getState(thread.thread_id);
  assert.equal(state.values.active_agent, "supervisor");
  assert.deepEqual(state.values.messages.map((m) => `${m.type}:${m.name ?? ""}`), [
    "human:", "ai:supervisor", "tool:transfer_to_researcher", "ai:researcher", "tool:transfer_to_writer",
    "ai:writer", "tool:transfer_back_to_supervisor", "ai:supervisor",
  ]);
  assert.match(state.values.messages.at(-1).content, /^The team is done\. Final report/);
});

test("approval: interrupt() in a subgraph invoked from a node pauses the run; resume continues it", async () => {
  const thread = await client.threads.create();
  const chunks = await collect(client.runs.stream(thread.thread_id, "approval", {
    input: { request: "Oslo" }, streamMode: ["updates", "values"], streamSubgraphs: true,
  }));
  const question = { question: "Approve this booking?", booking: "flight to Oslo, seat 12A" };
  const [interrupt] = of(chunks, "updates").find((u) => "__interrupt__" in u).__interrupt__;
  assert.deepEqual(interrupt.value, question);
  const sub = chunks.find((c) => c.event.startsWith("updates|execute:") && "__interrupt__" in c.data);
  assert.ok(sub, "the subgraph's interrupt streams under its namespace");

  assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");
  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(state.next, ["execute"]);
  const [task] = state.tasks;
  assert.deepEqual(task.interrupts, [interrupt]);
  const ns = `execute:${task.id}`;
  assert.deepEqual(task.checkpoint, { thread_id: thread.thread_id, checkpoint_ns: ns });
  assert.equal(sub.event, `updates|${ns}`);
  const expanded = await client.threads.getState(thread.thread_id, undefined, { subgraphs: true });
  assert.deepEqual(expanded.tasks[0].state.next, ["review"]);
  assert.equal(expanded.tasks[0].state.values.booking, "flight to Oslo, seat 12A");
  const review = await client.threads.getState(thread.thread_id, { checkpoint_ns: ns });
  assert.deepEqual(review.next, ["review"]);

  const out = await client.runs.wait(thread.thread_id, "approval", { command: { resume: "approve" } });
  assert.deepEqual(out.status, ["booked: flight to Oslo, seat 12A"]);
  assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
});

test("approval: two bookings pending; a plain resume cannot choose, a resume map answers each by id", async () => {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, "approval", { input: { request: "Oslo and Rome" } });
  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(state.next, ["execute", "execute"]);
  assert.equal(state.interrupts.length, 2);
  const byBooking = Object.fromEntries(state.interrupts.map((i) => [i.value.booking, i.id]));

  // LangGraph's _first: "When there are multiple pending interrupts, you must specify the interrupt id"
  await assert.rejects(client.runs.wait(thread.thread_id, "approval", { command: { resume: "approve" } }),
    /RuntimeError: When there are multiple pending interrupts, you must specify the interrupt id when resuming/);
  const still = await client.threads.getState(thread.thread_id);
  assert.deepEqual(still.interrupts, state.interrupts, "nothing was resumed");

  const out = await client.runs.wait(thread.thread_id, "approval", { command: { resume: {
    [byBooking["flight to Oslo, seat 12A"]]: "approve", [byBooking["flight to Rome, seat 12A"]]: "reject",
  } } });
  assert.deepEqual(out.status.sort(), ["booked: flight to Oslo, seat 12A", "cancelled: flight to Rome, seat 12A"]);
  assert.equal((await client.threads.get(thread.thread_id)).status, "idle");
});

test("map_reduce: a replay from a checkpoint id reruns its tasks", async () => {
  const thread = await client.threads.create();
  await client.runs.wait(thread.thread_id, "map_reduce", { input: { topic: "dogs" } });
  const history = await client.threads.getHistory(thread.thread_id);
  const fanned = history.find((h) => h.next.length === 4);
  // the step's tasks all finished and saved their writes there
  assert.ok(fanned.tasks.every((t) => t.result !== null));
  const chunks = await collect(client.runs.stream(thread.thread_id, "map_reduce", {
    input: null, checkpoint: fanned.checkpoint, streamMode: ["tasks"],
  }));
  const started = of(chunks, "tasks").filter((t) => "input" in t).map((t) => t.name);
  assert.deepEqual(started, ["generate_joke", "generate_joke", "generate_joke", "audience_profile", "audience_summary", "best_joke"]);
  const state = await client.threads.getState(thread.thread_id);
  assert.equal(state.values.best, "Why are dogs at home so funny? Because they never stop.");
});

test("essay: functional API — a task's update streams, interrupt() pauses, the resumed entrypoint reuses the task's result", async () => {
  const thread = await client.threads.create();
  const chunks = await collect(client.runs.stream(thread.thread_id, "essay", {
    input: "cats", streamMode: ["updates", "tasks", "values"],
  }));
  // LangGraph's test_imp_task: {task: result} as the task finishes, then the interrupt
  const updates = of(chunks, "updates");
  assert.deepEqual(updates[0], { compose_essay: "An essay about cats" });
  const question = { question: "Please provide a review", essay: "An essay about cats" };
  assert.deepEqual(updates.slice(1).map((u) => Object.keys(u)), [["__interrupt__"]]);
  const [interrupt] = updates[1].__interrupt__;
  assert.deepEqual(interrupt.value, question);
  // the task call is a PUSH task of the entrypoint's step
  const started = of(chunks, "tasks").filter((t) => "input" in t);
  assert.deepEqual(started.map((t) => [t.name, t.triggers]), [["review_workflow", ["__start__"]], ["compose_essay", ["__pregel_push"]]]);
  assert.equal(started[0].input, "cats");

  assert.equal((await client.threads.get(thread.thread_id)).status, "interrupted");
  const state = await client.threads.getState(thread.thread_id);
  assert.deepEqual(state.next, ["review_workflow"]);
  assert.equal(state.values, null, "nothing returned yet");
  assert.deepEqual(state.tasks.map((t) => [t.name, t.interrupts]), [["review_workflow", [interrupt]]]);

  const resumed = await collect(client.runs.stream(thread.thread_id, "essay", {
    command: { resume: "This essay is great." }, streamMode: ["updates", "tasks"],
  }));
  const output = { essay: "An essay about cats", review: "This essay is great.", earlier_topics: "" };
  assert.deepEqual(of(resumed, "updates"), [{ review_workflow: output }]);
  assert.deepEqual(of(resumed, "tasks").filter((t) => "input" in t).map((t) => t.name), ["review_workflow"],
    "the finished task is not run again");
  const done = await client.threads.getState(thread.thread_id);
  assert.deepEqual(done.values, output);
  assert.deepEqual(done.next, []);
  const history = await client.threads.getHistory(thread.thread_id);
  assert.deepEqual(history.map((h) => [h.metadata.source, h.metadata.step, h.next]),
    [["loop", 0, []], ["input", -1, ["review_workflow"]]]);

  // previous: the next run on the thread reads what the last one saved (entrypoint.final)
  await client.runs.wait(thread.thread_id, "essay", { input: "dogs" });
  const out = await client.runs.wait(thread.thread_id, "essay", { command: { resume: "Good." } });
  assert.deepEqual(out, { essay: "An essay about dogs", review: "Good.", earlier_topics: "cats" });
});
