package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/sqlite"
)

// pipelineGraph is "write" -> "review" with a breakpoint before "review";
// "inner" is a one-node subgraph run as the node "sub".
func pipelineGraph(t *testing.T) graphserver.Graph {
	t.Helper()
	inner := graph.New(graph.Channels{"inner": graph.LastValue()})
	inner.AddNode("inner_node", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"inner": "done"}, nil
	})
	inner.AddEdge(graph.Start, "inner_node")
	innerC, err := inner.Compile(graph.CompileOptions{Name: "inner"})
	require.NoError(t, err)

	g := graph.New(graph.Channels{"items": graph.Append(), "note": graph.LastValue(), "inner": graph.LastValue()})
	g.AddNode("write", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"items": "written"}, nil
	})
	g.AddNode("sub", innerC)
	g.AddNode("review", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"note": "reviewed"}, nil
	})
	g.AddEdge(graph.Start, "write")
	g.AddEdge("write", "sub")
	g.AddEdge("sub", "review")
	g.AddEdge("review", graph.End)
	c, err := g.Compile(graph.CompileOptions{Name: "pipeline", InterruptBefore: []string{"review"}})
	require.NoError(t, err)
	return c
}

// stateFixture is a started server with the pipeline graph over HTTP.
type stateFixture struct {
	db  *sqlite.DB
	srv *graphserver.Server
	url string
}

func newStateFixture(t *testing.T) *stateFixture {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	srv, err := graphserver.New(graphserver.Options{Storage: db, Graphs: map[string]graphserver.Graph{"pipeline": pipelineGraph(t)}})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(t.Context()))) })
	hs := httptest.NewServer(httpapi.New(srv, httpapi.Options{}))
	t.Cleanup(hs.Close)
	return &stateFixture{db: db, srv: srv, url: hs.URL}
}

// call sends a JSON request and decodes a JSON answer into out (when non-nil).
func (f *stateFixture) call(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, f.url+path, strings.NewReader(body))
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	if out != nil {
		require.NoError(t, json.NewDecoder(res.Body).Decode(out), "%s %s", method, path)
	}
	return res.StatusCode
}

// runToBreakpoint creates a thread and waits for a run that stops before "review".
func (f *stateFixture) runToBreakpoint(t *testing.T) string {
	t.Helper()
	var th graphserver.Thread
	require.Equal(t, 200, f.call(t, "POST", "/threads", `{}`, &th))
	var out map[string]any
	require.Equal(t, 200, f.call(t, "POST", "/threads/"+th.ThreadID+"/runs/wait", `{"assistant_id":"pipeline","input":{"items":["start"]}}`, &out))
	require.Equal(t, 200, f.call(t, "GET", "/threads/"+th.ThreadID, "", &th))
	require.JSONEq(t, `{"items":["start","written"],"inner":"done"}`, string(th.Values))
	return th.ThreadID
}

func TestThreadState(t *testing.T) {
	t.Parallel()

	t.Run("state, update as node, history and checkpoints", func(t *testing.T) {
		t.Parallel()
		f := newStateFixture(t)
		tid := f.runToBreakpoint(t)

		var th graphserver.Thread
		require.Equal(t, 200, f.call(t, "GET", "/threads/"+tid, "", &th))
		require.Equal(t, graphserver.ThreadInterrupted, th.Status)

		var st graphserver.ThreadState
		require.Equal(t, 200, f.call(t, "GET", "/threads/"+tid+"/state", "", &st))
		require.Equal(t, []string{"review"}, st.Next)
		require.Equal(t, map[string]any{"items": []any{"start", "written"}, "inner": "done"}, st.Values)
		require.NotNil(t, st.Checkpoint)
		require.Equal(t, "loop", st.Metadata["source"])
		latest := *st.Checkpoint.CheckpointID

		var upd graphserver.ThreadStateUpdateResult
		require.Equal(t, 200, f.call(t, "POST", "/threads/"+tid+"/state", `{"values":{"note":"edited"},"as_node":"review"}`, &upd))
		require.NotNil(t, upd.Checkpoint.CheckpointID)
		require.NotEqual(t, latest, *upd.Checkpoint.CheckpointID)

		require.Equal(t, 200, f.call(t, "GET", "/threads/"+tid, "", &th))
		require.Equal(t, graphserver.ThreadIdle, th.Status, "after acting as the last node nothing is next")
		require.JSONEq(t, `{"items":["start","written"],"inner":"done","note":"edited"}`, string(th.Values))

		var hist []graphserver.ThreadState
		require.Equal(t, 200, f.call(t, "POST", "/threads/"+tid+"/history", `{"limit":10}`, &hist))
		require.Greater(t, len(hist), 3)
		require.Equal(t, *upd.Checkpoint.CheckpointID, *hist[0].Checkpoint.CheckpointID)
		require.Equal(t, "update", hist[0].Metadata["source"])
		require.Equal(t, latest, *hist[1].Checkpoint.CheckpointID)

		// before as a bare id, a flat checkpoint and a config all mean the same.
		for _, before := range []string{
			`"` + latest + `"`,
			`{"thread_id":"` + tid + `","checkpoint_ns":"","checkpoint_id":"` + latest + `"}`,
			`{"configurable":{"checkpoint_id":"` + latest + `"}}`,
		} {
			var older []graphserver.ThreadState
			require.Equal(t, 200, f.call(t, "POST", "/threads/"+tid+"/history", `{"limit":1,"before":`+before+`}`, &older))
			require.Len(t, older, 1)
			require.Equal(t, *hist[2].Checkpoint.CheckpointID, *older[0].Checkpoint.CheckpointID, before)
		}
		var inputs []graphserver.ThreadState
		require.Equal(t, 200, f.call(t, "POST", "/threads/"+tid+"/history", `{"limit":10,"metadata":{"source":"input"}}`, &inputs))
		require.Len(t, inputs, 1)
		require.EqualValues(t, -1, inputs[0].Metadata["step"])

		var get []graphserver.ThreadState
		require.Equal(t, 200, f.call(t, "GET", "/threads/"+tid+"/history?limit=2", "", &get))
		require.Len(t, get, 2)

		var at graphserver.ThreadState
		require.Equal(t, 200, f.call(t, "GET", "/threads/"+tid+"/state/"+latest, "", &at))
		require.Equal(t, []string{"review"}, at.Next)
		require.Equal(t, 200, f.call(t, "POST", "/threads/"+tid+"/state/checkpoint", `{"checkpoint":{"checkpoint_id":"`+latest+`"}}`, &at))
		require.Equal(t, latest, *at.Checkpoint.CheckpointID)
		require.Equal(t, 200, f.call(t, "POST", "/threads/"+tid+"/state/checkpoint", `{"checkpoint":{"thread_id":"`+tid+`"}}`, &at))
		require.Equal(t, *upd.Checkpoint.CheckpointID, *at.Checkpoint.CheckpointID, "a checkpoint with only thread_id is the latest")
	})

	t.Run("fork from an old checkpoint", func(t *testing.T) {
		t.Parallel()
		f := newStateFixture(t)
		tid := f.runToBreakpoint(t)
		var hist []graphserver.ThreadState
		require.Equal(t, 200, f.call(t, "POST", "/threads/"+tid+"/history", `{"limit":10,"metadata":{"step":0}}`, &hist))
		require.Len(t, hist, 1)
		old := *hist[0].Checkpoint.CheckpointID

		// The checkpoint to fork from may come as a config, as SDK-JS types it.
		var upd graphserver.ThreadStateUpdateResult
		require.Equal(t, 200, f.call(t, "POST", "/threads/"+tid+"/state",
			`{"values":{"items":["forked"]},"checkpoint":{"configurable":{"checkpoint_id":"`+old+`"}}}`, &upd))
		var st graphserver.ThreadState
		require.Equal(t, 200, f.call(t, "GET", "/threads/"+tid+"/state", "", &st))
		require.Equal(t, *upd.Checkpoint.CheckpointID, *st.Checkpoint.CheckpointID)
		require.Equal(t, old, *st.ParentCheckpoint.CheckpointID)
		require.Equal(t, []any{"start", "forked"}, st.Values.(map[string]any)["items"])
	})

	t.Run("subgraph state", func(t *testing.T) {
		t.Parallel()
		f := newStateFixture(t)
		var th graphserver.Thread
		require.Equal(t, 200, f.call(t, "POST", "/threads", `{}`, &th))
		// Pause inside the parent before "sub" runs, so the task points at the subgraph.
		var out map[string]any
		require.Equal(t, 200, f.call(t, "POST", "/threads/"+th.ThreadID+"/runs/wait",
			`{"assistant_id":"pipeline","input":{"items":["s"]},"interrupt_after":["write"]}`, &out))
		var st graphserver.ThreadState
		require.Equal(t, 200, f.call(t, "GET", "/threads/"+th.ThreadID+"/state", "", &st))
		require.Equal(t, []string{"sub"}, st.Next)
		require.Len(t, st.Tasks, 1)
		require.Equal(t, "sub", st.Tasks[0].Name)
	})

	t.Run("supersteps at thread creation", func(t *testing.T) {
		t.Parallel()
		f := newStateFixture(t)
		var th graphserver.Thread
		require.Equal(t, 200, f.call(t, "POST", "/threads",
			`{"metadata":{"graph_id":"pipeline"},"supersteps":[{"updates":[{"values":{"items":["a"]},"as_node":"__input__"}]},{"updates":[{"values":{"items":["a"]},"as_node":"__start__"}]},{"updates":[{"values":{"items":["b"]},"as_node":"write"}]}]}`, &th))
		require.JSONEq(t, `{"items":["a","b"]}`, string(th.Values))
		var st graphserver.ThreadState
		require.Equal(t, 200, f.call(t, "GET", "/threads/"+th.ThreadID+"/state", "", &st))
		require.Equal(t, []string{"sub"}, st.Next)
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		f := newStateFixture(t)
		var detail map[string]any
		missing := "00000000-0000-4000-8000-00000000dead"
		require.Equal(t, 404, f.call(t, "GET", "/threads/"+missing+"/state", "", &detail))
		require.Equal(t, 422, f.call(t, "GET", "/threads/nope/state", "", &detail))
		require.Equal(t, 422, f.call(t, "POST", "/threads/"+missing+"/history", `{"limit":-1}`, &detail))
		require.Equal(t, 422, f.call(t, "POST", "/threads/"+missing+"/state/checkpoint", `{}`, &detail))
		require.Contains(t, detail["detail"], "checkpoint")

		var th graphserver.Thread
		require.Equal(t, 200, f.call(t, "POST", "/threads", `{}`, &th))
		var empty graphserver.ThreadState
		require.Equal(t, 200, f.call(t, "GET", "/threads/"+th.ThreadID+"/state", "", &empty))
		require.Nil(t, empty.Checkpoint)
		require.Equal(t, 400, f.call(t, "POST", "/threads/"+th.ThreadID+"/state", `{"values":{"note":"x"}}`, &detail))
		require.Contains(t, detail["detail"], "graph_id")

		var ran graphserver.Thread
		require.Equal(t, 200, f.call(t, "POST", "/threads", `{}`, &ran))
		require.Equal(t, 200, f.call(t, "POST", "/threads/"+ran.ThreadID+"/runs/wait", `{"assistant_id":"pipeline","input":{"items":["x"]}}`, nil))
		require.Equal(t, 400, f.call(t, "POST", "/threads/"+ran.ThreadID+"/state", `{"values":"not an object","as_node":"write"}`, &detail))
		require.Equal(t, "InvalidUpdateError: Expected dict, got not an object", detail["detail"])
		require.NoError(t, f.db.DeleteThread(t.Context(), ran.ThreadID, nil))

		require.Equal(t, 400, f.call(t, "POST", "/threads", `{"supersteps":[{"updates":[{"values":{},"as_node":"write"}]}]}`, &detail))
		var count int
		require.Equal(t, 200, f.call(t, "POST", "/threads/count", `{}`, &count))
		require.Equal(t, 1, count, "a rejected create leaves nothing behind")
		require.Equal(t, 400, f.call(t, "POST", "/threads",
			`{"metadata":{"graph_id":"pipeline"},"supersteps":[{"updates":[{"values":{"items":["a"]},"as_node":"no_such_node"}]}]}`, &detail))
		require.Equal(t, 200, f.call(t, "POST", "/threads/count", `{}`, &count))
		require.Equal(t, 1, count, "failed supersteps delete the new thread again")

		require.NoError(t, f.db.WithTx(t.Context(), func(ctx context.Context, tx driver.Tx) error {
			return tx.UpdateThread(ctx, th.ThreadID, &driver.ThreadWrite{Now: th.UpdatedAt, Status: graphserver.ThreadBusy})
		}))
		_, err := f.db.UpdateThread(t.Context(), th.ThreadID, &graphserver.ThreadPatch{Metadata: graphserver.Metadata{"graph_id": "pipeline"}}, th.UpdatedAt, nil)
		require.NoError(t, err)
		require.Equal(t, 409, f.call(t, "POST", "/threads/"+th.ThreadID+"/state", `{"values":{"note":"x"}}`, &detail))
	})
}

func TestAssistantGraphIntrospection(t *testing.T) {
	t.Parallel()
	f := newStateFixture(t)
	var d graphserver.Drawing
	require.Equal(t, 200, f.call(t, "GET", "/assistants/pipeline/graph", "", &d))
	ids := map[string]string{}
	for _, n := range d.Nodes {
		ids[n.ID] = n.Type
	}
	require.Equal(t, "schema", ids["__start__"])
	require.Equal(t, "runnable", ids["write"])
	require.Contains(t, ids, "sub")
	require.NotContains(t, ids, "sub:inner_node")

	var x graphserver.Drawing
	require.Equal(t, 200, f.call(t, "GET", "/assistants/pipeline/graph?xray=true", "", &x))
	xids := map[string]bool{}
	for _, n := range x.Nodes {
		xids[n.ID] = true
	}
	require.True(t, xids["sub:inner_node"], "xray expands the subgraph: %v", xids)
	require.False(t, xids["sub"])

	var sc graphserver.GraphSchemas
	require.Equal(t, 200, f.call(t, "GET", "/assistants/pipeline/schemas", "", &sc))
	require.Equal(t, "pipeline", sc.GraphID)
	require.Contains(t, string(sc.StateSchema), "items")

	var sub map[string]graphserver.GraphSchemas
	require.Equal(t, 200, f.call(t, "GET", "/assistants/"+graphserver.SystemAssistantID("pipeline")+"/subgraphs", "", &sub))
	require.Contains(t, sub, "sub")
	require.Equal(t, 200, f.call(t, "GET", "/assistants/pipeline/subgraphs/sub", "", &sub))
	require.Len(t, sub, 1)

	var detail map[string]any
	require.Equal(t, 422, f.call(t, "GET", "/assistants/pipeline/graph?xray=maybe", "", &detail))
	require.Equal(t, 404, f.call(t, "GET", "/assistants/00000000-0000-4000-8000-00000000dead/schemas", "", &detail))
	require.Equal(t, 422, f.call(t, "GET", "/assistants/no_such_graph/subgraphs", "", &detail))
}
