package main

import (
	"context"

	"github.com/graphserver/graphserver/graph"
)

// approval is LangGraph's human-in-the-loop pattern with the interrupt in a
// subgraph: "plan" drafts a booking, then "execute" invokes a review graph
// from its function; the review's interrupt() pauses the whole run with the
// question, and resuming the run (Command{resume: "approve" | "reject"})
// continues the review where it paused, whose decision execute applies.
func approval() (*graph.Compiled, error) {
	review := graph.New(graph.Channels{"booking": graph.LastValue(), "decision": graph.LastValue()})
	review.AddNode("review", func(ctx context.Context, s graph.State) (any, error) {
		answer, err := graph.Interrupt(ctx, map[string]any{"question": "Approve this booking?", "booking": s.String("booking")})
		if err != nil {
			return nil, err
		}
		return graph.Update{"decision": answer}, nil
	})
	review.AddEdge(graph.Start, "review")
	reviewGraph, err := review.Compile(graph.CompileOptions{Name: "review"})
	if err != nil {
		return nil, err
	}

	g := graph.New(graph.Channels{"request": graph.LastValue(), "booking": graph.LastValue(), "status": graph.LastValue()})
	g.AddNode("plan", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"booking": "flight to " + s.String("request") + ", seat 12A"}, nil
	})
	g.AddNode("execute", func(ctx context.Context, s graph.State) (any, error) {
		out, err := reviewGraph.Invoke(ctx, map[string]any{"booking": s.String("booking")}, nil)
		if err != nil {
			return nil, err // the review paused: so does the booking
		}
		if out.(map[string]any)["decision"] == "approve" {
			return graph.Update{"status": "booked: " + s.String("booking")}, nil
		}
		return graph.Update{"status": "cancelled"}, nil
	}, graph.WithSubgraph(reviewGraph))
	g.AddEdge(graph.Start, "plan").AddEdge("plan", "execute").AddEdge("execute", graph.End)
	return g.Compile(graph.CompileOptions{Name: "approval"})
}
