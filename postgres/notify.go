package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

var _ driver.Notifier = (*DB)(nil)

// Notification channels (LISTEN/NOTIFY). Payloads are small (a run id, an
// action); whoever listens reads what it needs from the tables.
const (
	// channelRunQueued: a run became pending (created, released, swept
	// back) or a run ended (its thread's next run may start).
	channelRunQueued = "graphserver_run_queued"
	// channelRunEnded: a run ended (finished, cancelled while pending, or
	// ended by the sweep); payload the run id.
	channelRunEnded = "graphserver_run_ended"
	// channelCancel: a cancellation was recorded for a running run;
	// payload "<action> <run id>".
	channelCancel = "graphserver_run_cancel"
	// channelRunEvents: events of a run were stored; payload
	// "<run id> <thread id>".
	channelRunEvents = "graphserver_run_events"
	// channelThreadEvents: an entry of a thread's own was stored in its
	// log (a state update, a run's end); payload the thread id.
	channelThreadEvents = "graphserver_thread_events"
)

// notifyTx sends a notification when tx commits (PostgreSQL delivers the
// notifications of a transaction at its commit, once per distinct
// channel and payload).
func notifyTx(ctx context.Context, tx pgx.Tx, channel, payload string) error {
	if t, ok := tx.(*pipeTx); ok {
		t.notify(channel, payload) // with the COMMIT, no round trip of its own
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, payload); err != nil {
		return fmt.Errorf("notify %s: %w", channel, err)
	}
	return nil
}

// Listen implements driver.Notifier on a connection of its own
// (outside the pool), which it closes when it returns: LISTEN on the
// driver's channels, then each notification, from any process on the
// database, is passed to fn. It returns ctx's error when ctx ends, or the
// connection's error; the Server listens again (and looks at everything,
// as notifications may have been missed meanwhile).
func (db *DB) Listen(ctx context.Context, fn func(driver.Notification)) error {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("listen: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range []string{channelRunQueued, channelRunEnded, channelCancel, channelRunEvents, channelThreadEvents} {
		if _, err := conn.Exec(ctx, `LISTEN `+ch); err != nil {
			return fmt.Errorf("listen %s: %w", ch, err)
		}
	}
	fn(driver.Notification{Kind: graphserver.NotifyReset}) // what happened before LISTEN
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("listen: %w", err)
		}
		switch n.Channel {
		case channelRunQueued:
			fn(driver.Notification{Kind: graphserver.NotifyRunQueued, RunID: n.Payload})
		case channelRunEnded:
			fn(driver.Notification{Kind: graphserver.NotifyRunEnded, RunID: n.Payload})
		case channelRunEvents:
			runID, threadID, _ := strings.Cut(n.Payload, " ")
			fn(driver.Notification{Kind: graphserver.NotifyRunEvents, RunID: runID, ThreadID: threadID})
		case channelThreadEvents:
			fn(driver.Notification{Kind: graphserver.NotifyThreadEvents, ThreadID: n.Payload})
		case channelCancel:
			action, runID, _ := strings.Cut(n.Payload, " ")
			fn(driver.Notification{Kind: graphserver.NotifyRunCancel, RunID: runID, Action: action})
		}
	}
}
