package graphserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/record"
)

// Run statuses.
const (
	RunPending     = "pending"
	RunRunning     = "running"
	RunSuccess     = "success"
	RunError       = "error"
	RunTimeout     = "timeout"
	RunInterrupted = "interrupted"
)

// Multitask strategies: what a new run does when its thread already has a
// pending or running run.
const (
	MultitaskReject    = "reject"
	MultitaskInterrupt = "interrupt"
	MultitaskRollback  = "rollback"
	MultitaskEnqueue   = "enqueue"
)

// Run is one execution of an assistant's graph, on a thread or stateless (on
// a temporary thread).
type Run = record.Run

// RunKwargs is the execution record of a run, returned verbatim on the wire.
type RunKwargs = record.RunKwargs

// RunCommand resumes, updates or redirects a graph; it replaces a run's input.
type RunCommand = record.RunCommand

// commandEmpty reports whether c has no update, resume or goto.
func commandEmpty(c *RunCommand) bool {
	return len(nonNull(c.Update)) == 0 && len(nonNull(c.Resume)) == 0 && len(nonNull(c.Goto)) == 0
}

// nonNull returns nil for an absent or JSON null value, else raw.
func nonNull(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil
	}
	return raw
}

// Breakpoints lists node names for interrupt_before/after; ["*"] means all.
// On the wire it is "*" or a list of names.
type Breakpoints = record.Breakpoints

// Run creation options.
const (
	IfNotExistsCreate = "create" // create the thread when it is missing
	IfNotExistsReject = "reject" // answer ENOTFOUND when it is missing (the default)

	OnDisconnectCancel   = "cancel"   // cancel (action interrupt) the run when the client goes away
	OnDisconnectContinue = "continue" // keep running (the default)

	OnCompletionDelete = "delete" // delete a stateless run's temporary thread after the run (the default)
	OnCompletionKeep   = "keep"   // keep it

	CancelInterrupt = "interrupt" // stop the run, keep its checkpoints; status interrupted
	CancelRollback  = "rollback"  // stop the run and delete it with its checkpoints

	DurabilitySync  = "sync"
	DurabilityAsync = "async" // the default
	DurabilityExit  = "exit"
)

// maxAfterSeconds bounds after_seconds: one year.
const maxAfterSeconds = 365 * 24 * 60 * 60

// runStatuses are the values a run status takes.
var runStatuses = []string{RunPending, RunRunning, RunSuccess, RunError, RunTimeout, RunInterrupted}

// multitaskStrategies are the values multitask_strategy takes.
var multitaskStrategies = []string{MultitaskReject, MultitaskInterrupt, MultitaskRollback, MultitaskEnqueue}

// streamModesAll are the stream modes a run may ask for.
var streamModesAll = []string{"values", "messages", "messages-tuple", "updates", "events", "debug", "tasks", "checkpoints", "custom", "tools"}

// runSelectColumns are the values select accepts when listing runs.
var runSelectColumns = []string{"run_id", "thread_id", "assistant_id", "created_at", "updated_at", "status", "metadata", "kwargs", "multitask_strategy"}

// StreamModes lists stream modes. On the wire it is one mode or a list.
type StreamModes = record.StreamModes

// RunCreate is the body of every run-creating request. Zero fields take their
// documented defaults.
type RunCreate = record.RunCreate

// RunSearch selects the runs of a thread for ListRuns.
type RunSearch = record.RunSearch

// RunCancelSelect selects runs for CancelRuns: ThreadID with RunIDs, or
// Status (pending, running or all).
type RunCancelSelect = record.RunCancelSelect

// JoinStreamOptions tunes JoinRunStream.
type JoinStreamOptions struct {
	// LastEventID resumes after that event id; "" or "-1"/"-" replays from
	// the start.
	LastEventID string
	// StreamMode keeps only events of these modes (matched on the part before
	// "|"); metadata and error always pass. Empty = all.
	StreamMode []string
	// CancelOnDisconnect cancels the run (action interrupt) when the consumer
	// stops reading before the run ends.
	CancelOnDisconnect bool
	// WaitOnly says the stream will only be waited on (RunStream.Wait), not
	// read: it is not refused when the run's log dropped events
	// (Options.MaxEventLogBytes), since waiting for the output needs none.
	WaitOnly bool
}

// StreamEvent is one event of a run's stream. ID is its position in the
// run's event log ("0", "1", ...): ids grow monotonically within a run,
// across its attempts. Events synthesized from storage for a run this
// process does not execute (see RunStream.Events) have an empty ID.
type StreamEvent = record.StreamEvent

// MultitaskRejectMessage is the detail of the ECONFLICT a run with
// multitask_strategy reject gets on a busy thread.
const MultitaskRejectMessage = "Thread is already running a task. Wait for it to finish or choose a different multitask strategy."

// runStore is the Storage with the Server's multi-row run rules (runtx.go)
// as methods, so that the Server's methods read as storage calls.
type runStore struct{ driver.Storage }

// CreateRun is insertRun.
func (r runStore) CreateRun(ctx context.Context, run *Run, opts *driver.RunInsert) (*driver.RunCreated, error) {
	return insertRun(ctx, r.Storage, run, opts)
}

// CancelRuns is cancelRuns.
func (r runStore) CancelRuns(ctx context.Context, sel *RunCancelSelect, action string, now time.Time, filter Filter) ([]driver.CancelledRun, error) {
	return cancelRuns(ctx, r.Storage, sel, action, now, filter)
}

// runStorage returns the run store; the error is always nil (every
// Storage has runs).
func (s *Server) runStorage() (runStore, error) {
	return runStore{s.storage}, nil
}

// CreateRun creates a background run on thread threadID, or a stateless run
// (on a new temporary thread) when threadID is "". The run is pending; a
// started Server picks it up at once (or after rc.AfterSeconds).
//
// It returns EINVALID for a bad field, EBADREQUEST for a resume command
// without a thread or both config.configurable and context set, ENOTFOUND
// when the assistant or (with if_not_exists reject) the thread is missing,
// ECONFLICT with MultitaskRejectMessage when the strategy is reject and the
// thread is busy, EUNAVAILABLE after Close. With interrupt or rollback, the
// thread's in-flight runs are cancelled.
func (s *Server) CreateRun(ctx context.Context, threadID string, rc RunCreate) (*Run, error) {
	run, _, err := s.createRun(ctx, threadID, &rc, nil)
	return run, err
}

// CreateRunBatch creates stateless background runs. Every item is validated
// before the first is created.
func (s *Server) CreateRunBatch(ctx context.Context, rcs []RunCreate) ([]*Run, error) {
	if len(rcs) == 0 {
		return nil, Errorf(EINVALID, "The batch must hold at least one run.")
	}
	for i := range rcs {
		c := rcs[i]
		if err := s.validateRunCreate(ctx, &c, true); err != nil {
			return nil, err
		}
		if _, err := s.runAssistant(ctx, c.AssistantID); err != nil {
			return nil, err
		}
	}
	runs := make([]*Run, 0, len(rcs))
	for i := range rcs {
		run, _, err := s.createRun(ctx, "", &rcs[i], nil)
		if err != nil {
			return runs, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// StreamRun creates a run (as CreateRun) and returns a stream of its events
// from the first one. With rc.OnDisconnect cancel, abandoning the stream
// before the run ends cancels the run.
func (s *Server) StreamRun(ctx context.Context, threadID string, rc RunCreate) (*RunStream, error) {
	run, log, err := s.createRun(ctx, threadID, &rc, nil)
	if err != nil {
		return nil, err
	}
	return &RunStream{Run: run, s: s, log: log, cancelOnDrop: rc.OnDisconnect == OnDisconnectCancel}, nil
}

// WaitRun creates a run (as CreateRun), blocks until it ends and returns its
// final output: the last values, or the interrupt chunk
// ({"__interrupt__": [...]}). When the run failed (status error or
// timeout) it returns a *RunFailedError naming the run's error, together
// with the output the HTTP API answers for it ({"__error__": {"error",
// "message"}}). With rc.OnDisconnect cancel, ctx ending first cancels the
// run.
func (s *Server) WaitRun(ctx context.Context, threadID string, rc RunCreate) (json.RawMessage, error) {
	st, err := s.StreamRun(ctx, threadID, rc)
	if err != nil {
		return nil, err
	}
	return st.waitFailed(ctx)
}

// RunFailedError is the error WaitRun and JoinRun return when the run they
// waited for failed: its status is error or timeout. Name and Message are
// the run's error as the API reports it in the thread's error and in the
// {"__error__": {"error": Name, "message": Message}} output of /wait and
// /join: the name of a graph error that names itself (an ErrorName method,
// such as "ValueError" or "TimeoutError"), or "InternalError" with
// "Internal error." for an error whose text is not shown. Use errors.As to
// read it:
//
//	var failed *graphserver.RunFailedError
//	if errors.As(err, &failed) { log.Print(failed.Name, failed.Message) }
type RunFailedError struct {
	RunID    string `json:"-"`
	ThreadID string `json:"-"`
	Name     string `json:"error"`
	Message  string `json:"message"`
}

// Error returns "run <id> failed: <Name>: <Message>", or "<Name>:
// <Message>" when RunID is empty (client.RunError, read from a response).
func (e *RunFailedError) Error() string {
	if e.RunID == "" {
		return e.Name + ": " + e.Message
	}
	return "run " + e.RunID + " failed: " + e.Name + ": " + e.Message
}

// ErrorName returns Name, so that a graph node returning this error (a run
// that waited for another one) reports the inner run's error name.
func (e *RunFailedError) ErrorName() string { return e.Name }

// waitFailed is Wait, returning a *RunFailedError with the output of a
// failed run.
func (st *RunStream) waitFailed(ctx context.Context) (json.RawMessage, error) {
	out, err := st.Wait(ctx)
	if err != nil {
		return out, err
	}
	if e := outputFailure(out); e != nil {
		e.RunID, e.ThreadID = st.Run.RunID, st.Run.ThreadID
		return out, e
	}
	return out, nil
}

// outputFailure reads the {"__error__": {"error", "message"}} output of a
// failed run (built by marshalOutput, so compact), or returns nil.
func outputFailure(out json.RawMessage) *RunFailedError {
	if !bytes.HasPrefix(out, []byte(`{"__error__":`)) {
		return nil
	}
	var v map[string]json.RawMessage
	if json.Unmarshal(out, &v) != nil || len(v) != 1 {
		return nil
	}
	e := &RunFailedError{}
	if json.Unmarshal(v["__error__"], e) != nil {
		return nil
	}
	return e
}

// GetRun returns a run of a thread (threadID "" = any thread). ENOTFOUND
// when it does not exist.
func (s *Server) GetRun(ctx context.Context, threadID, runID string) (*Run, error) {
	rs, err := s.runStorage()
	if err != nil {
		return nil, err
	}
	if threadID, runID, err = checkRunIDs(threadID, runID); err != nil {
		return nil, err
	}
	filter, err := s.authFilter(ctx, "threads", "read", &ThreadRef{ThreadID: threadID, RunID: runID})
	if err != nil {
		return nil, err
	}
	return rs.GetRun(ctx, threadID, runID, filter)
}

// ListRuns lists a thread's runs, newest first. EINVALID for a bad limit,
// offset, status or select column; ENOTFOUND when the thread is missing.
func (s *Server) ListRuns(ctx context.Context, threadID string, q RunSearch) ([]*Run, error) {
	rs, err := s.runStorage()
	if err != nil {
		return nil, err
	}
	if threadID, _, err = checkRunIDs(threadID, ""); err != nil {
		return nil, err
	}
	if q.Limit == 0 {
		q.Limit = 10
	}
	if q.Limit < 1 || q.Limit > 1000 {
		return nil, Errorf(EINVALID, "limit must be between 1 and 1000.")
	}
	if q.Offset < 0 {
		return nil, Errorf(EINVALID, "offset must be 0 or more.")
	}
	if q.Status != "" && !slices.Contains(runStatuses, q.Status) {
		return nil, Errorf(EINVALID, "status must be one of %s.", strings.Join(runStatuses, ", "))
	}
	for _, c := range q.Select {
		if !slices.Contains(runSelectColumns, c) {
			return nil, Errorf(EINVALID, "select must list columns among %s.", strings.Join(runSelectColumns, ", "))
		}
	}
	filter, err := s.authFilter(ctx, "threads", "read", &ThreadRef{ThreadID: threadID})
	if err != nil {
		return nil, err
	}
	q.Filter = q.Filter.And(filter)
	return rs.ListRuns(ctx, threadID, &q)
}

// DeleteRun deletes a finished run and the checkpoints it wrote, then
// recomputes the thread's values, interrupts and status from its latest
// remaining checkpoint. ENOTFOUND when it does not exist, ECONFLICT while it
// is pending or running.
func (s *Server) DeleteRun(ctx context.Context, threadID, runID string) error {
	rs, err := s.runStorage()
	if err != nil {
		return err
	}
	if threadID, runID, err = checkRunIDs(threadID, runID); err != nil {
		return err
	}
	filter, err := s.authFilter(ctx, "threads", "delete", &ThreadRef{ThreadID: threadID, RunID: runID})
	if err != nil {
		return err
	}
	run, err := rs.GetRun(ctx, threadID, runID, filter)
	if err != nil {
		return err
	}
	if err := rs.DeleteRun(ctx, run.ThreadID, runID, filter); err != nil {
		return err
	}
	s.rq.logs.drop(runID)
	// The thread's summary may come from the checkpoints just deleted.
	if err := s.resummarize(ctx, run.ThreadID); err != nil && ErrorCode(err) != ENOTFOUND {
		return err
	}
	return nil
}

// CancelRun cancels a pending or running run with action interrupt (status
// interrupted, checkpoints kept) or rollback (run and its checkpoints
// deleted). A running run stops at its next opportunity; CancelRun does not
// wait for it (JoinRun does). Cancelling a finished run does nothing.
// ENOTFOUND when the run does not exist; EINVALID for another action.
func (s *Server) CancelRun(ctx context.Context, threadID, runID, action string) error {
	rs, err := s.runStorage()
	if err != nil {
		return err
	}
	if threadID, runID, err = checkRunIDs(threadID, runID); err != nil {
		return err
	}
	if action == "" {
		action = CancelInterrupt
	}
	if action != CancelInterrupt && action != CancelRollback {
		return Errorf(EINVALID, "action must be interrupt or rollback.")
	}
	filter, err := s.cancelFilter(ctx, threadID, []string{runID}, "", action)
	if err != nil {
		return err
	}
	cancelled, err := rs.CancelRuns(ctx, &RunCancelSelect{ThreadID: threadID, RunIDs: []string{runID}}, action, s.clock(), filter)
	if err != nil {
		return err
	}
	s.applyCancelled(cancelled)
	return nil
}

// CancelRuns cancels runs in bulk: sel names a thread and run ids, or a
// status (pending, running or all). EINVALID when sel mixes or lacks both
// forms; ENOTFOUND when no run matched.
func (s *Server) CancelRuns(ctx context.Context, sel RunCancelSelect, action string) error {
	rs, err := s.runStorage()
	if err != nil {
		return err
	}
	if action == "" {
		action = CancelInterrupt
	}
	if action != CancelInterrupt && action != CancelRollback {
		return Errorf(EINVALID, "action must be interrupt or rollback.")
	}
	byID := sel.ThreadID != "" || len(sel.RunIDs) > 0
	switch {
	case byID && sel.Status != "":
		return Errorf(EINVALID, "Give either thread_id and run_ids, or status, not both.")
	case byID && (sel.ThreadID == "" || len(sel.RunIDs) == 0):
		return Errorf(EINVALID, "thread_id and run_ids must be given together.")
	case !byID && sel.Status == "":
		return Errorf(EINVALID, "Give either thread_id and run_ids, or status.")
	case !byID && sel.Status != RunPending && sel.Status != RunRunning && sel.Status != "all":
		return Errorf(EINVALID, "status must be pending, running or all.")
	}
	if byID {
		if sel.ThreadID, _, err = checkRunIDs(sel.ThreadID, ""); err != nil {
			return err
		}
		ids := make([]string, len(sel.RunIDs))
		for i, id := range sel.RunIDs {
			if _, ids[i], err = checkRunIDs("", id); err != nil {
				return err
			}
		}
		sel.RunIDs = ids
	}
	filter, err := s.cancelFilter(ctx, sel.ThreadID, sel.RunIDs, sel.Status, action)
	if err != nil {
		return err
	}
	cancelled, err := rs.CancelRuns(ctx, &sel, action, s.clock(), filter)
	if err != nil {
		return err
	}
	if len(cancelled) == 0 && !byID {
		return Errorf(ENOTFOUND, "No runs matched.")
	}
	s.applyCancelled(cancelled)
	return nil
}

// cancelFilter asks threads:update about a cancellation, with the value
// LangGraph gives it: the action, and the run ids and status in metadata.
func (s *Server) cancelFilter(ctx context.Context, threadID string, runIDs []string, status, action string) (Filter, error) {
	meta := Metadata{"run_ids": slices.Clone(runIDs), "status": status}
	return s.authFilter(ctx, "threads", "update", &ThreadUpdate{ThreadID: threadID, Action: action, ThreadPatch: ThreadPatch{Metadata: meta}})
}

// JoinRun blocks until the run ends and returns its final output, as
// WaitRun does (a *RunFailedError with the output when the run failed). For
// a run that already ended it returns the thread's current values (or its
// error). ENOTFOUND when the run does not exist.
func (s *Server) JoinRun(ctx context.Context, threadID, runID string) (json.RawMessage, error) {
	st, err := s.JoinRunStream(ctx, threadID, runID, JoinStreamOptions{WaitOnly: true})
	if err != nil {
		return nil, err
	}
	return st.waitFailed(ctx)
}

// JoinRunStream returns a stream of a run's events after opts.LastEventID
// (from the start when empty or -1), then live ones until the run ends. A
// run executed by another process, or finished with its log gone, is
// followed through storage: metadata, then an error event if it failed (see
// RunStream.Events). ENOTFOUND when the run does not exist; EINVALID for an
// unknown stream mode; ErrEventsDropped (EUNAVAILABLE) when the events
// asked for are no longer held (Options.MaxEventLogBytes), unless
// opts.WaitOnly.
func (s *Server) JoinRunStream(ctx context.Context, threadID, runID string, opts JoinStreamOptions) (*RunStream, error) {
	for _, m := range opts.StreamMode {
		if !slices.Contains(streamModesAll, m) {
			return nil, Errorf(EINVALID, "stream_mode must list modes among %s.", strings.Join(streamModesAll, ", "))
		}
	}
	threadID, runID, err := checkRunIDs(threadID, runID)
	if err != nil {
		return nil, err
	}
	rs, err := s.runStorage()
	if err != nil {
		return nil, err
	}
	filter, err := s.authFilter(ctx, "threads", "read", &ThreadRef{ThreadID: threadID, RunID: runID})
	if err != nil {
		return nil, err
	}
	log := s.rq.logs.get(runID)
	var run *Run
	if log != nil && (threadID == "" || threadID == log.threadID) {
		// The log outlives temporary threads: replay it without storage.
		if err := s.checkLogAccess(ctx, log, filter); err != nil {
			return nil, err
		}
		run = &Run{RunID: runID, ThreadID: log.threadID}
	} else if run, err = rs.GetRun(ctx, threadID, runID, filter); err != nil {
		return nil, err
	} else {
		// Only the executing process's log is live: without one here, the
		// stream follows storage (and picks up a log this process opens).
		log = nil
	}
	from := parseLastEventID(opts.LastEventID)
	if log != nil && !opts.WaitOnly {
		if _, _, _, err := log.read(from); err != nil {
			return nil, err // the events asked for were dropped: refuse before streaming
		}
	}
	return &RunStream{
		Run: run, s: s, log: log,
		from:         from,
		modes:        opts.StreamMode,
		cancelOnDrop: opts.CancelOnDisconnect,
	}, nil
}

// checkLogAccess returns ENOTFOUND when filter hides the thread of a run
// whose log is held here: checked in storage while the run is there, else
// (its temporary thread deleted with it) against the thread's metadata
// recorded in the log.
func (s *Server) checkLogAccess(ctx context.Context, log *eventLog, filter Filter) error {
	if filter == nil {
		return nil
	}
	rs, err := s.runStorage()
	if err != nil {
		return err
	}
	_, err = rs.GetRun(ctx, log.threadID, log.runID, filter)
	if ErrorCode(err) != ENOTFOUND {
		return err
	}
	if _, err := rs.GetRun(ctx, log.threadID, log.runID, nil); ErrorCode(err) != ENOTFOUND {
		if err != nil {
			return err
		}
		return Errorf(ENOTFOUND, "Run %s not found.", log.runID) // there, but hidden
	}
	ok, err := matchFilter(s.rq.logs.threadMeta(log), filter)
	if err != nil {
		return err
	} else if !ok {
		return Errorf(ENOTFOUND, "Run %s not found.", log.runID)
	}
	return nil
}

// finishedOutput is the final output of a run whose log is gone: the
// thread's values, or its error. It waits (polling storage) while the run is
// still active, which happens when another process runs it, waking when
// the run's status changes (runQueue.watchRuns).
func (s *Server) finishedOutput(ctx context.Context, threadID, runID string) (json.RawMessage, error) {
	f := &follower{s: s, runID: runID}
	defer f.stop()
	for {
		_, changed := f.current()
		out, ended, err := s.runOutput(ctx, threadID, runID)
		if err != nil || ended {
			return out, err
		}
		select {
		case <-changed:
		case <-f.poll():
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-s.lifetime.Done():
			return nil, ErrServerClosed
		}
	}
}

// runOutput reads a run from storage; once it ended (or is gone) it returns
// its final output read from the thread: {"__error__": ...} for a failed
// run, else the thread's values ({} when none).
func (s *Server) runOutput(ctx context.Context, threadID, runID string) (json.RawMessage, bool, error) {
	run, th, err := s.endedRun(ctx, threadID, runID)
	if err != nil || run == nil {
		return nil, false, err
	}
	if th == nil {
		return json.RawMessage(`{}`), true, nil
	}
	if (run.Status == RunError || run.Status == RunTimeout) && len(th.Error) > 0 && string(th.Error) != "null" {
		return marshalOutput(map[string]json.RawMessage{"__error__": th.Error}), true, nil
	}
	if len(th.Values) == 0 || string(th.Values) == "null" {
		return json.RawMessage(`{}`), true, nil
	}
	return th.Values, true, nil
}

// runEnded reads a run from storage and reports whether it ended (or is
// gone), with the data of its error event when it failed.
func (s *Server) runEnded(ctx context.Context, threadID, runID string) (bool, json.RawMessage, error) {
	run, th, err := s.endedRun(ctx, threadID, runID)
	if err != nil || run == nil {
		return false, nil, err
	}
	if th != nil && (run.Status == RunError || run.Status == RunTimeout) && len(th.Error) > 0 && string(th.Error) != "null" {
		return true, th.Error, nil
	}
	return true, nil, nil
}

// endedRun returns the run and its thread once the run is no longer pending
// or running; nil, nil while it is. A run that is gone returns an empty run
// and a nil thread.
func (s *Server) endedRun(ctx context.Context, threadID, runID string) (*Run, *Thread, error) {
	rs, err := s.runStorage()
	if err != nil {
		return nil, nil, err
	}
	run, err := rs.GetRun(ctx, threadID, runID, nil)
	if ErrorCode(err) == ENOTFOUND {
		return &Run{RunID: runID}, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	if run.Status == RunPending || run.Status == RunRunning {
		return nil, nil, nil
	}
	th, err := s.storage.GetThread(ctx, run.ThreadID, nil)
	if ErrorCode(err) == ENOTFOUND {
		return run, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	return run, th, nil
}

func marshalOutput(v any) json.RawMessage {
	b, err := record.MarshalJSON(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// applyCancelled acts on the runs a cancellation touched in storage: ended
// pending runs close their logs, running ones are told to stop.
func (s *Server) applyCancelled(cancelled []driver.CancelledRun) {
	now := s.clock()
	for _, c := range cancelled {
		switch c.Status {
		case RunRunning:
			s.rq.cancelLocal(c.RunID, c.Action)
		default:
			if l := s.rq.logs.get(c.RunID); l != nil {
				l.finish(c.Status, nil, now.Add(s.rq.logTTL(l)))
			}
			s.runChanged(RunEvent{RunID: c.RunID, ThreadID: c.ThreadID, Status: c.Status, Reason: "cancelled"})
		}
	}
	if len(cancelled) > 0 {
		s.rq.signal()
		s.rq.hooks.signal() // storage queued the webhooks of the pending runs it ended
	}
}

// deleteThreads deletes threads with del, stopping their runs first: runs
// executing here are cancelled (action interrupt) before the deletion, and
// afterwards the event logs of the runs that went with the threads end, so
// that their streams, waits and joins return. Runs executing in another
// process stop at their next lease renewal, which no longer finds them.
// ids lists the threads del deletes; nil means they are not known, and
// every live log's thread is looked up after the deletion instead. A log
// whose execution is recording its run's end is left to that execution.
func (s *Server) deleteThreads(ctx context.Context, ids []string, del func() error) error {
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	for _, l := range s.rq.logs.live() {
		if gone[l.threadID] {
			s.rq.cancelLocal(l.runID, CancelInterrupt)
		}
	}
	if err := del(); err != nil {
		return err
	}
	now := s.clock()
	for _, l := range s.rq.logs.live() {
		if l.endsHere() {
			// Its execution is recording the end (which may have deleted
			// a stateless run's temporary thread): it ends the log with
			// the run's outcome, or as interrupted if the deletion came
			// first.
			continue
		}
		if ids == nil {
			_, err := s.storage.GetThread(ctx, l.threadID, nil)
			if ErrorCode(err) != ENOTFOUND {
				continue
			}
			s.rq.cancelLocal(l.runID, CancelInterrupt)
		} else if !gone[l.threadID] {
			continue
		}
		l.finish(RunInterrupted, nil, now.Add(s.rq.logTTL(l)))
	}
	return nil
}

// checkRunIDs canonicalises a thread id ("" allowed) and a run id ("" not
// checked), EINVALID when one is not a UUID.
func checkRunIDs(threadID, runID string) (string, string, error) {
	var err error
	if threadID != "" {
		if threadID, err = parseUUID("thread", threadID); err != nil {
			return "", "", err
		}
	}
	if runID != "" {
		if runID, err = parseUUID("run", runID); err != nil {
			return "", "", err
		}
	}
	return threadID, runID, nil
}

// createRun validates rc, builds the run and inserts it, returning the run
// and its (new) event log. cron, when non-nil, is the cron firing creating
// the run, claimed with its insertion.
func (s *Server) createRun(ctx context.Context, threadID string, rc *RunCreate, cron *driver.CronFiring) (*Run, *eventLog, error) {
	rs, err := s.runStorage()
	if err != nil {
		return nil, nil, err
	}
	if s.isClosed() {
		return nil, nil, ErrServerClosed
	}
	stateless := threadID == ""
	if threadID, _, err = checkRunIDs(threadID, ""); err != nil {
		return nil, nil, err
	}
	if err := s.validateRunCreate(ctx, rc, stateless); err != nil {
		return nil, nil, err
	}
	asst, err := s.runAssistant(ctx, rc.AssistantID)
	if err != nil {
		return nil, nil, err
	}
	if stateless {
		threadID = newThreadID()
	}
	runID := uuid.Must(uuid.NewV7()).String()
	filter, err := s.authFilter(ctx, "threads", "create_run", &RunRequest{ThreadID: threadID, RunID: runID, RunCreate: rc})
	if err != nil {
		return nil, nil, err
	}
	now := s.clock()
	temporary := stateless && rc.OnCompletion != OnCompletionKeep
	// The caller, in the graph's configurable (LangGraph's names; in
	// decoded-JSON form: the graph sees the same types whether its run was
	// claimed at insertion or read back from storage).
	var authUser any
	u := UserFromContext(ctx)
	if u != nil && s.auth != nil {
		if authUser, err = canonicalJSON(u.Object()); err != nil {
			return nil, nil, Errorf(EINVALID, "The user's extra fields cannot be encoded as JSON: %v", err)
		}
	}
	var webhook *string
	if rc.Webhook != "" {
		webhook = &rc.Webhook
	}
	createdAt := now.Add(time.Duration(rc.AfterSeconds * float64(time.Second))).Truncate(time.Microsecond)
	run := &Run{
		RunID:             runID,
		ThreadID:          threadID,
		AssistantID:       asst.AssistantID,
		CreatedAt:         createdAt,
		UpdatedAt:         now,
		Status:            RunPending,
		MultitaskStrategy: rc.MultitaskStrategy,
		Kwargs: RunKwargs{
			Input:           rc.Input,
			Command:         rc.Command,
			StreamMode:      rc.StreamMode,
			InterruptBefore: rc.InterruptBefore,
			InterruptAfter:  rc.InterruptAfter,
			Webhook:         webhook,
			FeedbackKeys:    rc.FeedbackKeys,
			Temporary:       temporary,
			Subgraphs:       rc.StreamSubgraphs,
			Resumable:       rc.StreamResumable,
			Durability:      rc.Durability,
		},
	}
	if len(run.Kwargs.Input) == 0 {
		run.Kwargs.Input = json.RawMessage("null")
	}
	ins := &driver.RunInsert{
		ThreadMetadata: Metadata{"graph_id": asst.GraphID, "assistant_id": asst.AssistantID},
		Cron:           cron,
		Filter:         filter,
	}
	if stateless || rc.IfNotExists == IfNotExistsCreate {
		// Inserted when the thread is missing (at once for a stateless
		// run); its config is the run's (Complete sets ThreadConfig).
		tm := Metadata{"graph_id": asst.GraphID, "assistant_id": asst.AssistantID}
		if m, ok := asObject(rc.Config["metadata"]); ok && stateless {
			maps.Copy(tm, m)
		}
		maps.Copy(tm, rc.Metadata)
		ins.CreateThread, ins.NewThread = newThread(threadID, now, tm, nil), stateless
		ins.CreateThread.Status = ThreadBusy
		ins.CreateThread.Values, ins.CreateThread.Interrupts = json.RawMessage("null"), map[string][]Interrupt{}
	}
	// The run's config and metadata merge the thread's, read in the
	// insertion's transaction (nil: the insertion creates the thread).
	var logMeta Metadata
	ins.Complete = func(thread *driver.ThreadHead) {
		var threadCfg, threadMeta Object
		if thread != nil {
			threadCfg, threadMeta = thread.Config, thread.Metadata
			logMeta = thread.Metadata.Merge(ins.ThreadMetadata)
		} else {
			logMeta = ins.CreateThread.Metadata
		}
		cfg, storedCfg, runCtx := mergeRunConfig(asst, threadCfg, rc)
		meta := Metadata{}
		maps.Copy(meta, asst.Metadata)
		maps.Copy(meta, threadMeta)
		if m, ok := asObject(rc.Config["metadata"]); ok {
			maps.Copy(meta, m)
		}
		maps.Copy(meta, rc.Metadata)
		meta["assistant_id"] = asst.AssistantID
		meta["graph_id"] = asst.GraphID

		configurable := cfg["configurable"].(Object)
		configurable["run_id"] = runID
		configurable["thread_id"] = threadID
		configurable["graph_id"] = asst.GraphID
		configurable["assistant_id"] = asst.AssistantID
		if authUser != nil {
			configurable["langgraph_auth_user"] = authUser
			configurable["langgraph_auth_user_id"] = u.Identity
			configurable["langgraph_auth_permissions"] = authUser.(map[string]any)["permissions"]
			if v, ok := configurable["user_id"]; !ok || v == nil || v == "" {
				configurable["user_id"] = u.Identity
			}
		}
		if _, ok := configurable["user_id"]; !ok {
			configurable["user_id"] = nil
		}
		cfg["metadata"] = meta
		run.Metadata, run.Kwargs.Config, run.Kwargs.Context = meta, cfg, runCtx
		ins.ThreadConfig = storedCfg
		// A run claimed at insertion starts from the thread's latest root
		// checkpoint, read in the insertion's transaction (see
		// preloadCheckpoint), unless it has no checkpointer (a temporary
		// thread) or forks from a checkpoint it names.
		from, _ := configurable["checkpoint_id"].(string)
		ins.Preload = !temporary && from == ""
	}
	var openMeta Metadata // a thread run's is known once inserted
	if stateless {
		// Its thread is new: complete the run here rather than in the
		// transaction (which SQLite runs on its single writer).
		ins.Complete(nil)
		ins.Complete, openMeta = nil, ins.CreateThread.Metadata
	}
	log := s.rq.logs.open(runID, threadID, rc.StreamResumable, openMeta)
	// The first event goes out at once; a later attempt adds its own.
	log.append("metadata", marshalOutput(map[string]any{"run_id": runID, "attempt": 1}))
	slot := rc.AfterSeconds == 0 && s.rq.acquireSlot()
	if slot {
		ins.Owner, ins.LeaseUntil = s.rq.claimToken(), now.Add(s.rq.lease)
	}
	res, err := rs.CreateRun(ctx, run, ins)
	if err != nil {
		if slot {
			s.rq.releaseSlot()
		}
		s.rq.logs.drop(runID)
		if ErrorCode(err) == ENOTFOUND && !stateless {
			err = Errorf(ENOTFOUND, "Thread or assistant not found.")
		}
		return nil, nil, err
	}
	if !stateless {
		s.rq.logs.setThreadMeta(log, logMeta)
	}
	s.runChanged(RunEvent{RunID: runID, ThreadID: threadID, AssistantID: asst.AssistantID, Status: RunPending})
	if s.rq.events != nil && !res.Claimed {
		// The run waits in the queue: store its metadata event now, as its
		// streams (here or elsewhere) read the stored log until a worker
		// runs it, and a run cancelled while pending never is.
		if err := s.rq.events.flush(ctx, log); err != nil {
			s.logger.Warn("store run events", "run_id", runID, "err", err)
		}
	}
	s.applyCancelled(res.Cancelled)
	switch {
	case res.Claimed:
		claimed := *run
		claimed.Status = RunRunning
		var pre *preloaded
		if res.Preloaded {
			pre = &preloaded{cp: res.Checkpoint}
		}
		s.rq.startClaimed(&driver.QueuedRun{Run: &claimed, Attempt: 1}, ins.Owner, pre)
	case slot:
		s.rq.releaseSlot()
		s.rq.signal()
	case rc.AfterSeconds > 0:
		s.rq.signalAt(createdAt)
	default:
		s.rq.signal()
	}
	return run, log, nil
}

// runAssistant resolves the assistant of a run: an assistant id, or a
// registered graph id standing for its system assistant.
func (s *Server) runAssistant(ctx context.Context, id string) (*Assistant, error) {
	given := id
	id, err := s.resolveAssistantID(id)
	if err != nil {
		// neither a UUID nor a graph id: no such assistant (404)
		return nil, Errorf(ENOTFOUND, "No assistant found for %q. Make sure the assistant ID is for a valid assistant or a registered graph.", given)
	}
	a, err := s.storage.GetAssistant(ctx, id, nil)
	if ErrorCode(err) == ENOTFOUND {
		return nil, Errorf(ENOTFOUND, "Assistant %s not found.", id)
	} else if err != nil {
		return nil, err
	}
	if _, ok := s.graphs[a.GraphID]; !ok {
		return nil, Errorf(ENOTFOUND, "Graph %s of assistant %s is not registered.", a.GraphID, a.AssistantID)
	}
	return a, nil
}

// excludedHeaders are x- headers never copied into configurable.
var excludedHeaders = []string{"x-api-key", "x-tenant-id", "x-service-key"}

// mergeRunConfig merges config and context as LangGraph does. It returns the
// run's config (configurable as an Object the caller completes), the config
// stored on the thread (without per-run keys) and the run's context.
func mergeRunConfig(asst *Assistant, threadCfg Object, rc *RunCreate) (cfg, stored, runCtx Object) {
	cfg = Object{}
	maps.Copy(cfg, asst.Config)
	maps.Copy(cfg, threadCfg)
	maps.Copy(cfg, rc.Config)
	configurable := Object{}
	for _, src := range []Object{asst.Config, threadCfg, rc.Config} {
		if m, ok := asObject(src["configurable"]); ok {
			maps.Copy(configurable, m)
		}
	}
	reqConfigurable, _ := asObject(rc.Config["configurable"])
	runCtx = Object{}
	maps.Copy(runCtx, asst.Context)
	maps.Copy(runCtx, rc.Context)
	// Keep configurable and context mirrored for graphs using either API.
	if len(rc.Context) > 0 {
		maps.Copy(configurable, rc.Context)
	} else if len(reqConfigurable) > 0 {
		maps.Copy(runCtx, reqConfigurable)
	}
	stored = cfg.Clone()
	delete(stored, "metadata")
	stored["configurable"] = configurable.Clone()

	for k, v := range rc.Headers {
		k = strings.ToLower(k)
		if (strings.HasPrefix(k, "x-") && !slices.Contains(excludedHeaders, k)) || k == "user-agent" {
			configurable[k] = v
		}
	}
	if rc.CheckpointID != "" {
		configurable["checkpoint_id"] = rc.CheckpointID
	}
	for k, v := range rc.Checkpoint {
		if v != nil {
			configurable[k] = v
		}
	}
	cfg["configurable"] = configurable
	return cfg, stored, runCtx
}

// validateRunCreate checks rc and fills its defaults.
func (s *Server) validateRunCreate(ctx context.Context, rc *RunCreate, stateless bool) error {
	if rc.AssistantID == "" {
		return Errorf(EINVALID, "assistant_id is required.")
	}
	rc.MultitaskStrategy = cmp.Or(rc.MultitaskStrategy, s.rq.defaultMultitask)
	if !slices.Contains(multitaskStrategies, rc.MultitaskStrategy) {
		return Errorf(EINVALID, "multitask_strategy must be one of %s.", strings.Join(multitaskStrategies, ", "))
	}
	if stateless {
		rc.IfNotExists = IfNotExistsCreate
	}
	rc.IfNotExists = cmp.Or(rc.IfNotExists, IfNotExistsReject)
	if rc.IfNotExists != IfNotExistsCreate && rc.IfNotExists != IfNotExistsReject {
		return Errorf(EINVALID, "if_not_exists must be create or reject.")
	}
	rc.OnDisconnect = cmp.Or(rc.OnDisconnect, OnDisconnectContinue)
	if rc.OnDisconnect != OnDisconnectCancel && rc.OnDisconnect != OnDisconnectContinue {
		return Errorf(EINVALID, "on_disconnect must be cancel or continue.")
	}
	rc.OnCompletion = cmp.Or(rc.OnCompletion, OnCompletionDelete)
	if rc.OnCompletion != OnCompletionDelete && rc.OnCompletion != OnCompletionKeep {
		return Errorf(EINVALID, "on_completion must be delete or keep.")
	}
	if rc.Durability == "" && rc.CheckpointDuring != nil {
		rc.Durability = DurabilityExit
		if *rc.CheckpointDuring {
			rc.Durability = DurabilityAsync
		}
	}
	rc.Durability = cmp.Or(rc.Durability, DurabilityAsync)
	if rc.Durability != DurabilitySync && rc.Durability != DurabilityAsync && rc.Durability != DurabilityExit {
		return Errorf(EINVALID, "durability must be sync, async or exit.")
	}
	if len(rc.StreamMode) == 0 {
		rc.StreamMode = StreamModes{"values"}
	}
	for _, m := range rc.StreamMode {
		if !slices.Contains(streamModesAll, m) {
			return Errorf(EINVALID, "stream_mode must list modes among %s.", strings.Join(streamModesAll, ", "))
		}
	}
	if rc.AfterSeconds < 0 || rc.AfterSeconds > maxAfterSeconds || math.IsNaN(rc.AfterSeconds) {
		return Errorf(EINVALID, "after_seconds must be between 0 and %d (one year).", maxAfterSeconds)
	}
	if rc.Command != nil && commandEmpty(rc.Command) {
		rc.Command = nil
	}
	if stateless && rc.Command != nil && len(nonNull(rc.Command.Resume)) > 0 {
		return Errorf(EBADREQUEST, "You must provide a thread_id when resuming.")
	}
	if c, ok := asObject(rc.Config["configurable"]); ok && len(c) > 0 && len(rc.Context) > 0 {
		return Errorf(EBADREQUEST, "Cannot specify both configurable and context. Prefer setting context alone. Context was introduced in LangGraph 0.6.0 and is the long term planned replacement for configurable.")
	}
	if rc.Webhook != "" {
		if err := s.rq.hooks.policy.check(ctx, rc.Webhook); err != nil {
			return err
		}
	}
	return nil
}
