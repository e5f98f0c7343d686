package main

import (
	"context"
	"strings"

	"github.com/graphserver/graphserver/graph"
)

// mapReduce is LangGraph's map-reduce how-to (jokes about subjects of a
// topic): generate_topics fans out one generate_joke task per subject with
// Send; meanwhile, on a longer branch, the audience is profiled in three
// steps. A join edge waits for both before best_joke picks one, so it runs
// once, after the last branch (two plain edges would run it twice).
func mapReduce() (*graph.Compiled, error) {
	g := graph.New(graph.Channels{
		"topic":    graph.LastValue(),
		"subjects": graph.LastValue(),
		"jokes":    graph.Append(),
		"audience": graph.Append(),
		"best":     graph.LastValue(),
	})
	g.AddNode("generate_topics", func(ctx context.Context, s graph.State) (any, error) {
		topic := s.String("topic")
		return graph.Update{"subjects": []string{topic + " at work", topic + " at home", topic + " on holiday"}}, nil
	})
	g.AddNode("generate_joke", func(ctx context.Context, s graph.State) (any, error) {
		subject := s.String("subject")
		m := say(ctx, "joker", "Why are "+subject+" so funny? Because they never stop.")
		return graph.Update{"jokes": m.Text()}, nil
	})
	g.AddNode("audience_survey", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"audience": "survey: likes short jokes"}, nil
	})
	g.AddNode("audience_profile", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"audience": "profile: prefers jokes about home"}, nil
	})
	g.AddNode("audience_summary", func(ctx context.Context, s graph.State) (any, error) {
		// two writes to one channel: the tasks stream folds them as
		// {"audience": {"$writes": [...]}}
		return []any{[]any{"audience", "summary: keep it short"}, []any{"audience", "summary: tell the home joke"}}, nil
	})
	g.AddNode("best_joke", func(ctx context.Context, s graph.State) (any, error) {
		best := ""
		for _, j := range s["jokes"].([]any) {
			if j, _ := j.(string); strings.Contains(j, "at home") {
				best = j
			}
		}
		return graph.Update{"best": best}, nil
	})
	g.AddEdge(graph.Start, "generate_topics").AddEdge(graph.Start, "audience_survey")
	g.AddConditionalEdges("generate_topics", func(ctx context.Context, s graph.State) any {
		var sends []graph.Send
		for _, subject := range s["subjects"].([]any) {
			sends = append(sends, graph.Send{Node: "generate_joke", Arg: map[string]any{"subject": subject}})
		}
		return sends
	}, "generate_joke")
	g.AddEdge("audience_survey", "audience_profile").AddEdge("audience_profile", "audience_summary")
	g.AddJoinEdge([]string{"generate_joke", "audience_summary"}, "best_joke")
	g.AddEdge("best_joke", graph.End)
	return g.Compile(graph.CompileOptions{Name: "map_reduce"})
}
