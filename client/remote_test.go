package client_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/client"
	"github.com/graphserver/graphserver/graph"
)

// ask2Graph asks two questions in one node, one interrupt after the other.
func ask2Graph(t testing.TB) *graph.Compiled {
	t.Helper()
	g := graph.New(graph.Channels{"answers": graph.LastValue()})
	g.AddNode("ask2", func(ctx context.Context, s graph.State) (any, error) {
		a1, err := graph.Interrupt(ctx, "first?")
		if err != nil {
			return nil, err
		}
		a2, err := graph.Interrupt(ctx, "second?")
		if err != nil {
			return nil, err
		}
		return graph.Update{"answers": []any{a1, a2}}, nil
	})
	g.AddEdge(graph.Start, "ask2").AddEdge("ask2", graph.End)
	c, err := g.Compile(graph.CompileOptions{Name: "ask2"})
	require.NoError(t, err)
	return c
}

func newRemote(t testing.TB, opts client.RemoteOptions) *client.RemoteGraph {
	t.Helper()
	rg, err := client.NewRemoteGraph(opts)
	require.NoError(t, err)
	return rg
}

// TestRemoteGraphConstruction: the required options and which client wins.
func TestRemoteGraphConstruction(t *testing.T) {
	t.Parallel()
	_, err := client.NewRemoteGraph(client.RemoteOptions{URL: "http://127.0.0.1:1"})
	require.ErrorContains(t, err, "AssistantID")
	_, err = client.NewRemoteGraph(client.RemoteOptions{AssistantID: "agent"})
	require.ErrorContains(t, err, "URL or a Client")
	_, err = client.NewRemoteGraph(client.RemoteOptions{AssistantID: "agent", URL: "not a url"})
	require.Error(t, err)

	e := newEnv(t, envOptions{})
	// an explicit client wins over a URL that goes nowhere
	rg := newRemote(t, client.RemoteOptions{AssistantID: "echo", Client: e.c, URL: "http://127.0.0.1:1"})
	require.Same(t, e.c, rg.Client())
	require.Equal(t, "echo", rg.Name())
	out, err := rg.Invoke(t.Context(), map[string]any{"a": 1}, client.RunOptions{})
	require.NoError(t, err)
	require.JSONEq(t, `{"a":1}`, string(out))

	rg = newRemote(t, client.RemoteOptions{AssistantID: "echo", URL: e.url, APIKey: "k", Headers: map[string]string{"x-team": "a"}, Name: "mine"})
	require.Equal(t, "mine", rg.Name())
	out, err = rg.Invoke(t.Context(), map[string]any{"b": 2}, client.RunOptions{})
	require.NoError(t, err)
	require.JSONEq(t, `{"b":2}`, string(out))
}

// TestRemoteGraphInvokeStream: invoke on a thread it creates (remote.py
// stream: if_not_exists "create", thread id from the config), state and
// history through the graph, stream modes passed through with updates
// always requested, breakpoints passed through, and remote errors.
func TestRemoteGraphInvokeStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	rg := newRemote(t, client.RemoteOptions{AssistantID: "chat", Client: e.c, Config: graphserver.Object{"configurable": map[string]any{"model": "m1"}}})

	tid := uuid.NewString()
	cfg := graphserver.Object{"configurable": map[string]any{"thread_id": tid, "user": "u1", "checkpoint_ns": "local:1"}, "tags": []any{"a", 1}}
	out, err := rg.Invoke(ctx, map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}, client.RunOptions{Config: cfg})
	require.NoError(t, err)
	vals := object(t, out)
	require.Equal(t, 1.0, vals["count"])
	require.Len(t, vals["messages"], 2)

	th, err := e.c.Threads.Get(ctx, tid)
	require.NoError(t, err, "the remote thread was created with the caller's id")
	require.Equal(t, graphserver.ThreadIdle, th.Status)
	runs, err := e.c.Runs.List(ctx, tid, graphserver.RunSearch{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	kw := runs[0].Kwargs
	require.Contains(t, kw.StreamMode, "updates", "updates is always requested")
	conf := kw.Config["configurable"].(map[string]any)
	require.Equal(t, "u1", conf["user"])
	require.Equal(t, "m1", conf["model"], "RemoteOptions.Config is merged under the call's")
	require.NotContains(t, conf, "checkpoint_ns", "local checkpoint keys are dropped")
	require.Equal(t, []any{"a"}, kw.Config["tags"])

	st, err := rg.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: tid}})
	require.NoError(t, err)
	require.Equal(t, 1.0, st.Values.(map[string]any)["count"])
	hist, err := rg.History(ctx, &graphserver.HistoryRequest{Checkpoint: graphserver.Checkpoint{ThreadID: tid}, Limit: 2})
	require.NoError(t, err)
	require.Len(t, hist, 2)
	old, err := rg.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: tid, CheckpointID: hist[1].Checkpoint.CheckpointID}})
	require.NoError(t, err)
	require.Equal(t, *hist[1].Checkpoint.CheckpointID, *old.Checkpoint.CheckpointID)

	// a second invoke continues the remote thread
	out, err = rg.Invoke(ctx, map[string]any{}, client.RunOptions{ThreadID: tid})
	require.NoError(t, err)
	require.Equal(t, 2.0, object(t, out)["count"])

	cp, err := rg.UpdateState(ctx, &graphserver.UpdateStateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: tid}, Values: json.RawMessage(`{"count": 7}`), AsNode: "agent"})
	require.NoError(t, err)
	require.Equal(t, tid, cp.ThreadID)
	st, err = rg.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: tid}})
	require.NoError(t, err)
	require.Equal(t, 7.0, st.Values.(map[string]any)["count"])

	// a thread the remote server does not know yet: empty state and history,
	// and a state update creates it
	fresh := uuid.NewString()
	st, err = rg.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: fresh}})
	require.NoError(t, err)
	require.Nil(t, st.Checkpoint)
	hist, err = rg.History(ctx, &graphserver.HistoryRequest{Checkpoint: graphserver.Checkpoint{ThreadID: fresh}})
	require.NoError(t, err)
	require.Empty(t, hist)
	_, err = rg.UpdateState(ctx, &graphserver.UpdateStateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: fresh}, Values: json.RawMessage(`{"count": 3}`), AsNode: "agent"})
	require.NoError(t, err)
	st, err = rg.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: fresh}})
	require.NoError(t, err)
	require.Equal(t, 3.0, st.Values.(map[string]any)["count"])

	// stream: only the modes asked for, several at once
	var events []string
	for part, err := range rg.Stream(ctx, map[string]any{}, client.RunOptions{StreamMode: []string{"values"}}) {
		require.NoError(t, err)
		events = append(events, part.Event)
	}
	require.NotEmpty(t, events)
	require.NotContains(t, events, "updates", "updates was requested from the server but is not yielded")
	events = nil
	for part, err := range rg.Stream(ctx, map[string]any{}, client.RunOptions{}) {
		require.NoError(t, err)
		events = append(events, part.Event)
	}
	require.Equal(t, []string{"updates"}, events, "default mode: updates")

	// subgraph parts with Subgraphs only
	parts := newRemote(t, client.RemoteOptions{AssistantID: "parts", Client: e.c})
	var nss []string
	for part, err := range parts.Stream(ctx, map[string]any{}, client.RunOptions{StreamMode: []string{"values", "messages-tuple"}, Subgraphs: true}) {
		require.NoError(t, err)
		nss = append(nss, part.Event+"|"+strings.Join(part.Namespace, "|"))
	}
	require.Equal(t, []string{"values|child:1", "messages|", "values|"}, nss)

	// breakpoints pass through
	bp := newRemote(t, client.RemoteOptions{AssistantID: "chat", Client: e.c, InterruptBefore: graphserver.Breakpoints{"agent"}})
	bpThread := uuid.NewString()
	_, err = bp.Invoke(ctx, map[string]any{}, client.RunOptions{ThreadID: bpThread})
	require.NoError(t, err)
	st, err = bp.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: bpThread}})
	require.NoError(t, err)
	require.Equal(t, []string{"agent"}, st.Next)
	_, err = bp.Invoke(ctx, nil, client.RunOptions{ThreadID: bpThread, InterruptBefore: graphserver.Breakpoints{}})
	require.NoError(t, err)
	st, err = bp.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: bpThread}})
	require.NoError(t, err)
	require.Empty(t, st.Next, "a call's own (empty) breakpoints override the graph's")

	// a remote failure
	fail := newRemote(t, client.RemoteOptions{AssistantID: "fail", Client: e.c})
	_, err = fail.Invoke(ctx, map[string]any{}, client.RunOptions{})
	var re *client.RunError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "ValueError", re.Name)
	require.Equal(t, "boom", re.Message)

	// drawing and schemas come from the remote assistant
	d, err := rg.Drawing(ctx, nil, 0)
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(d.Nodes, func(n graphserver.DrawingNode) bool { return n.ID == "agent" }))
	sc, err := rg.Schemas(ctx, nil)
	require.NoError(t, err)
	require.Contains(t, string(sc.StateSchema), "count")
	_, err = rg.Subgraphs(ctx, nil, "", false)
	require.NoError(t, err)
}

// TestRemoteGraphHosted: a graphserver hosts a RemoteGraph to another
// server; runs, state, history and state updates on the local API reach the
// remote thread of the same id.
func TestRemoteGraphHosted(t *testing.T) {
	t.Parallel()
	remote := newEnv(t, envOptions{})
	rg := newRemote(t, client.RemoteOptions{AssistantID: "chat", Client: remote.c})
	failing := newRemote(t, client.RemoteOptions{AssistantID: "fail", Client: remote.c})
	local := newEnv(t, envOptions{graphs: map[string]graphserver.Graph{"proxy": rg, "proxyfail": failing}})
	ctx := t.Context()

	th, err := local.c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	evs := collect(t, local.c.Runs.Stream(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "proxy", Input: raw(t, map[string]any{}), StreamMode: []string{"updates", "values"}}, client.StreamOptions{}))
	require.Equal(t, "metadata", evs[0].Event)
	require.Contains(t, names(evs), "updates")
	require.Equal(t, "values", evs[len(evs)-1].Event)
	for _, ev := range evs {
		if ev.Event == "updates" {
			require.Equal(t, 1.0, object(t, ev.Data)["agent"].(map[string]any)["count"], "the remote graph's parts, forwarded")
		}
	}

	// the local thread's summary and state are the remote thread's
	lt, err := local.c.Threads.Get(ctx, th.ThreadID)
	require.NoError(t, err)
	require.Equal(t, graphserver.ThreadIdle, lt.Status)
	require.Equal(t, 1.0, object(t, lt.Values)["count"])
	rt, err := remote.c.Threads.Get(ctx, th.ThreadID)
	require.NoError(t, err)
	require.Equal(t, 1.0, object(t, rt.Values)["count"])
	hist, err := local.c.Threads.GetHistory(ctx, th.ThreadID, graphserver.ThreadHistoryQuery{})
	require.NoError(t, err)
	require.Len(t, hist, 3)
	_, err = local.c.Threads.UpdateState(ctx, th.ThreadID, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"count": 40}`), AsNode: "agent"})
	require.NoError(t, err)
	out, err := local.c.Runs.Wait(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "proxy", Input: raw(t, map[string]any{})})
	require.NoError(t, err)
	require.Equal(t, 41.0, object(t, out)["count"], "the run continued from the updated remote state")

	// a fork through the local API forks the remote thread
	out, err = local.c.Runs.Wait(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "proxy", Input: raw(t, map[string]any{}), CheckpointID: *hist[0].Checkpoint.CheckpointID})
	require.NoError(t, err)
	require.Equal(t, 2.0, object(t, out)["count"], "continued from the first run's final checkpoint")

	// stateless local runs are stateless remote runs
	out, err = local.c.Runs.Wait(ctx, "", graphserver.RunCreate{AssistantID: "proxy", Input: raw(t, map[string]any{})})
	require.NoError(t, err)
	require.Equal(t, 1.0, object(t, out)["count"])

	// a remote failure fails the local run with the remote exception
	_, err = local.c.Runs.Wait(ctx, "", graphserver.RunCreate{AssistantID: "proxyfail", Input: raw(t, map[string]any{})})
	var re *client.RunError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "ValueError", re.Name)
	require.Equal(t, "boom", re.Message)

	d, err := local.c.Assistants.GetGraph(ctx, "proxy", 0)
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(d.Nodes, func(n graphserver.DrawingNode) bool { return n.ID == "agent" }))
}

// parentOf builds a local graph whose node "remote" is rg, between a
// "before" node and the end.
func parentOf(t testing.TB, rg *client.RemoteGraph) *graph.Compiled {
	t.Helper()
	g := graph.New(graph.Channels{"question": graph.LastValue(), "answer": graph.LastValue(), "answers": graph.LastValue(), "seen": graph.LastValue()})
	g.AddNode("before", func(ctx context.Context, s graph.State) (any, error) { return graph.Update{"seen": true}, nil })
	g.AddNode("remote", rg.Node)
	g.AddEdge(graph.Start, "before").AddEdge("before", "remote").AddEdge("remote", graph.End)
	c, err := g.Compile(graph.CompileOptions{Name: "parent"})
	require.NoError(t, err)
	return c
}

// TestRemoteGraphNode: a local graph (hosted by server A) whose node is a
// RemoteGraph to server B. The remote parts appear in A's stream under the
// node's namespace; an interrupt() in B's graph pauses A's run; resuming
// A's run (with a plain value, or a map keyed by the interrupt id) resumes
// B's run; remote errors fail the node with the remote exception.
// (LangGraph remote.py stream: caller namespace prepended, GraphInterrupt
// raised on __interrupt__, RemoteException on error; resume as in
// langgraph PR #7181.)
func TestRemoteGraphNode(t *testing.T) {
	t.Parallel()
	b := newEnv(t, envOptions{graphs: map[string]graphserver.Graph{"ask2": ask2Graph(t), "nested": nestedGraph(t)}})
	askNode := newRemote(t, client.RemoteOptions{AssistantID: "ask", Client: b.c})
	ask2Node := newRemote(t, client.RemoteOptions{AssistantID: "ask2", URL: b.url})
	failNode := newRemote(t, client.RemoteOptions{AssistantID: "fail", Client: b.c})
	nestedNode := newRemote(t, client.RemoteOptions{AssistantID: "nested", Client: b.c})
	a := newEnv(t, envOptions{graphs: map[string]graphserver.Graph{
		"parent": parentOf(t, askNode), "parent2": parentOf(t, ask2Node), "parentfail": parentOf(t, failNode), "parentnested": parentOf(t, nestedNode),
	}})
	ctx := t.Context()

	for _, resumeBy := range []string{"value", "id"} {
		t.Run("interrupt and resume by "+resumeBy, func(t *testing.T) {
			th, err := a.c.Threads.Create(ctx, graphserver.ThreadCreate{})
			require.NoError(t, err)
			tid := th.ThreadID
			evs := collect(t, a.c.Runs.Stream(ctx, tid, graphserver.RunCreate{
				AssistantID: "parent", Input: raw(t, map[string]any{"question": "ok?"}),
				StreamMode: []string{"updates", "values"}, StreamSubgraphs: true,
			}, client.StreamOptions{}))

			// A's thread is paused on B's interrupt, with B's interrupt id
			st, err := a.c.Threads.GetState(ctx, tid, graphserver.ThreadStateQuery{})
			require.NoError(t, err)
			require.Equal(t, []string{"remote"}, st.Next)
			require.Len(t, st.Interrupts, 1)
			require.Equal(t, map[string]any{"question": "ok?"}, st.Interrupts[0].Value)
			bt, err := b.c.Threads.Get(ctx, tid)
			require.NoError(t, err, "B's thread has A's thread id")
			require.Equal(t, graphserver.ThreadInterrupted, bt.Status)
			var remoteIntr []graphserver.Interrupt
			for _, in := range bt.Interrupts {
				remoteIntr = append(remoteIntr, in...)
			}
			require.Len(t, remoteIntr, 1)
			require.Equal(t, remoteIntr[0].ID, st.Interrupts[0].ID, "the interrupt id is B's")

			// B's parts under the node's namespace in A's stream
			ns := "remote:" + st.Tasks[0].ID
			var sub, root []string
			for _, ev := range evs {
				if strings.HasPrefix(ev.Event, "updates|"+ns) || strings.HasPrefix(ev.Event, "values|"+ns) {
					sub = append(sub, ev.Event)
				}
				if ev.Event == "updates" {
					root = append(root, string(ev.Data))
				}
			}
			require.Contains(t, sub, "values|"+ns, "B's values part under A's node namespace")
			require.Contains(t, sub, "updates|"+ns, "B's interrupt update under A's node namespace")
			require.Contains(t, root[len(root)-1], "__interrupt__")
			require.Contains(t, root[len(root)-1], remoteIntr[0].ID)

			// resume A: B resumes (no new question, no restart)
			resume := raw(t, "yes")
			if resumeBy == "id" {
				resume = raw(t, map[string]any{remoteIntr[0].ID: "yes"})
			}
			out, err := a.c.Runs.Wait(ctx, tid, graphserver.RunCreate{AssistantID: "parent", Command: &graphserver.RunCommand{Resume: resume}})
			require.NoError(t, err)
			vals := object(t, out)
			require.Equal(t, "yes", vals["answer"])
			require.Equal(t, true, vals["seen"])
			bt, err = b.c.Threads.Get(ctx, tid)
			require.NoError(t, err)
			require.Equal(t, graphserver.ThreadIdle, bt.Status)
			require.Equal(t, "yes", object(t, bt.Values)["answer"])
			bruns, err := b.c.Runs.List(ctx, tid, graphserver.RunSearch{})
			require.NoError(t, err)
			require.Len(t, bruns, 2)
			require.NotNil(t, bruns[0].Kwargs.Command, "the second remote run resumed with a command")
			require.JSONEq(t, string(resume), string(bruns[0].Kwargs.Command.Resume), "B is resumed as A was: by value, or by B's interrupt id")
			at, err := a.c.Threads.Get(ctx, tid)
			require.NoError(t, err)
			require.Equal(t, graphserver.ThreadIdle, at.Status)
		})
	}

	t.Run("two interrupts in a row", func(t *testing.T) {
		th, err := a.c.Threads.Create(ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		tid := th.ThreadID
		out, err := a.c.Runs.Wait(ctx, tid, graphserver.RunCreate{AssistantID: "parent2", Input: raw(t, map[string]any{})})
		require.NoError(t, err)
		require.Contains(t, string(out), "first?")
		out, err = a.c.Runs.Wait(ctx, tid, graphserver.RunCreate{AssistantID: "parent2", Command: &graphserver.RunCommand{Resume: raw(t, "one")}})
		require.NoError(t, err)
		require.Contains(t, string(out), "second?")
		st, err := a.c.Threads.GetState(ctx, tid, graphserver.ThreadStateQuery{})
		require.NoError(t, err)
		require.Equal(t, "second?", st.Interrupts[0].Value)
		out, err = a.c.Runs.Wait(ctx, tid, graphserver.RunCreate{AssistantID: "parent2", Command: &graphserver.RunCommand{Resume: raw(t, "two")}})
		require.NoError(t, err)
		require.Equal(t, []any{"one", "two"}, object(t, out)["answers"], "each resume reached the remote interrupt it answers")
		bruns, err := b.c.Runs.List(ctx, tid, graphserver.RunSearch{})
		require.NoError(t, err)
		require.Len(t, bruns, 3)
	})

	t.Run("interrupt in a remote subgraph", func(t *testing.T) {
		th, err := a.c.Threads.Create(ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		evs := collect(t, a.c.Runs.Stream(ctx, th.ThreadID, graphserver.RunCreate{
			AssistantID: "parentnested", Input: raw(t, map[string]any{"question": "deep?"}),
			StreamMode: []string{"updates"}, StreamSubgraphs: true,
		}, client.StreamOptions{}))
		// B's subgraph parts nest under A's node: updates|remote:<task>|child:<task>
		require.True(t, slices.ContainsFunc(evs, func(ev graphserver.StreamEvent) bool {
			parts := strings.Split(ev.Event, "|")
			return len(parts) == 3 && strings.HasPrefix(parts[1], "remote:") && strings.HasPrefix(parts[2], "child:")
		}), "%v", names(evs))
		st, err := a.c.Threads.GetState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
		require.NoError(t, err)
		require.Len(t, st.Interrupts, 1)
		require.Equal(t, map[string]any{"question": "deep?"}, st.Interrupts[0].Value)
		out, err := a.c.Runs.Wait(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "parentnested", Command: &graphserver.RunCommand{Resume: raw(t, "down")}})
		require.NoError(t, err)
		require.Equal(t, "down", object(t, out)["answer"])
	})

	t.Run("a fresh run does not resume a stale remote interrupt", func(t *testing.T) {
		th, err := a.c.Threads.Create(ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		tid := th.ThreadID
		_, err = a.c.Runs.Wait(ctx, tid, graphserver.RunCreate{AssistantID: "parent", Input: raw(t, map[string]any{"question": "one?"})})
		require.NoError(t, err)
		out, err := a.c.Runs.Wait(ctx, tid, graphserver.RunCreate{AssistantID: "parent", Input: raw(t, map[string]any{"question": "two?"})})
		require.NoError(t, err)
		require.Contains(t, string(out), "two?", "new input starts the remote graph over")
	})

	t.Run("remote error", func(t *testing.T) {
		th, err := a.c.Threads.Create(ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		evs := collect(t, a.c.Runs.Stream(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "parentfail", Input: raw(t, map[string]any{})}, client.StreamOptions{}))
		last := evs[len(evs)-1]
		require.Equal(t, "error", last.Event)
		var re *client.RunError
		require.ErrorAs(t, client.RunErrorOf(last), &re)
		require.Equal(t, "ValueError", re.Name)
		require.Equal(t, "boom", re.Message)
		at, err := a.c.Threads.Get(ctx, th.ThreadID)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadError, at.Status)
	})
}
