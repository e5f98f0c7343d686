package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

var (
	_ driver.EventStorage     = (*DB)(nil)
	_ driver.ThreadLogStorage = (*DB)(nil)
)

// AppendRunEvents implements driver.EventStorage: the events are
// inserted in one statement (an event already stored at its position is
// kept) and the run's streams on every process are notified. The events
// take the next numbers of their thread's log (driver.ThreadLogStorage):
// the counter's row stays locked until the statement commits, so the
// thread's entries become visible in the order of their numbers. (An
// event already stored spends a number: the log's numbers may have gaps.)
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
	if _, err := db.pool.Exec(ctx, `WITH c AS (INSERT INTO thread_seqs AS s (thread_id, last)
			SELECT thread_id, $6 FROM runs WHERE run_id = $1
			ON CONFLICT (thread_id) DO UPDATE SET last = s.last + $6 RETURNING thread_id, last),
		ins AS (INSERT INTO run_events (run_id, seq, event, data, thread_id, tseq)
			SELECT $1, e.seq, e.event, e.data, c.thread_id, c.last - $6 + e.ord
			FROM unnest($2::int[], $3::text[], $4::text[]) WITH ORDINALITY AS e (seq, event, data, ord) LEFT JOIN c ON true
			ON CONFLICT (run_id, seq) DO NOTHING)
		SELECT pg_notify($5, $1 || ' ' || coalesce((SELECT thread_id FROM c), ''))`, runID, seqs, names, datas, channelRunEvents, int64(len(events))); err != nil {
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

// PruneRunEvents implements driver.EventStorage, in one statement. The
// entries of the threads' own logs go too: a run's end with its run's
// events (by the same rule, so that a run read back is never left open),
// a state update stored before endedBefore, and the entries and counters
// of threads that are gone.
func (db *DB) PruneRunEvents(ctx context.Context, endedBefore time.Time) (int, error) {
	n, err := scalar[int](ctx, db.pool, `WITH re AS (DELETE FROM run_events AS e WHERE NOT EXISTS (SELECT 1 FROM runs AS r
			WHERE r.run_id = e.run_id AND (r.status IN ('pending', 'running') OR r.updated_at >= $1)) RETURNING 1),
		te AS (DELETE FROM thread_events AS e WHERE NOT EXISTS (SELECT 1 FROM threads AS t WHERE t.thread_id = e.thread_id)
			OR CASE WHEN e.run_id IS NULL THEN e.created_at < $1
				ELSE NOT EXISTS (SELECT 1 FROM runs AS r WHERE r.run_id = e.run_id AND (r.status IN ('pending', 'running') OR r.updated_at >= $1)) END
			RETURNING 1),
		ts AS (DELETE FROM thread_seqs AS s WHERE NOT EXISTS (SELECT 1 FROM threads AS t WHERE t.thread_id = s.thread_id))
		SELECT (SELECT count(*) FROM re) + (SELECT count(*) FROM te)`, endedBefore)
	if err != nil {
		return 0, translate(fmt.Errorf("prune run events: %w", err))
	}
	return n, nil
}

// AppendThreadEvent implements driver.ThreadLogStorage in one statement,
// notification included.
func (db *DB) AppendThreadEvent(ctx context.Context, threadID, event string, data json.RawMessage) error {
	if _, err := db.pool.Exec(ctx, `WITH c AS (INSERT INTO thread_seqs AS s (thread_id, last) VALUES ($1, 1)
			ON CONFLICT (thread_id) DO UPDATE SET last = s.last + 1 RETURNING last),
		ins AS (INSERT INTO thread_events (thread_id, seq, event, data) SELECT $1, last, $2, $3 FROM c)
		SELECT pg_notify($4, $1)`, threadID, event, string(data), channelThreadEvents); err != nil {
		return translate(fmt.Errorf("store thread event: %w", err))
	}
	return nil
}

// recordRunEnd records the end of run runID in its thread's log
// (driver.ThreadLogStorage) when tx commits, with no round trip of its
// own in a pipelined transaction, and notifies the thread's streams.
// status is the run's final status, "" when the run is deleted.
func recordRunEnd(ctx context.Context, tx pgx.Tx, threadID, runID, status string) error {
	data, _ := json.Marshal(status)
	const query = `WITH c AS (INSERT INTO thread_seqs AS s (thread_id, last) VALUES ($1, 1)
			ON CONFLICT (thread_id) DO UPDATE SET last = s.last + 1 RETURNING last)
		INSERT INTO thread_events (thread_id, seq, run_id, event, data) SELECT $1, last, $2, $3, $4 FROM c`
	args := []any{threadID, runID, driver.RunDoneEvent, string(data)}
	if t, ok := tx.(*pipeTx); ok {
		t.deferExec(query, args...)
	} else if _, err := tx.Exec(ctx, query, args...); err != nil {
		return fmt.Errorf("record end of run %s: %w", runID, err)
	}
	return notifyTx(ctx, tx, channelThreadEvents, threadID)
}

// ThreadLog implements driver.ThreadLogStorage: the thread's run events
// and its own entries, merged by number.
func (db *DB) ThreadLog(ctx context.Context, threadID string, after int64, limit int) ([]driver.ThreadLogEntry, error) {
	rows, err := db.pool.Query(ctx, `SELECT seq, run_id, pos, event, data FROM (
			SELECT tseq AS seq, run_id, seq AS pos, event, data FROM run_events WHERE thread_id = $1 AND tseq > $2
			UNION ALL
			SELECT seq, coalesce(run_id, ''), -1, event, data FROM thread_events WHERE thread_id = $1 AND seq > $2
		) AS l ORDER BY seq LIMIT $3`, threadID, after, max(limit, 1))
	if err != nil {
		return nil, translate(fmt.Errorf("read thread log: %w", err))
	}
	defer rows.Close()
	var out []driver.ThreadLogEntry
	for rows.Next() {
		var e driver.ThreadLogEntry
		var data string
		if err := rows.Scan(&e.Seq, &e.RunID, &e.Pos, &e.Event, &data); err != nil {
			return nil, fmt.Errorf("read thread log: %w", err)
		}
		e.Data = json.RawMessage(data)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(fmt.Errorf("read thread log: %w", err))
	}
	return out, nil
}

// LastThreadSeq implements driver.ThreadLogStorage.
func (db *DB) LastThreadSeq(ctx context.Context, threadID string) (int64, error) {
	n, err := scalar[int64](ctx, db.pool, `SELECT coalesce((SELECT last FROM thread_seqs WHERE thread_id = ?), 0)`, threadID)
	if err != nil {
		return 0, translate(fmt.Errorf("read thread log: %w", err))
	}
	return n, nil
}
