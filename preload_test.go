package graphserver_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/internal/graphtest"
)

// A thread run started at its creation starts from the thread's latest
// root checkpoint read with its creation (preloaded): it must be the one
// the thread has then, whatever wrote it.
func TestRunStartsFromLatestCheckpoint(t *testing.T) {
	t.Parallel()
	srv := counterServer(t)
	ctx := t.Context()
	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"graph_id": "counter"}})
	require.NoError(t, err)
	run := func(rc graphserver.RunCreate) float64 {
		t.Helper()
		rc.AssistantID = "counter"
		if rc.Input == nil {
			rc.Input = json.RawMessage(`{}`)
		}
		out, err := srv.WaitRun(ctx, th.ThreadID, rc)
		require.NoError(t, err)
		var v struct{ Count float64 }
		require.NoError(t, json.Unmarshal(out, &v))
		return v.Count
	}
	state := func() (float64, string) {
		t.Helper()
		st, err := srv.GetThreadState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
		require.NoError(t, err)
		n, _ := st.Values.(map[string]any)["count"].(float64)
		return n, *st.Checkpoint.CheckpointID
	}

	// Each run builds on the last checkpoint of the one before, saved
	// with that run's end.
	require.Equal(t, float64(1), run(graphserver.RunCreate{}))
	_, first := state()
	require.Equal(t, float64(2), run(graphserver.RunCreate{}))
	require.Equal(t, float64(3), run(graphserver.RunCreate{}))

	// A state update before the run.
	_, err = srv.UpdateThreadState(ctx, th.ThreadID, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"count": 10}`), AsNode: "inc"})
	require.NoError(t, err)
	require.Equal(t, float64(11), run(graphserver.RunCreate{}))

	// A fork from the first run's checkpoint starts there, not from the
	// latest; the next run continues from the fork's end.
	require.Equal(t, float64(2), run(graphserver.RunCreate{CheckpointID: first}))
	require.Equal(t, float64(3), run(graphserver.RunCreate{}))
	n, _ := state()
	require.Equal(t, float64(3), n)

	// Deleting the latest run takes its checkpoints: the next run starts
	// from before it.
	st, err := srv.StreamRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "counter", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	_, err = st.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, srv.DeleteRun(ctx, th.ThreadID, st.Run.RunID))
	n, _ = state()
	require.Equal(t, float64(3), n)
	require.Equal(t, float64(4), run(graphserver.RunCreate{}))
}

// A run resumed after an interrupt starts from the checkpoint it paused
// at, with the pending writes saved there (the interrupt, and the writes
// of the node that completed beside it).
func TestResumeStartsFromPausedCheckpoint(t *testing.T) {
	t.Parallel()
	g := graph.New(graph.Channels{"asked": graph.LastValue(), "done": graph.LastValue()})
	g.AddNode("ask", func(ctx context.Context, s graph.State) (any, error) {
		v, err := graph.Interrupt(ctx, "name?")
		if err != nil {
			return nil, err
		}
		return graph.Update{"asked": v}, nil
	})
	g.AddNode("other", func(ctx context.Context, s graph.State) (any, error) {
		return graph.Update{"done": true}, nil
	})
	g.AddEdge(graph.Start, "ask")
	g.AddEdge(graph.Start, "other")
	c, err := g.Compile(graph.CompileOptions{Name: "ask"})
	require.NoError(t, err)
	b := setupRuns(t, func(o *graphserver.Options) { o.Graphs["ask"] = c })
	th := b.thread(t)
	out, err := b.srv.WaitRun(b.ctx, th, graphserver.RunCreate{AssistantID: "ask", Input: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Contains(t, string(out), "__interrupt__")
	out, err = b.srv.WaitRun(b.ctx, th, graphserver.RunCreate{AssistantID: "ask", Command: &graphserver.RunCommand{Resume: json.RawMessage(`"ann"`)}})
	require.NoError(t, err)
	require.JSONEq(t, `{"asked": "ann", "done": true}`, string(out))
}

// checkpointProbe is a Graph whose run reads the thread's latest root
// checkpoint, writes one after it, and reads the latest again (with
// input {"write_first": true}, it writes before its first read too). It
// outputs the ids it read and wrote: each read must see what storage holds
// then, the run's own writes included.
type checkpointProbe struct{ graphtest.Echo }

func (checkpointProbe) Run(ctx context.Context, req *graphserver.GraphRun, emit func(graphserver.StreamPart)) error {
	cp := req.Checkpointer
	latest := func() (string, error) {
		rec, err := cp.GetCheckpoint(ctx, req.ThreadID, "", "")
		if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		return rec.CheckpointID, nil
	}
	put := func(parent string) (string, error) {
		id := uuid.Must(uuid.NewV7()).String()
		return id, cp.PutCheckpoint(ctx, &driver.CheckpointRecord{ThreadID: req.ThreadID, CheckpointID: id, ParentCheckpointID: parent,
			RunID: req.RunID, ChannelVersions: map[string]string{}, Body: json.RawMessage(`{}`)})
	}
	var in struct {
		WriteFirst bool `json:"write_first"`
	}
	_ = json.Unmarshal(req.Input, &in)
	out := map[string]string{}
	var err error
	if in.WriteFirst {
		if out["wrote_first"], err = put(""); err != nil {
			return err
		}
	}
	if out["read"], err = latest(); err != nil {
		return err
	}
	if out["wrote"], err = put(out["read"]); err != nil {
		return err
	}
	if out["read_again"], err = latest(); err != nil {
		return err
	}
	data, _ := json.Marshal(out)
	emit(graphserver.StreamPart{Event: "values", Data: data})
	return nil
}

func TestPreloadedCheckpointIsNotStale(t *testing.T) {
	t.Parallel()
	b := setupRuns(t, func(o *graphserver.Options) { o.Graphs["probe"] = checkpointProbe{} })
	th := b.thread(t)
	probe := func(input string) map[string]string {
		t.Helper()
		out, err := b.srv.WaitRun(b.ctx, th, graphserver.RunCreate{AssistantID: "probe", Input: json.RawMessage(input)})
		require.NoError(t, err)
		var m map[string]string
		require.NoError(t, json.Unmarshal(out, &m))
		return m
	}
	first := probe(`{}`)
	require.Empty(t, first["read"], "a thread with no checkpoint")
	require.Equal(t, first["wrote"], first["read_again"], "the run's own write, not the preloaded state")
	second := probe(`{}`)
	require.Equal(t, first["wrote"], second["read"])
	require.Equal(t, second["wrote"], second["read_again"])
	third := probe(`{"write_first": true}`)
	require.Equal(t, third["wrote_first"], third["read"], "a write before the first read: the read sees it")
	require.Equal(t, third["wrote"], third["read_again"])
}
