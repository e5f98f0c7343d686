package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Notification channels. Payloads are small (a run id); whoever listens
// reads what it needs from the tables.
const (
	// channelRunQueued: a run became pending (created, released, swept
	// back, or its thread's previous run ended), so workers claim again.
	channelRunQueued = "graphserver_run_queued"
	// channelRunEnded: a run ended (finished, cancelled while pending, or
	// ended by the sweep); payload the run id.
	channelRunEnded = "graphserver_run_ended"
	// channelCancel: a cancellation was recorded for a running run;
	// payload the run id. The process running it stops it at once.
	channelCancel = "graphserver_cancel"
)

// notifyTx sends a notification when tx commits (PostgreSQL delivers
// notifications of a transaction at its commit, and drops duplicates
// within it).
func notifyTx(ctx context.Context, tx pgx.Tx, channel, payload string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		return fmt.Errorf("notify %s: %w", channel, err)
	}
	return nil
}
