package sqlite

import (
	"context"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

// A WAL checkpoint copies the pages of the write-ahead log back into the
// database file, and syncs both files. SQLite runs one by default on the
// connection whose commit takes the log past 1,000 pages
// (wal_autocheckpoint): here that is the one writer connection, so the
// copy and its two fsyncs stall every write queued behind it, about a
// tenth of the writer's time under a steady load of runs. The writer's
// automatic checkpoints are therefore off, and a walCheckpointer copies
// the log on a connection of its own while the writer goes on.
//
// A checkpoint beside a writer cannot restart the log, though: SQLite
// writes from the start of the log again only when a write transaction
// begins with every page of it copied and no reader on an older snapshot,
// which under a steady load does not happen between two grouped commits.
// So when the log has grown past walRestartFrames, the writer checkpoints
// once itself, between two groups, copying what the background has not yet
// (little, normally), and its next write restarts the log. The log's file
// stays near walRestartFrames pages.
//
// Durability is unchanged: a commit is in the log before it is answered,
// and a checkpoint only copies committed pages.
const (
	// walCheckpointCommits is how many writer commits make the background
	// checkpointer run.
	walCheckpointCommits = 32
	// walRestartFrames is the log length (in pages) past which the writer
	// checkpoints itself so that the log restarts: 16 MiB of 4 KiB pages.
	walRestartFrames = 4096
)

// walCheckpointer runs PASSIVE checkpoints in the background
// (walCheckpointLoop). Its goroutine is owned by the DB: started by Open,
// stopped by Close.
type walCheckpointer struct {
	// everyCommits and restartFrames are walCheckpointCommits and
	// walRestartFrames (tests set others before the DB's first write).
	everyCommits  int64
	restartFrames int

	conn       *sqlx.DB      // one connection of its own
	commits    atomic.Int64  // writer commits since the loop was last poked
	poke       chan struct{} // capacity 1: commits to copy
	restartDue atomic.Bool   // the log is past walRestartFrames
	runs       atomic.Int64  // background checkpoints run (tests)
	restarts   atomic.Int64  // the writer's checkpoints (tests)
	stop, done chan struct{}
}

// newWALCheckpointer returns a checkpointer that counts commits; Open gives
// it its connection and starts its loop once the file is migrated.
func newWALCheckpointer() *walCheckpointer {
	return &walCheckpointer{everyCommits: walCheckpointCommits, restartFrames: walRestartFrames, poke: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// walResult is the row of PRAGMA wal_checkpoint: busy is 1 when the
// checkpoint could not run to completion (another checkpoint or a reader
// in the way), log the log's length in pages, copied how many of them are
// in the database file now.
type walResult struct {
	Busy   int `db:"busy"`
	Log    int `db:"log"`
	Copied int `db:"checkpointed"`
}

// committed notes a commit of the writer connection: every
// walCheckpointCommits commits, the background checkpointer is poked.
func (c *walCheckpointer) committed() {
	if c.commits.Add(1) >= c.everyCommits {
		c.commits.Store(0)
		select {
		case c.poke <- struct{}{}:
		default:
		}
	}
}

// restartLog checkpoints on the writer connection when the log is due to
// restart (restartDue). The group loop calls it between two groups, when
// the writer holds no transaction, so that the checkpoint can copy the
// whole log and the next write start it over. PASSIVE, as SQLite's own
// automatic checkpoint: the writer never waits, neither for readers of
// older snapshots (the checkpoint copies what they allow) nor for a
// checkpoint in progress in another process (busy=1). Only the background
// sets restartDue, after its checkpoint, and it runs none while restartDue
// is set, so it is never in the way. Until the whole log is copied, the
// writer tries again after every group; a try that finds nothing it may
// copy (a reader holds the rest) costs no write and no fsync.
func (db *DB) restartLog() {
	c := db.wal
	if !c.restartDue.Load() {
		return
	}
	var r walResult
	if err := db.writer.GetContext(context.Background(), &r, `PRAGMA wal_checkpoint(PASSIVE)`); err == nil && r.Busy == 0 && r.Copied == r.Log {
		c.restartDue.Store(false)
		c.restarts.Add(1)
	}
}

// walCheckpointLoop copies the log when poked, until Close.
func (db *DB) walCheckpointLoop() {
	c := db.wal
	defer close(c.done)
	for {
		select {
		case <-c.poke:
		case <-c.stop:
			return
		}
		if c.restartDue.Load() {
			// The writer's checkpoint is next: leave it the lock (a
			// checkpoint in progress makes another give up at once).
			continue
		}
		var r walResult
		if err := c.conn.GetContext(context.Background(), &r, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
			// The writer's own checkpoint keeps the log bounded meanwhile
			// (or fails alike, and the writes with it).
			c.restartDue.Store(true)
			continue
		}
		c.runs.Add(1)
		if r.Log >= c.restartFrames {
			c.restartDue.Store(true)
		}
	}
}
