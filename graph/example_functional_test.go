package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

// An entrypoint writes an essay with a task, then asks a human to review it
// with Interrupt. Resumed with Command{resume}, it runs again from the
// start, but the task that finished gives back its saved result instead of
// running again.
func ExampleEntrypoint() {
	calls := 0
	compose := graph.NewTask("compose_essay", func(ctx context.Context, topic string) (string, error) {
		calls++
		return "An essay about " + topic, nil
	})
	review := graph.Entrypoint("review_workflow", func(ctx context.Context, input any) (any, error) {
		essay, err := compose.Call(ctx, input.(string)).Result()
		if err != nil {
			return nil, err
		}
		verdict, err := graph.Interrupt(ctx, map[string]any{"question": "Please provide a review", "essay": essay})
		if err != nil {
			return nil, err // pauses the run
		}
		return map[string]any{"essay": essay, "review": verdict}, nil
	})

	ctx := context.Background()
	cp := graph.NewMemoryCheckpointer()
	run := func(r graphserver.GraphRun) {
		r.ThreadID, r.Checkpointer = "t", cp
		if err := review.Run(ctx, &r, nil); err != nil {
			panic(err)
		}
	}
	run(graphserver.GraphRun{Input: json.RawMessage(`"cats"`)})
	st, _ := review.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "t"}, Checkpointer: cp})
	fmt.Println(st.Next, st.Interrupts[0].Value.(map[string]any)["essay"])

	run(graphserver.GraphRun{Command: &graphserver.Command{Resume: json.RawMessage(`"This essay is great."`)}})
	st, _ = review.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: "t"}, Checkpointer: cp})
	fmt.Println(st.Values)
	fmt.Println("compose_essay ran", calls, "time")
	// Output:
	// [review_workflow] An essay about cats
	// map[essay:An essay about cats review:This essay is great.]
	// compose_essay ran 1 time
}

// Tasks called without waiting run in parallel; each Future gives its
// result.
func ExampleTask() {
	upper := graph.NewTask("upper", func(ctx context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	})
	shout := graph.Entrypoint("shout", func(ctx context.Context, input any) (any, error) {
		var futures []*graph.Future[string]
		for _, w := range input.([]any) {
			futures = append(futures, upper.Call(ctx, w.(string)))
		}
		var out []string
		for _, f := range futures {
			s, err := f.Result()
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return strings.Join(out, " "), nil
	})
	out, err := shout.Invoke(context.Background(), []string{"hello", "world"}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// HELLO WORLD
}

// Previous is what the entrypoint saved at the end of its last run on the
// thread; Final returns one value while saving another.
func ExamplePrevious() {
	counter := graph.Entrypoint("counter", func(ctx context.Context, input any) (any, error) {
		total, _ := graph.Previous(ctx).(float64)
		total += input.(float64)
		return graph.Final{Value: fmt.Sprintf("total: %v", total), Save: total}, nil
	})
	cfg := &graphserver.GraphRun{ThreadID: "t", Checkpointer: graph.NewMemoryCheckpointer()}
	for _, n := range []int{10, 5} {
		out, err := counter.Invoke(context.Background(), n, cfg)
		if err != nil {
			panic(err)
		}
		fmt.Println(out)
	}
	// Output:
	// total: 10
	// total: 15
}
