package graphserver

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphserver/graphserver/driver"
)

// Options configures a Server. The zero value of every field but Storage is
// useful; defaults are applied by New and documented per field.
type Options struct {
	// Storage is the persistence driver (required). The Server does not close
	// it: whoever opened it closes it, after Server.Close.
	Storage driver.Storage

	// Graphs maps graph ids to graphs. Each gets a system assistant with id
	// SystemAssistantID(graph_id). New copies the map.
	Graphs map[string]Graph

	// GraphConfigs seeds the config and context of system assistants, by
	// graph id, in the shape of LangGraph's LANGGRAPH_CONFIG:
	// {"configurable": {...}} becomes the assistant's config, and a
	// "context" key its context. It applies when Start creates a system
	// assistant; existing ones are left as they are. New copies the map.
	GraphConfigs map[string]Object

	// Logger receives the server's logs. Default: slog.Default().
	Logger *slog.Logger

	// Now returns the current time. Default: time.Now. Tests inject a clock.
	Now func() time.Time

	// Embedder embeds the indexed fields of store items so that query
	// searches rank by cosine similarity. Default: nil, and query searches
	// rank by SQLite full-text relevance.
	Embedder Embedder
	// StoreIndexFields are the JSON paths of an item's value indexed when a
	// put gives no index. Default: ["$"], the whole value. New copies it.
	StoreIndexFields []string
	// StoreDefaultTTL is the TTL of items put without one. Default: 0, no
	// expiry.
	StoreDefaultTTL time.Duration
	// StoreSweepInterval is how often Start's sweeper deletes expired items
	// (they are invisible as soon as they expire) and applies the TTL of
	// expired threads (see SweepThreads). Default:
	// StoreSweepIntervalDefault (one minute).
	StoreSweepInterval time.Duration

	// CronInterval is how often Start's scheduler fires the crons that are
	// due (see FireDueCrons). Default: CronIntervalDefault (one second);
	// negative disables the scheduler (FireDueCrons still works).
	CronInterval time.Duration

	// OptimizeInterval is how often a Storage that implements Optimizer is
	// asked to optimize itself (SQLite: refresh planner statistics, truncate
	// the WAL). Default: OptimizeIntervalDefault (one hour); negative
	// disables it.
	OptimizeInterval time.Duration

	// Workers bounds the runs executed at once. Runs mostly wait on I/O, so
	// the default is generous: WorkersDefault (64).
	Workers int
	// LeaseDuration is how long a claimed run stays reserved without a lease
	// renewal; a run whose worker died is recovered after it. Default
	// LeaseDurationDefault (30 s).
	LeaseDuration time.Duration
	// MaxAttempts is how many times a run is started before a lapsed lease
	// ends it with status error. Default MaxAttemptsDefault (3).
	MaxAttempts int
	// MaxRunTime ends a run running longer with status timeout. Default
	// MaxRunTimeDefault (one hour).
	MaxRunTime time.Duration
	// CancelGrace is how long a run whose context ended (cancelled,
	// rolled back, timed out, lease lost, server closing) waits for its
	// graph to return before giving up on it: the run then ends at once
	// (interrupted, deleted or released), and the checkpoint writes its
	// graph makes afterwards are discarded. A graph that honours its
	// context returns well within it. Default CancelGraceDefault (500 ms).
	CancelGrace time.Duration
	// MaxEventLogBytes bounds the memory of one run's event log, the events
	// kept for its streams, joins and Last-Event-ID resumes. Past it, the
	// oldest events are dropped, and a stream that needs one of them (a
	// join from the start, a resume from an old id, a reader that fell far
	// behind) fails with ErrEventsDropped (503 over HTTP) instead of
	// skipping it. Default MaxEventLogBytesDefault (16 MiB); -1 keeps
	// every event.
	MaxEventLogBytes int64
	// ResumableStreamTTL is how long the event log of a stream_resumable run
	// stays replayable after the run ends. Default
	// ResumableStreamTTLDefault (10 minutes).
	ResumableStreamTTL time.Duration
	// PollInterval is how often idle workers look for delayed runs and runs
	// created by other processes (runs created here wake them at once).
	// Default PollIntervalDefault (1 s).
	PollInterval time.Duration
	// DefaultMultitaskStrategy applies to runs that give none. Default
	// MultitaskEnqueue.
	DefaultMultitaskStrategy string
	// Webhooks configures webhook delivery; without a Sender, runs asking
	// for a webhook are refused.
	Webhooks WebhookOptions

	// Auth is the access control: who the caller is (httpapi asks it once
	// per request) and what each caller may see and do, enforced on every
	// Server method. Default nil: everything is allowed, and no credentials
	// are asked.
	Auth *Auth
}

// Server hosts graphs and implements every operation of the API as a Go
// method. It is safe for concurrent use. Create one with New, start its
// background work with Start, stop it with Close.
type Server struct {
	storage driver.Storage
	graphs  map[string]Graph
	seeds   map[string]Object
	logger  *slog.Logger
	now     func() time.Time
	itemCfg itemConfig
	rq      *runQueue
	auth    *Auth // nil: everything allowed

	optimizeInterval time.Duration // <= 0: never
	cronInterval     time.Duration // <= 0: never

	// lifetime is cancelled (with a cause) when Close gives up waiting; work
	// started by the server derives from it, not from request contexts.
	lifetime context.Context
	stop     context.CancelCauseFunc

	observers   observers    // AddObserver
	subscribers atomic.Int64 // RunStream consumers (Stats)

	mu      sync.Mutex
	started bool
	closed  bool
	wg      sync.WaitGroup // background goroutines started by Start
}

// New validates opts and returns a Server. It starts no goroutines and does
// no I/O: CRUD methods work at once; runs wait until Start.
func New(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	lifetime, stop := context.WithCancelCause(context.Background())
	s := &Server{
		storage:  opts.Storage,
		graphs:   opts.Graphs,
		seeds:    opts.GraphConfigs,
		logger:   opts.Logger,
		now:      opts.Now,
		itemCfg:  newItemConfig(opts),
		auth:     opts.Auth,
		lifetime: lifetime,

		optimizeInterval: opts.OptimizeInterval,
		cronInterval:     opts.CronInterval,
		stop:             stop,
	}
	s.rq = newRunQueue(s, opts)
	return s, nil
}

// clock returns the current time in UTC, truncated to microseconds so that
// values survive a round trip through storage unchanged.
func (s *Server) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// ErrServerClosed is the cause given to work cancelled because the Server is
// closing; such work gives up its lease instead of being marked failed.
var ErrServerClosed = Errorf(EUNAVAILABLE, "The server is shutting down.")

// Start checks the storage, creates the system assistants of the registered
// graphs, and starts the background work (workers, sweeps, schedulers). It
// returns the first error synchronously. Background work runs until Close.
// Calling Start twice, or after Close, returns an error.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrServerClosed
	} else if s.started {
		return Errorf(ECONFLICT, "The server is already started.")
	}
	if err := s.storage.Ping(ctx); err != nil {
		return err
	}
	if err := s.ensureSystemAssistants(ctx); err != nil {
		return err
	}
	if s.rq.storage != nil {
		// Runs a crashed process left running go back to the queue before
		// the workers start, instead of after their leases expire.
		s.rq.recover(ctx)
	}
	for _, run := range s.backgroundTasks() {
		s.wg.Go(func() { s.supervise(s.lifetime, run) })
	}
	s.started = true
	return nil
}

// Close stops background work. It waits for work in flight until ctx ends,
// then cancels what is left with ErrServerClosed, waits for it to return, and
// returns ctx.Err(). It is idempotent and safe to call without Start. After
// Close, methods that start work return EUNAVAILABLE. It does not close the
// Storage.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()

	s.beginDrain()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.stop(ErrServerClosed)
	case <-ctx.Done():
		s.stop(ErrServerClosed)
		<-done
	}
	// Graphs a run gave up on (they ignored their cancellation) may still
	// be running: wait for them while ctx lasts.
	graphsDone := make(chan struct{})
	go func() { s.rq.graphs.Wait(); close(graphsDone) }()
	select {
	case <-graphsDone:
		return ctx.Err()
	case <-ctx.Done():
		s.logger.Warn("closing with graphs that ignore their cancellation still running")
		return ctx.Err()
	}
}

// isClosed reports whether Close has been called.
func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// backgroundTasks lists the loops Start runs; each returns when ctx ends or
// when the server begins draining.
func (s *Server) backgroundTasks() []func(ctx context.Context) {
	var tasks []func(ctx context.Context)
	tasks = append(tasks, s.rq.tasks()...)
	tasks = append(tasks, s.sweepItems)
	if s.cronInterval > 0 {
		tasks = append(tasks, s.scheduleCrons)
	}
	if o, ok := s.storage.(driver.Optimizer); ok && s.optimizeInterval > 0 {
		tasks = append(tasks, func(ctx context.Context) { s.optimizeStorage(ctx, o) })
	}
	return tasks
}

// restartDelay is how long a background loop that panicked waits before it
// runs again.
const restartDelay = time.Second

// supervise runs the background loop run until it returns normally. A panic
// in it is logged with its stack, and the loop starts again after
// restartDelay, unless the server is stopping: no background goroutine can
// take the process down, and none stays dead.
func (s *Server) supervise(ctx context.Context, run func(ctx context.Context)) {
	for {
		if !s.recovered("background task", func() { run(ctx) }) {
			return
		}
		t := time.NewTimer(restartDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.rq.drain:
			t.Stop()
			return
		}
	}
}

// recovered calls fn and reports whether it panicked; the panic is logged
// with its stack, never re-raised.
func (s *Server) recovered(what string, fn func(), attrs ...any) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			panicked = true
			s.logger.Error(what+" panicked", append(attrs, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))...)
		}
	}()
	fn()
	return false
}

// beginDrain tells background loops to stop taking new work.
func (s *Server) beginDrain() {
	s.itemCfg.beginDrain()
	s.rq.beginDrain()
}

// OptimizeIntervalDefault is the default Options.OptimizeInterval.
const OptimizeIntervalDefault = time.Hour

// optimizeStorage calls o.Optimize every optimizeInterval.
func (s *Server) optimizeStorage(ctx context.Context, o driver.Optimizer) {
	s.every(ctx, s.optimizeInterval, func(ctx context.Context) {
		if err := o.Optimize(ctx); err != nil && ctx.Err() == nil {
			s.logger.Error("optimize storage", "err", err)
		}
	})
}

// every calls fn every interval until ctx ends or the server begins
// draining; it is the loop of the periodic maintenance tasks.
func (s *Server) every(ctx context.Context, interval time.Duration, fn func(ctx context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.itemCfg.drain:
			return
		case <-t.C:
		}
		fn(ctx)
	}
}
