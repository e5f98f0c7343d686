package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

// TestRunsEngine runs the built-in engine through the run machinery:
// checkpoints, interrupts, thread summaries and resume.
func TestRunsEngine(t *testing.T) {
	t.Parallel()
	ask := graph.Func("ask", func(ctx context.Context, input any) (any, error) {
		answer, err := graph.Interrupt(ctx, map[string]any{"question": "ok?"})
		if err != nil {
			return nil, err
		}
		return map[string]any{"input": input, "answer": answer}, nil
	})
	e := newRunEnv(t, runEnvOptions{server: func(o *graphserver.Options) { o.Graphs["ask"] = ask }})
	tid := e.thread(t)

	out := e.call(t, "POST", "/threads/"+tid+"/runs/wait", `{"assistant_id":"ask","input":{"q":1}}`, 200)
	var got map[string][]graphserver.Interrupt
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got["__interrupt__"], 1)
	require.Equal(t, map[string]any{"question": "ok?"}, got["__interrupt__"][0].Value)

	var th graphserver.Thread
	require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+tid, "", 200)), &th))
	require.Equal(t, graphserver.ThreadInterrupted, th.Status)
	require.Len(t, th.Interrupts, 1)
	require.Equal(t, "ask", th.Metadata["graph_id"])

	resp := e.do(t, t.Context(), "POST", "/threads/"+tid+"/runs/stream", `{"assistant_id":"ask","command":{"resume":"yes"},"stream_mode":["updates","values"]}`)
	defer resp.Body.Close()
	evs := newSSEReader(resp.Body).all()
	require.Equal(t, "metadata", evs[0].Event)
	require.Contains(t, names(evs), "updates")
	last := evs[len(evs)-1]
	require.Equal(t, "values", last.Event)
	require.JSONEq(t, `{"input":{"q":1},"answer":"yes"}`, last.Data)

	th = graphserver.Thread{}
	require.NoError(t, json.Unmarshal([]byte(e.call(t, "GET", "/threads/"+tid, "", 200)), &th))
	require.Equal(t, graphserver.ThreadIdle, th.Status)
	require.Empty(t, th.Interrupts)
	require.JSONEq(t, `{"input":{"q":1},"answer":"yes"}`, string(th.Values))
}
