package client_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/client"
	"github.com/graphserver/graphserver/internal/graphtest"
)

// TestRunsCreateGetListJoin: background runs, reading them back, joining.
func TestRunsCreateGetListJoin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	c := e.c
	th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	tid := th.ThreadID

	run, err := c.Runs.Create(ctx, tid, graphserver.RunCreate{
		AssistantID: "chat", Input: raw(t, map[string]any{}), Metadata: graphserver.Metadata{"k": "v"},
		Headers: map[string]string{"x-trace": "t1"},
	})
	require.NoError(t, err)
	require.Equal(t, tid, run.ThreadID)
	require.Equal(t, graphserver.SystemAssistantID("chat"), run.AssistantID)
	cfg := run.Kwargs.Config["configurable"].(map[string]any)
	require.Equal(t, "t1", cfg["x-trace"], "RunCreate.Headers go out as request headers")

	out, err := c.Runs.Join(ctx, tid, run.RunID)
	require.NoError(t, err)
	require.Equal(t, 1.0, object(t, out)["count"])

	got, err := c.Runs.Get(ctx, tid, run.RunID)
	require.NoError(t, err)
	require.Equal(t, graphserver.RunSuccess, got.Status)
	require.Equal(t, "v", got.Metadata["k"])
	_, err = c.Runs.Get(ctx, tid, uuid.NewString())
	requireCode(t, err, graphserver.ENOTFOUND)

	second, err := c.Runs.Create(ctx, tid, graphserver.RunCreate{AssistantID: "chat"})
	require.NoError(t, err)
	_, err = c.Runs.Join(ctx, tid, second.RunID)
	require.NoError(t, err)
	runs, err := c.Runs.List(ctx, tid, graphserver.RunSearch{})
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.Equal(t, second.RunID, runs[0].RunID, "newest first")
	runs, err = c.Runs.List(ctx, tid, graphserver.RunSearch{Limit: 1, Offset: 1, Status: graphserver.RunSuccess, Select: []string{"run_id", "status"}})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, run.RunID, runs[0].RunID)
	require.Empty(t, runs[0].AssistantID, "select projects the fields")
	_, err = c.Runs.List(ctx, tid, graphserver.RunSearch{Select: []string{"bogus"}})
	requireCode(t, err, graphserver.EINVALID)

	require.NoError(t, c.Runs.Delete(ctx, tid, run.RunID))
	requireCode(t, c.Runs.Delete(ctx, tid, run.RunID), graphserver.ENOTFOUND)

	// stateless background run and batch
	sl, err := c.Runs.Create(ctx, "", graphserver.RunCreate{AssistantID: "echo", Input: raw(t, map[string]any{"a": 1}), OnCompletion: graphserver.OnCompletionKeep})
	require.NoError(t, err)
	out, err = c.Runs.Join(ctx, sl.ThreadID, sl.RunID)
	require.NoError(t, err)
	require.JSONEq(t, `{"a":1}`, string(out))
	batch, err := c.Runs.CreateBatch(ctx, []graphserver.RunCreate{
		{AssistantID: "echo", Input: raw(t, map[string]any{"b": 1})},
		{AssistantID: "echo", Input: raw(t, map[string]any{"b": 2})},
	})
	require.NoError(t, err)
	require.Len(t, batch, 2)
	_, err = c.Runs.CreateBatch(ctx, []graphserver.RunCreate{{AssistantID: "nope"}})
	require.Error(t, err)

	_, err = c.Runs.Create(ctx, uuid.NewString(), graphserver.RunCreate{AssistantID: "chat"})
	requireCode(t, err, graphserver.ENOTFOUND)
}

// TestRunsWait: outputs, creation of a thread with if_not_exists, and a
// failed run reported as a *RunError with the output.
func TestRunsWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	c := e.c

	tid := uuid.NewString()
	out, err := c.Runs.Wait(ctx, tid, graphserver.RunCreate{AssistantID: "ask", Input: raw(t, map[string]any{"question": "ok?"}), IfNotExists: graphserver.IfNotExistsCreate})
	require.NoError(t, err)
	intr := object(t, out)["__interrupt__"].([]any)
	require.Equal(t, map[string]any{"question": "ok?"}, intr[0].(map[string]any)["value"])
	th, err := c.Threads.Get(ctx, tid)
	require.NoError(t, err)
	require.Equal(t, graphserver.ThreadInterrupted, th.Status)

	out, err = c.Runs.Wait(ctx, tid, graphserver.RunCreate{AssistantID: "ask", Command: &graphserver.RunCommand{Resume: raw(t, "yes")}})
	require.NoError(t, err)
	require.Equal(t, "yes", object(t, out)["answer"])

	out, err = c.Runs.Wait(ctx, "", graphserver.RunCreate{AssistantID: "echo", Input: raw(t, map[string]any{"s": 1})})
	require.NoError(t, err)
	require.JSONEq(t, `{"s":1}`, string(out))

	out, err = c.Runs.Wait(ctx, "", graphserver.RunCreate{AssistantID: "fail", Input: raw(t, map[string]any{})})
	var re *client.RunError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "ValueError", re.Name)
	require.Equal(t, "boom", re.Message)
	require.Equal(t, "ValueError", graphserver.ErrorName(err))
	require.Contains(t, string(out), "__error__")

	_, err = c.Runs.Wait(ctx, uuid.NewString(), graphserver.RunCreate{AssistantID: "chat"})
	requireCode(t, err, graphserver.ENOTFOUND)
	_, err = c.Runs.Wait(ctx, "", graphserver.RunCreate{})
	requireCode(t, err, graphserver.EINVALID)
}

// TestRunsStream: events of several modes, subgraph namespaces,
// OnRunCreated, and creation errors.
func TestRunsStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	c := e.c
	th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)

	var createdRun, createdThread string
	evs := collect(t, c.Runs.Stream(ctx, th.ThreadID, graphserver.RunCreate{
		AssistantID: "parts", Input: raw(t, map[string]any{"x": 1}),
		StreamMode: []string{"custom", "updates", "values", "messages-tuple"}, StreamSubgraphs: true,
	}, client.StreamOptions{OnRunCreated: func(runID, threadID string) { createdRun, createdThread = runID, threadID }}))
	require.Equal(t, []string{"metadata", "custom", "custom", "custom", "updates", "values|child:1", "messages", "values"}, names(evs))
	meta := object(t, evs[0].Data)
	require.Equal(t, createdRun, meta["run_id"])
	require.Equal(t, th.ThreadID, createdThread)
	for i, ev := range evs {
		require.Equal(t, itoa(i), ev.ID, "every event carries its log id")
	}
	require.JSONEq(t, `{"x":1}`, string(evs[len(evs)-1].Data))

	// stateless: OnRunCreated from /runs/{id}
	createdRun, createdThread = "", "x"
	evs = collect(t, c.Runs.Stream(ctx, "", graphserver.RunCreate{AssistantID: "echo", Input: raw(t, map[string]any{"y": 2}), StreamMode: []string{"values"}},
		client.StreamOptions{OnRunCreated: func(runID, threadID string) { createdRun, createdThread = runID, threadID }}))
	require.Equal(t, []string{"metadata", "values"}, names(evs))
	require.NotEmpty(t, createdRun)
	require.Empty(t, createdThread)

	// an error event, and RunErrorOf
	evs = collect(t, c.Runs.Stream(ctx, "", graphserver.RunCreate{AssistantID: "fail", Input: raw(t, map[string]any{})}, client.StreamOptions{}))
	last := evs[len(evs)-1]
	require.Equal(t, "error", last.Event)
	var re *client.RunError
	require.ErrorAs(t, client.RunErrorOf(last), &re)
	require.Equal(t, "ValueError", re.Name)
	require.NoError(t, client.RunErrorOf(evs[0]))

	// creation errors are the only element
	var errs []error
	for _, err := range c.Runs.Stream(ctx, uuid.NewString(), graphserver.RunCreate{AssistantID: "chat"}, client.StreamOptions{}) {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	requireCode(t, errs[0], graphserver.ENOTFOUND)

	// one run per iterator
	seq := c.Runs.Stream(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "chat"}, client.StreamOptions{})
	require.NotEmpty(t, collect(t, seq))
	for _, err := range seq {
		require.Error(t, err)
		require.Contains(t, err.Error(), "already consumed")
	}
	runs, err := c.Runs.List(ctx, th.ThreadID, graphserver.RunSearch{})
	require.NoError(t, err)
	require.Len(t, runs, 2)
}

// TestRunsJoinStream: replay from the start and after an id, the mode
// filter, and the stateless route.
func TestRunsJoinStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := t.Context()
	c := e.c
	th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	run, err := c.Runs.Create(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "parts", Input: raw(t, map[string]any{}), StreamMode: []string{"custom", "values"}, StreamResumable: true})
	require.NoError(t, err)
	_, err = c.Runs.Join(ctx, th.ThreadID, run.RunID)
	require.NoError(t, err)

	all := collect(t, c.Runs.JoinStream(ctx, th.ThreadID, run.RunID, graphserver.JoinStreamOptions{LastEventID: "-1"}))
	require.Equal(t, []string{"metadata", "custom", "custom", "custom", "values"}, names(all))
	after := collect(t, c.Runs.JoinStream(ctx, th.ThreadID, run.RunID, graphserver.JoinStreamOptions{LastEventID: all[2].ID}))
	require.Equal(t, names(all[3:]), names(after))
	require.Equal(t, all[3].ID, after[0].ID)
	filtered := collect(t, c.Runs.JoinStream(ctx, th.ThreadID, run.RunID, graphserver.JoinStreamOptions{LastEventID: "-1", StreamMode: []string{"values"}}))
	require.Equal(t, []string{"metadata", "values"}, names(filtered))
	stateless := collect(t, c.Runs.JoinStream(ctx, "", run.RunID, graphserver.JoinStreamOptions{LastEventID: "-1"}))
	require.Equal(t, names(all), names(stateless))

	for _, err := range c.Runs.JoinStream(ctx, th.ThreadID, uuid.NewString(), graphserver.JoinStreamOptions{}) {
		requireCode(t, err, graphserver.ENOTFOUND)
	}
}

// TestRunsCancel: cancel one run (interrupt and rollback, with wait) and
// cancel many.
func TestRunsCancel(t *testing.T) {
	t.Parallel()
	block := graphtest.NewBlocking()
	e := newEnv(t, envOptions{graphs: map[string]graphserver.Graph{"block": block}})
	ctx := t.Context()
	c := e.c
	t.Cleanup(block.Release)
	th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)

	run, err := c.Runs.Create(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: raw(t, map[string]any{"v": 1})})
	require.NoError(t, err)
	require.Equal(t, run.RunID, <-block.Started)
	out, err := c.Runs.Cancel(ctx, th.ThreadID, run.RunID, client.CancelOptions{Wait: true})
	require.NoError(t, err)
	require.JSONEq(t, `{"v":1}`, string(out), "the values the run had when it stopped")
	got, err := c.Runs.Get(ctx, th.ThreadID, run.RunID)
	require.NoError(t, err)
	require.Equal(t, graphserver.RunInterrupted, got.Status)

	run, err = c.Runs.Create(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: raw(t, map[string]any{"v": 2})})
	require.NoError(t, err)
	require.Equal(t, run.RunID, <-block.Started)
	out, err = c.Runs.Cancel(ctx, th.ThreadID, run.RunID, client.CancelOptions{Action: graphserver.CancelRollback})
	require.NoError(t, err)
	require.Nil(t, out, "202 without a body")
	require.Eventually(t, func() bool {
		_, err := c.Runs.Get(ctx, th.ThreadID, run.RunID)
		return graphserver.ErrorCode(err) == graphserver.ENOTFOUND
	}, 10e9, 10e6, "a rolled-back run is deleted")

	_, err = c.Runs.Cancel(ctx, th.ThreadID, uuid.NewString(), client.CancelOptions{})
	requireCode(t, err, graphserver.ENOTFOUND)

	run, err = c.Runs.Create(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "block", Input: raw(t, map[string]any{"v": 3})})
	require.NoError(t, err)
	require.Equal(t, run.RunID, <-block.Started)
	require.NoError(t, c.Runs.CancelMany(ctx, graphserver.RunCancelSelect{ThreadID: th.ThreadID, RunIDs: []string{run.RunID}}, ""))
	_, err = c.Runs.Join(ctx, th.ThreadID, run.RunID)
	require.NoError(t, err)
	got, err = c.Runs.Get(ctx, th.ThreadID, run.RunID)
	require.NoError(t, err)
	require.Equal(t, graphserver.RunInterrupted, got.Status)
	err = c.Runs.CancelMany(ctx, graphserver.RunCancelSelect{Status: "running"}, graphserver.CancelInterrupt)
	requireCode(t, err, graphserver.ENOTFOUND)
	err = c.Runs.CancelMany(ctx, graphserver.RunCancelSelect{Status: "bogus"}, "")
	requireCode(t, err, graphserver.EINVALID)
}

// TestSystem: /info and /ok.
func TestSystem(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	info, err := e.c.Info(t.Context())
	require.NoError(t, err)
	require.Equal(t, graphserver.Version, info.Version)
	require.True(t, info.Flags.Assistants)
	require.NoError(t, e.c.Ok(t.Context(), true))
	require.NoError(t, e.c.Ok(t.Context(), false))
}

// TestRunsJoinAfterDroppedEvents: a run whose events outgrew the server's
// event log (Options.MaxEventLogBytes) is still joined and waited for
// through the client (join, cancel with wait), as neither reads an event;
// streaming it from the start is refused as unavailable.
func TestRunsJoinAfterDroppedEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{
		graphs: map[string]graphserver.Graph{"emit": graphtest.Emitter{Events: 100, Pad: strings.Repeat("x", 100)}},
		server: func(o *graphserver.Options) { o.MaxEventLogBytes = 2000 },
	})
	ctx := t.Context()
	th, err := e.c.Threads.Create(ctx, graphserver.ThreadCreate{})
	require.NoError(t, err)
	run, err := e.c.Runs.Create(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "emit",
		Input: raw(t, map[string]any{"a": 1}), StreamMode: []string{"custom"}})
	require.NoError(t, err)
	out, err := e.c.Runs.Join(ctx, th.ThreadID, run.RunID)
	require.NoError(t, err)
	require.JSONEq(t, `{"a":1}`, string(out))
	out, err = e.c.Runs.Cancel(ctx, th.ThreadID, run.RunID, client.CancelOptions{Wait: true})
	require.NoError(t, err)
	require.JSONEq(t, `{"a":1}`, string(out), "an ended run's cancel with wait answers its output")
	var streamErr error
	for _, err := range e.c.Runs.JoinStream(ctx, th.ThreadID, run.RunID, graphserver.JoinStreamOptions{LastEventID: "-1"}) {
		streamErr = err
		break
	}
	requireCode(t, streamErr, graphserver.EUNAVAILABLE)
}
