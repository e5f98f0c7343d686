// Small graphs the JS dev server hosts for the Go client's smoke tests
// (client/jsdev_test.go). Plain ESM so no build step is needed.
import { Annotation, MessagesAnnotation, StateGraph, START, END, interrupt } from "@langchain/langgraph";
import { AIMessage } from "@langchain/core/messages";

// agent answers the last message with "echo: <text>" and counts its runs.
const AgentState = Annotation.Root({
  ...MessagesAnnotation.spec,
  count: Annotation({ reducer: (_, b) => b, default: () => 0 }),
});
export const agent = new StateGraph(AgentState)
  .addNode("agent", (state) => {
    const last = state.messages.at(-1);
    return {
      messages: [new AIMessage(`echo: ${last ? last.content : ""}`)],
      count: (state.count ?? 0) + 1,
    };
  })
  .addEdge(START, "agent")
  .addEdge("agent", END)
  .compile();

// ask asks a question with interrupt() and stores the answer.
const AskState = Annotation.Root({
  question: Annotation(),
  answer: Annotation(),
});
export const ask = new StateGraph(AskState)
  .addNode("ask", (state) => ({ answer: interrupt({ question: state.question }) }))
  .addEdge(START, "ask")
  .addEdge("ask", END)
  .compile();

// fail raises.
export const fail = new StateGraph(AskState)
  .addNode("fail", () => {
    throw new Error("boom");
  })
  .addEdge(START, "fail")
  .addEdge("fail", END)
  .compile();
