package main

import (
	"context"
	"strings"

	"github.com/graphserver/graphserver/graph"
)

// essay is LangGraph's functional API example (the review_workflow of the
// @entrypoint docs), written with graph.Entrypoint and graph.Task: the
// entrypoint has a task draft an essay, then asks a human to review it with
// interrupt(). Resumed, the entrypoint runs again from the start, but the
// draft task, which finished, returns its saved result instead of running
// again. The entrypoint returns the essay and its review, and saves the
// topics written about on the thread (graph.Final), which its next run
// reads with graph.Previous.
func essay() *graph.Compiled {
	compose := graph.NewTask("compose_essay", func(ctx context.Context, topic string) (string, error) {
		return "An essay about " + topic, nil
	})
	return graph.Entrypoint("review_workflow", func(ctx context.Context, input any) (any, error) {
		topic, _ := input.(string)
		if topic == "" {
			return nil, &graph.NodeError{Name: "ValueError", Message: "the input must be a topic (a non-empty string)"}
		}
		essay, err := compose.Call(ctx, topic).Result()
		if err != nil {
			return nil, err
		}
		review, err := graph.Interrupt(ctx, map[string]any{"question": "Please provide a review", "essay": essay})
		if err != nil {
			return nil, err // pauses the run until a human resumes it
		}
		var topics []any
		if prev, ok := graph.Previous(ctx).(map[string]any); ok {
			topics, _ = prev["topics"].([]any)
		}
		topics = append(topics, topic)
		return graph.Final{
			Value: map[string]any{"essay": essay, "review": review, "earlier_topics": strings.Join(anyStrings(topics[:len(topics)-1]), ", ")},
			Save:  map[string]any{"topics": topics},
		}, nil
	})
}

func anyStrings(l []any) []string {
	out := make([]string, 0, len(l))
	for _, v := range l {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}
