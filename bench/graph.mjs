// examples/loadtest's graphs for the LangGraph JS dev server: "echo", one
// node returning its input, and "wait", one node sleeping for
// input.seconds (or until the run is cancelled).
import { Annotation, StateGraph, START, END } from "@langchain/langgraph";

const EchoState = Annotation.Root({
  messages: Annotation({ reducer: (_, b) => b, default: () => [] }),
});

export const echo = new StateGraph(EchoState)
  .addNode("echo", (state) => ({ messages: state.messages }))
  .addEdge(START, "echo")
  .addEdge("echo", END)
  .compile();

const WaitState = Annotation.Root({
  seconds: Annotation({ reducer: (_, b) => b, default: () => 60 }),
});

export const wait = new StateGraph(WaitState)
  .addNode("wait", async (state, config) => {
    await new Promise((resolve) => {
      const t = setTimeout(resolve, state.seconds * 1000);
      config?.signal?.addEventListener("abort", () => {
        clearTimeout(t);
        resolve();
      });
    });
    return {};
  })
  .addEdge(START, "wait")
  .addEdge("wait", END)
  .compile();
