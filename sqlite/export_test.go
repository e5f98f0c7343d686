package sqlite

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// VerifyCacheEnv is verifyCacheEnv, for the tests that count statements.
const VerifyCacheEnv = verifyCacheEnv

// ConnPragmas returns journal_mode, foreign_keys and busy_timeout of n
// distinct reader connections held at once, then of the writer connection
// (last).
func (db *DB) ConnPragmas(ctx context.Context, n int) ([][3]string, error) {
	var out [][3]string
	var conns []*sqlx.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := db.reader.Connx(ctx)
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
	}
	w, err := db.writer.Connx(ctx)
	if err != nil {
		return nil, err
	}
	conns = append(conns, w)
	for _, c := range conns {
		var p [3]string
		for i, name := range []string{"journal_mode", "foreign_keys", "busy_timeout"} {
			if err := c.QueryRowContext(ctx, "PRAGMA "+name).Scan(&p[i]); err != nil {
				return nil, fmt.Errorf("pragma %s: %w", name, err)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// Migrations lists the applied migrations as "name applied_at".
func (db *DB) Migrations(ctx context.Context) ([]string, error) {
	var rows []struct {
		Name      string `db:"name"`
		AppliedAt string `db:"applied_at"`
	}
	if err := db.reader.SelectContext(ctx, &rows, `SELECT name, applied_at FROM migrations ORDER BY name`); err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Name+" "+r.AppliedAt)
	}
	return out, nil
}

// WriteThroughReader tries a write on a reader connection.
func (db *DB) WriteThroughReader(ctx context.Context) error {
	_, err := db.reader.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES ('x', 'y')`)
	return err
}

// BlobRows lists a thread's stored blob rows as
// "ns/channel#chain.seq" (with "<-chain.seq" for a fork's link).
func (db *DB) BlobRows(ctx context.Context, threadID string) ([]string, error) {
	var out []string
	err := db.reader.SelectContext(ctx, &out, `SELECT b.checkpoint_ns || '/' || b.channel || '#' || b.chain || '.' || b.seq ||
			CASE WHEN b.link_chain IS NULL THEN '' ELSE '<-' || b.link_chain || '.' || b.link_seq END
		FROM checkpoint_blobs AS b JOIN checkpoint_threads AS t ON t.tid = b.tid
		WHERE t.thread_id = ? ORDER BY b.checkpoint_ns, b.channel, b.chain, b.seq`, threadID)
	return out, err
}

// CheckpointForms lists how a thread's root checkpoints are stored, oldest
// first: "<typeof(checkpoint_id)> <typeof(parent_checkpoint_id)> <typeof(created_at)>".
func (db *DB) CheckpointForms(ctx context.Context, threadID string) ([]string, error) {
	var out []string
	err := db.reader.SelectContext(ctx, &out, `SELECT typeof(checkpoint_id) || ' ' || typeof(parent_checkpoint_id) || ' ' || typeof(created_at)
		FROM checkpoints WHERE tid = (SELECT tid FROM checkpoint_threads WHERE thread_id = ?) AND checkpoint_ns = ''
		ORDER BY checkpoint_id`, threadID)
	return out, err
}

// WaitingTexts counts the store texts waiting to be indexed
// (store_fts_pending).
func (db *DB) WaitingTexts(ctx context.Context) (int, error) {
	var n int
	err := db.reader.GetContext(ctx, &n, `SELECT count(*) FROM store_fts_pending`)
	return n, err
}

// TraceStatements calls fn with the text of every statement the caching
// connections of every DB run, until the returned function is called.
func TraceStatements(fn func(query string)) (stop func()) {
	stmtTrace.Store(&fn)
	return func() { stmtTrace.Store(nil) }
}

// SetWALCheckpointing sets, before db's first write, after how many
// commits the background checkpointer runs and the log length (in pages)
// past which the writer checkpoints itself (walCheckpointCommits,
// walRestartFrames).
func (db *DB) SetWALCheckpointing(everyCommits int64, restartFrames int) {
	db.wal.everyCommits, db.wal.restartFrames = everyCommits, restartFrames
}

// WALCheckpoints returns how many checkpoints the background checkpointer
// has run.
func (db *DB) WALCheckpoints() int64 { return db.wal.runs.Load() }

// WALRestarts returns how many checkpoints the writer has run for the log
// to restart.
func (db *DB) WALRestarts() int64 { return db.wal.restarts.Load() }

// VerifyLatestCache turns db's latest-checkpoint cache on and compares each
// of its hits with a read of storage (a difference fails the read).
func VerifyLatestCache(db *DB) { db.latest.enabled.Store(true); db.latest.verify.Store(true) }

// LatestCacheHits is how many reads db's latest-checkpoint cache answered.
func LatestCacheHits(db *DB) int64 { return db.latest.hits.Load() }
