package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

// TestRunStateMatchesState checks that the state RunState reports after a
// completed run is what State reads back from storage, for each durability,
// and that a paused or failed run reports none.
func TestRunStateMatchesState(t *testing.T) {
	t.Parallel()
	runState := func(t *testing.T, h *harness, req graphserver.GraphRun) (*graphserver.ThreadState, error) {
		t.Helper()
		req.ThreadID, req.Checkpointer = h.thread, h.cp
		req.RunID = uuid.NewString() // each run its own: a run id met again is a retry
		req.Metadata = graphserver.Object{"graph_id": "g", "run_id": req.RunID}
		return h.g.RunState(context.Background(), &req, (&recorder{}).emit)
	}
	requireSame := func(t *testing.T, h *harness, got *graphserver.ThreadState) {
		t.Helper()
		require.NotNil(t, got)
		require.JSONEq(t, jsonOf(t, h.state()), jsonOf(t, got))
	}

	for _, durability := range []string{"sync", "async", "exit"} {
		t.Run(durability, func(t *testing.T) {
			t.Parallel()
			db, _ := openSQLite(t)
			createThread(t, db, "agent")
			h := &harness{t: t, g: agentGraph(t), cp: db, thread: "agent"}
			st, err := runState(t, h, graphserver.GraphRun{Durability: durability,
				Input: json.RawMessage(`{"messages":[{"role":"human","content":"foo"}]}`)})
			require.NoError(t, err)
			requireSame(t, h, st)
			require.Equal(t, []string{"foo", "begin", "tool_call__begin", "end"}, contents(st, "messages"))

			// A pause reports no state; the resumed run does.
			st, err = runState(t, h, graphserver.GraphRun{Durability: durability,
				Input: json.RawMessage(`{"messages":["bar"], "interrupt": true}`)})
			require.NoError(t, err)
			require.Nil(t, st)
			require.Equal(t, []string{"agent"}, h.state().Next)
			st, err = runState(t, h, graphserver.GraphRun{Durability: durability,
				Command: &graphserver.RunCommand{Resume: json.RawMessage(`"go"`)}})
			require.NoError(t, err)
			requireSame(t, h, st)
			require.Len(t, contents(st, "messages"), 8)

			// A command that only updates the state.
			st, err = runState(t, h, graphserver.GraphRun{Durability: durability,
				Command: &graphserver.RunCommand{Update: json.RawMessage(`{"interrupt": true}`)}})
			require.NoError(t, err)
			requireSame(t, h, st)

			// A one-node func graph.
			createThread(t, db, "echo")
			e := &harness{t: t, g: graph.Func("echo", func(_ context.Context, in any) (any, error) { return in, nil }), cp: db, thread: "echo"}
			for _, in := range []string{`{"a": [1, 2.5, "x"], "b": {"c": null}}`, `"again"`} {
				st, err = runState(t, e, graphserver.GraphRun{Durability: durability, Input: json.RawMessage(in)})
				require.NoError(t, err)
				requireSame(t, e, st)
				require.JSONEq(t, in, jsonOf(t, st.Values))
			}
		})
	}

	t.Run("Failure", func(t *testing.T) {
		t.Parallel()
		db, _ := openSQLite(t)
		createThread(t, db, "fail")
		boom := errors.New("boom")
		h := &harness{t: t, g: graph.Func("fail", func(context.Context, any) (any, error) { return nil, boom }), cp: db, thread: "fail"}
		st, err := runState(t, h, graphserver.GraphRun{Input: json.RawMessage(`{}`)})
		require.ErrorIs(t, err, boom)
		require.Nil(t, st)
	})
}
