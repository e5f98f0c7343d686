package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

var _ driver.EventStorage = (*DB)(nil)

// AppendRunEvents implements driver.EventStorage: the events are
// inserted in one statement (an event already stored at its position is
// kept) and the run's streams on every process are notified.
func (db *DB) AppendRunEvents(ctx context.Context, runID string, events []graphserver.StreamEvent) error {
	if len(events) == 0 {
		return nil
	}
	seqs, names, datas := make([]int, len(events)), make([]string, len(events)), make([]string, len(events))
	for i, ev := range events {
		n, err := strconv.Atoi(ev.ID)
		if err != nil || n < 0 {
			return graphserver.Errorf(graphserver.EINVALID, "The event id %q is not a position.", ev.ID)
		}
		seqs[i], names[i], datas[i] = n, ev.Event, string(ev.Data)
	}
	// One statement, one round trip: the notification goes with the
	// insert's commit. It names the run's thread, for the thread streams.
	if _, err := db.pool.Exec(ctx, `WITH ins AS (INSERT INTO run_events (run_id, seq, event, data)
			SELECT $1, e.seq, e.event, e.data FROM unnest($2::int[], $3::text[], $4::text[]) AS e (seq, event, data)
			ON CONFLICT (run_id, seq) DO NOTHING)
		SELECT pg_notify($5, $1 || ' ' || coalesce((SELECT thread_id FROM runs WHERE run_id = $1), ''))`, runID, seqs, names, datas, channelRunEvents); err != nil {
		return translate(fmt.Errorf("store run events: %w", err))
	}
	return nil
}

// RunEvents implements driver.EventStorage.
func (db *DB) RunEvents(ctx context.Context, runID string, from, limit int) ([]graphserver.StreamEvent, error) {
	rows, err := db.pool.Query(ctx, `SELECT seq, event, data FROM run_events
		WHERE run_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`, runID, max(from, 0), max(limit, 1))
	if err != nil {
		return nil, translate(fmt.Errorf("read run events: %w", err))
	}
	defer rows.Close()
	var out []graphserver.StreamEvent
	for rows.Next() {
		var seq int
		var event, data string
		if err := rows.Scan(&seq, &event, &data); err != nil {
			return nil, fmt.Errorf("read run events: %w", err)
		}
		out = append(out, graphserver.StreamEvent{ID: strconv.Itoa(seq), Event: event, Data: []byte(data)})
	}
	if err := rows.Err(); err != nil {
		return nil, translate(fmt.Errorf("read run events: %w", err))
	}
	return out, nil
}

// CountRunEvents implements driver.EventStorage.
func (db *DB) CountRunEvents(ctx context.Context, runID string) (int, error) {
	n, err := scalar[int](ctx, db.pool, `SELECT coalesce(max(seq) + 1, 0) FROM run_events WHERE run_id = ?`, runID)
	if err != nil {
		return 0, translate(fmt.Errorf("count run events: %w", err))
	}
	return n, nil
}

// PruneRunEvents implements driver.EventStorage.
func (db *DB) PruneRunEvents(ctx context.Context, endedBefore time.Time) (int, error) {
	n, err := exec(ctx, db.pool, `DELETE FROM run_events AS e WHERE NOT EXISTS (SELECT 1 FROM runs AS r
		WHERE r.run_id = e.run_id AND (r.status IN ('pending', 'running') OR r.updated_at >= ?))`, endedBefore)
	if err != nil {
		return 0, translate(fmt.Errorf("prune run events: %w", err))
	}
	return int(n), nil
}
