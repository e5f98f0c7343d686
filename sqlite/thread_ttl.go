package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/graphserver/graphserver"
)

// SweepExpiredThreads applies the TTL of up to limit threads whose expiry is
// at or before now and that have no run in flight: strategy delete deletes
// them (with their checkpoints and runs), keep_latest drops all but their
// latest checkpoint and disarms the TTL until the thread is next active.
// The busy check and the change happen in one transaction, so a run created
// concurrently is never deleted with its thread.
func (db *DB) SweepExpiredThreads(ctx context.Context, now time.Time, limit int) (int, error) {
	var swept int
	err := db.write(ctx, func(tx *connTx) error {
		var rows []struct {
			ID       string `db:"thread_id"`
			Strategy string `db:"ttl_strategy"`
		}
		if err := tx.SelectContext(ctx, &rows, `SELECT thread_id, ttl_strategy FROM threads
			WHERE ttl_expires_at IS NOT NULL AND ttl_expires_at <= ? AND status <> 'busy'
			ORDER BY ttl_expires_at LIMIT ?`, formatTime(now), limit); err != nil {
			return fmt.Errorf("select expired threads: %w", err)
		}
		for _, r := range rows {
			if r.Strategy == graphserver.PruneKeepLatest {
				if err := keepLatest(ctx, tx, r.ID, db.latest); err != nil {
					return fmt.Errorf("expire thread %s: %w", r.ID, err)
				}
				if _, err := tx.ExecContext(ctx, `UPDATE threads SET ttl_expires_at = NULL WHERE thread_id = ?`, r.ID); err != nil {
					return fmt.Errorf("expire thread %s: %w", r.ID, err)
				}
			} else if _, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE thread_id = ?`, r.ID); err != nil {
				return fmt.Errorf("expire thread %s: %w", r.ID, err)
			}
			swept++
		}
		return nil
	})
	return swept, err
}
