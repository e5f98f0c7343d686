package graphserver

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver/driver"
)

// Defaults of the run queue options.
const (
	WorkersDefault            = 64
	LeaseDurationDefault      = 30 * time.Second
	MaxAttemptsDefault        = 3
	MaxRunTimeDefault         = time.Hour
	ResumableStreamTTLDefault = 10 * time.Minute
	PollIntervalDefault       = time.Second
	CancelGraceDefault        = 500 * time.Millisecond
	MaxEventLogBytesDefault   = 16 << 20
)

// endedLogGrace is how long the event log of a finished run that is not
// resumable stays, so that a join racing the end still sees it.
const endedLogGrace = 5 * time.Second

// Cancellation causes of a run's context.
var (
	errCancelInterrupt = errors.New("run cancelled (interrupt)")
	errCancelRollback  = errors.New("run cancelled (rollback)")
	errLeaseLost       = errors.New("run lease lost")
	errRunTimeout      = errors.New("run exceeded the maximum run time")
)

// runQueue is the run machinery of a Server: the worker pool that claims and
// executes runs, the lease sweeper, the event logs and the webhook sender.
type runQueue struct {
	s       *Server
	storage driver.Storage

	owner            string        // this process; leases are held by claim tokens (claimToken)
	claims           atomic.Uint64 // claims made, for claim tokens
	workers          int
	lease            time.Duration
	maxAttempts      int
	maxRunTime       time.Duration
	resumableTTL     time.Duration
	pollInterval     time.Duration
	cancelGrace      time.Duration
	defaultMultitask string

	logs   logRegistry
	hooks  *webhooks
	events *eventWriter  // nil unless the storage keeps event logs (EventStorage)
	mirror *threadMirror // nil unless events is set and the storage is a Notifier and a ThreadLogStorage

	recheckMu sync.Mutex
	recheck   chan struct{} // closed when runs executing here must renew at once (recheckRuns)

	wake      chan struct{} // capacity 1: a run may be claimable
	drain     chan struct{} // closed when the server begins draining
	drainOnce sync.Once

	// queued is set by signal (a run may wait in storage) and cleared by
	// the dispatcher before each claim: a run that ends wakes the
	// dispatcher only when set or when its thread has runs left
	// (signalEnded), so that the common end (nothing queued) costs no
	// claim query.
	queued atomic.Bool

	slots chan struct{} // one token per run executing here (Options.Workers)

	// graphs owns the goroutines graphs run in (runBounded): each returns
	// before its run ends, except those of graphs a run gave up on.
	graphs sync.WaitGroup

	watcherOn atomic.Bool // watchRuns is polling storage for the followed runs

	mu        sync.Mutex
	running   map[string]context.CancelCauseFunc // runs executing here
	accepting bool                               // started and not draining
}

func newRunQueue(s *Server, opts Options) *runQueue {
	q := &runQueue{
		s:                s,
		storage:          opts.Storage,
		owner:            uuid.NewString(),
		workers:          opts.Workers,
		lease:            opts.LeaseDuration,
		maxAttempts:      opts.MaxAttempts,
		maxRunTime:       opts.MaxRunTime,
		resumableTTL:     opts.ResumableStreamTTL,
		pollInterval:     opts.PollInterval,
		cancelGrace:      opts.CancelGrace,
		defaultMultitask: opts.DefaultMultitaskStrategy,
		logs:             logRegistry{logs: map[string]*eventLog{}, hub: threadHub{resumableTTL: opts.ResumableStreamTTL}, maxSize: opts.MaxEventLogBytes},
		wake:             make(chan struct{}, 1),
		drain:            make(chan struct{}),
		running:          map[string]context.CancelCauseFunc{},
	}
	q.slots = make(chan struct{}, q.workers)
	if es, ok := opts.Storage.(driver.EventStorage); ok {
		q.events = &eventWriter{q: q, st: es}
		tl, isLog := opts.Storage.(driver.ThreadLogStorage)
		if _, ok := opts.Storage.(driver.Notifier); ok && isLog {
			q.mirror = newThreadMirror(q, tl)
			q.logs.hub.stored = true
		}
	}
	q.hooks = newWebhooks(q, opts.Webhooks)
	return q
}

// tasks lists the queue's background loops.
func (q *runQueue) tasks() []func(ctx context.Context) {
	q.mu.Lock()
	q.accepting = true
	q.mu.Unlock()
	tasks := []func(ctx context.Context){q.dispatch, q.maintain, q.hooks.loop, q.watchRuns}
	if n, ok := q.storage.(driver.Notifier); ok {
		tasks = append(tasks, func(ctx context.Context) { q.listen(ctx, n) })
	}
	if q.mirror != nil {
		tasks = append(tasks, q.mirror.loop)
	}
	return tasks
}

// beginDrain stops claiming new runs and webhooks.
func (q *runQueue) beginDrain() {
	q.mu.Lock()
	q.accepting = false
	q.mu.Unlock()
	q.drainOnce.Do(func() { close(q.drain) })
}

// acquireSlot takes a worker slot if one is free and the server runs.
func (q *runQueue) acquireSlot() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.accepting {
		return false
	}
	select {
	case q.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (q *runQueue) releaseSlot() { <-q.slots }

// startClaimed executes a run claimed at creation in the slot taken for it;
// pre is what execute takes.
func (q *runQueue) startClaimed(qr *driver.QueuedRun, token string, pre *preloaded) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.accepting {
		// The server began closing since the slot was taken: give the run
		// back to the queue for the next start.
		if err := q.storage.ReleaseRun(context.WithoutCancel(q.s.lifetime), qr.Run.RunID, token, q.s.clock()); err != nil {
			q.s.logger.Error("release run", "run_id", qr.Run.RunID, "err", err)
		} else {
			q.s.runChanged(RunEvent{RunID: qr.Run.RunID, ThreadID: qr.Run.ThreadID, AssistantID: qr.Run.AssistantID, Status: RunPending, Released: true, Reason: "server closing"})
		}
		q.releaseSlot()
		return
	}
	// Close waits for the WaitGroup only after beginDrain, which takes q.mu:
	// this Go happens before that Wait.
	q.s.wg.Go(func() {
		defer q.releaseSlot()
		q.execute(qr, token, pre)
	})
}

// claimToken returns a new lease owner token: the process's owner id and a
// claim counter. Each claim holds its own token, so that after a lapsed
// lease a stale execution of an earlier attempt can neither renew nor
// finish the run that a later claim (even of this process) holds.
func (q *runQueue) claimToken() string {
	return q.owner + "/" + strconv.FormatUint(q.claims.Add(1), 10)
}

// signal wakes the dispatcher: a run may be claimable.
func (q *runQueue) signal() {
	q.queued.Store(true)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// signalEnded wakes the dispatcher after a run ended here, if a run may be
// claimable now: its thread has runs left (left), or a run was queued
// since the dispatcher's last claim. Runs of other processes are found by
// the dispatcher's poll, as before.
func (q *runQueue) signalEnded(left bool) {
	if left || q.queued.Load() {
		q.signal()
	}
}

// signalAt wakes the dispatcher at t (for runs delayed by after_seconds).
func (q *runQueue) signalAt(t time.Time) {
	time.AfterFunc(time.Until(t)+time.Millisecond, q.signal)
}

// logTTL is how long a finished run's log stays.
func (q *runQueue) logTTL(l *eventLog) time.Duration {
	if l.resumable {
		return q.resumableTTL
	}
	return endedLogGrace
}

// cancelLocal stops a run executing in this process.
func (q *runQueue) cancelLocal(runID, action string) {
	q.mu.Lock()
	cancel := q.running[runID]
	q.mu.Unlock()
	if cancel == nil {
		return
	}
	if action == CancelRollback {
		cancel(errCancelRollback)
	} else {
		cancel(errCancelInterrupt)
	}
}

// dispatch claims runs while a worker slot is free and runs each in its own
// goroutine, until the server drains. It wakes on signal (a run was created
// or finished) and every poll interval (delayed runs, other processes).
func (q *runQueue) dispatch(ctx context.Context) {
	s := q.s
	slots := q.slots
	timer := time.NewTimer(q.pollInterval)
	defer timer.Stop()
	for {
		select {
		case slots <- struct{}{}:
		case <-q.drain:
			return
		case <-ctx.Done():
			return
		}
		select {
		case <-q.drain:
			return
		default:
		}
		// Cleared before the claim: a run queued after the claim's read
		// sets it again (signal).
		q.queued.Store(false)
		now := s.clock()
		token := q.claimToken()
		qr, err := q.storage.ClaimRun(ctx, token, now, now.Add(q.lease))
		if err != nil {
			q.queued.Store(true) // try again at the next wake
			if ctx.Err() == nil {
				s.logger.Error("claim run", "err", err)
			}
		}
		if qr != nil {
			s.wg.Go(func() {
				defer func() { <-slots }()
				q.execute(qr, token, nil)
			})
			continue
		}
		<-slots
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(q.pollInterval)
		select {
		case <-q.wake:
		case <-timer.C:
		case <-q.drain:
			return
		case <-ctx.Done():
			return
		}
	}
}

// maintain sweeps expired leases and drops expired event logs until the
// server drains.
func (q *runQueue) maintain(ctx context.Context) {
	s := q.s
	every := min(q.lease/2, time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	sweepEvery := max(q.lease/2, every)
	var lastSweep, lastPrune time.Time
	for {
		now := s.clock()
		if now.Sub(lastSweep) >= sweepEvery {
			lastSweep = now
			swept, err := sweepExpired(ctx, q.storage, now, q.maxAttempts)
			if err != nil && ctx.Err() == nil {
				s.logger.Error("sweep runs", "err", err)
			}
			q.applySwept(ctx, swept, now)
		}
		q.recover(ctx)
		q.logs.prune(now)
		if q.events != nil && now.Sub(lastPrune) >= sweepEvery {
			lastPrune = now
			if _, err := q.events.st.PruneRunEvents(ctx, now.Add(-q.resumableTTL)); err != nil && ctx.Err() == nil {
				s.logger.Error("prune stored run events", "err", err)
			}
		}
		select {
		case <-tick.C:
		case <-q.drain:
			return
		case <-ctx.Done():
			return
		}
	}
}

// recover recovers at once the runs of workers known to be gone, when the
// storage can tell (RunRecoverer): a process that crashed on the same
// SQLite file (on restart, or while this one runs beside it). Start calls
// it before the workers start, and the maintenance loop every round.
func (q *runQueue) recover(ctx context.Context) {
	now := q.s.clock()
	swept, err := recoverGone(ctx, q.storage, now, q.maxAttempts)
	if err != nil {
		if ctx.Err() == nil {
			q.s.logger.Error("recover runs of gone workers", "err", err)
		}
		return
	}
	q.applySwept(ctx, swept, now)
}

// applySwept acts on the runs a sweep or a recovery changed: observers are
// told, the state of a thread whose run was cancelled is recomputed, the
// logs of ended runs here end, and the dispatcher and webhook sender wake.
func (q *runQueue) applySwept(ctx context.Context, swept []driver.SweptRun, now time.Time) {
	s := q.s
	for _, r := range swept {
		s.runChanged(sweptEvent(r))
		if r.Status == RunInterrupted || r.Status == "" {
			// Cancelled (interrupt or rollback): the thread's state is
			// its latest remaining checkpoint, as after a normal finish.
			if err := s.resummarize(ctx, r.ThreadID); err != nil && ErrorCode(err) != ENOTFOUND && ctx.Err() == nil {
				s.logger.Error("refresh thread after sweep", "thread_id", r.ThreadID, "err", err)
			}
		}
		if l := q.logs.get(r.RunID); l != nil {
			switch r.Status {
			case RunPending:
			case RunError:
				// Out of attempts: its followers get the error, as from a
				// run that failed as it ran, though a stateless run's
				// thread, which records it, went with the run.
				l.fail(maxAttemptsError, now.Add(q.logTTL(l)))
			default:
				l.finish(r.Status, nil, now.Add(q.logTTL(l)))
			}
		}
	}
	if len(swept) > 0 {
		q.signal()
		q.hooks.signal() // the sweep queued the webhooks of the runs it ended
	}
}

// watching reports whether watchRuns polls storage for followed runs.
func (q *runQueue) watching() bool { return q.watcherOn.Load() }

// watchRuns reads, every poll interval and in one query, the status of the
// runs followed here that this process does not execute (pending, executed
// by another process), and wakes the followers of those whose status
// changed: a run starting or ending elsewhere wakes each of its followers
// once, instead of every follower querying storage every poll interval.
// A run claimed here wakes its followers at once, when its log is attached.
func (q *runQueue) watchRuns(ctx context.Context) {
	q.watcherOn.Store(true)
	defer q.watcherOn.Store(false)
	tick := time.NewTicker(q.pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-q.drain:
			return
		case <-ctx.Done():
			return
		}
		q.pollWatched(ctx)
	}
}

// pollWatched is one round of watchRuns.
func (q *runQueue) pollWatched(ctx context.Context) {
	ids := slices.DeleteFunc(q.logs.watches.ids(), func(id string) bool {
		l := q.logs.get(id)
		if l == nil {
			return false
		}
		ls := l.state()
		return ls.attached && !ls.done // executing here: its log wakes its followers
	})
	if len(ids) == 0 {
		return
	}
	statuses, err := q.runStatuses(ctx, ids)
	if err != nil {
		if ctx.Err() == nil {
			q.s.logger.Warn("read followed run statuses", "err", err)
		}
		return
	}
	q.logs.watches.observe(ids, statuses)
}

// runStatuses reads the status of runs in one query. Runs that do not exist
// are absent.
func (q *runQueue) runStatuses(ctx context.Context, ids []string) (map[string]string, error) {
	return q.storage.RunStatuses(ctx, ids)
}
