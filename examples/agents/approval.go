package main

import (
	"context"
	"strings"

	"github.com/graphserver/graphserver/graph"
)

// approval is LangGraph's human-in-the-loop pattern with the interrupt in a
// subgraph: "plan" drafts one booking per destination of the request
// ("Oslo", or "Oslo and Rome"), each sent to "execute", which invokes a
// review graph from its function; the review's interrupt() pauses the whole
// run with the question, and resuming the run continues the review where it
// paused, whose decision execute applies. With several bookings pending, a
// resume names each interrupt by id ({id: "approve", id2: "reject"}); one
// plain value cannot choose and fails the run.
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

	g := graph.New(graph.Channels{"request": graph.LastValue(), "bookings": graph.LastValue(), "status": graph.Append()})
	g.AddNode("plan", func(ctx context.Context, s graph.State) (any, error) {
		var bookings []string
		for _, city := range strings.Split(s.String("request"), " and ") {
			bookings = append(bookings, "flight to "+city+", seat 12A")
		}
		return graph.Update{"bookings": bookings}, nil
	})
	g.AddNode("execute", func(ctx context.Context, s graph.State) (any, error) {
		booking := s.String("booking") // the Send's argument
		out, err := reviewGraph.Invoke(ctx, map[string]any{"booking": booking}, nil)
		if err != nil {
			return nil, err // the review paused: so does the booking
		}
		if out.(map[string]any)["decision"] == "approve" {
			return graph.Update{"status": "booked: " + booking}, nil
		}
		return graph.Update{"status": "cancelled: " + booking}, nil
	}, graph.WithSubgraph(reviewGraph))
	g.AddEdge(graph.Start, "plan")
	g.AddConditionalEdges("plan", func(ctx context.Context, s graph.State) any {
		var sends []graph.Send
		for _, b := range s["bookings"].([]any) {
			sends = append(sends, graph.Send{Node: "execute", Arg: map[string]any{"booking": b}})
		}
		return sends
	}, "execute")
	g.AddEdge("execute", graph.End)
	return g.Compile(graph.CompileOptions{Name: "approval"})
}
