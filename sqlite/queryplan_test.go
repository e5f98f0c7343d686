package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

// TestLeaseQueriesReadTheLeaseIndex checks that the sweep's and the holder
// recovery's queries are answered from runs_lease (migration 0010, which
// replaced runs_lease_holder with it) rather than by scanning the runs
// table, which holds every run ever kept.
func TestLeaseQueriesReadTheLeaseIndex(t *testing.T) {
	db := openPlanDB(t)
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"expired":       {expiredRunsQuery, []any{"2026-01-01"}},
		"other holders": {otherHoldersQuery, []any{"h"}},
		"held runs":     {heldRunsQuery(2), []any{"a", "b"}},
	} {
		all := queryPlan(t, db, q.sql, q.args...)
		require.Regexp(t, `INDEX runs_lease\b`, all, name)
		t.Logf("%s: %s", name, all)
	}
	var holderIndexes int
	require.NoError(t, db.reader.Get(&holderIndexes, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' AND sql LIKE '%lease%'`))
	require.Equal(t, 1, holderIndexes, "one index over leases")
}

// TestThreadSearchReadsItsIndexes checks that thread search, which skips
// stateless runs' threads (migration 0011 leaves them out of the indexes),
// still reads its rows in order from the index of its sort, or finds them
// by status, instead of scanning and sorting the table.
func TestThreadSearchReadsItsIndexes(t *testing.T) {
	db := openPlanDB(t)
	for _, c := range []struct {
		search graphserver.ThreadSearch
		index  string
	}{
		{graphserver.ThreadSearch{Limit: 10}, "threads_created_at"},
		{graphserver.ThreadSearch{Limit: 10, SortBy: "updated_at", SortOrder: "asc"}, "threads_updated_at"},
		{graphserver.ThreadSearch{Limit: 10, SortBy: "state_updated_at"}, "threads_state_updated_at"},
		{graphserver.ThreadSearch{Limit: 10, Status: "busy", SortBy: "status"}, "threads_status"}, // then sorted by thread_id
	} {
		q, args, err := threadSearchQuery(&c.search)
		require.NoError(t, err)
		all := queryPlan(t, db, q, args...)
		require.Regexp(t, `INDEX `+c.index+`\b`, all, "%+v", c.search)
		if c.search.Status == "" {
			require.NotContains(t, all, "TEMP B-TREE", "%+v", c.search)
		}
	}
}

// queryPlan returns the details of q's EXPLAIN QUERY PLAN, joined by "; ".
func queryPlan(t *testing.T, db *DB, q string, args ...any) string {
	t.Helper()
	var plan []struct {
		ID, Parent, NotUsed int
		Detail              string
	}
	require.NoError(t, db.reader.Select(&plan, `EXPLAIN QUERY PLAN `+q, args...))
	var details []string
	for _, p := range plan {
		details = append(details, p.Detail)
	}
	return strings.Join(details, "; ")
}

// TestActiveRunQueriesSeekTheirIndex checks that the statements of every
// thread run that look for the thread's active runs (its creation's
// threadHead, its end's EndHeldRun, ActiveRuns) seek runs_active_thread
// by thread, without the ephemeral table SQLite fills, at each execution,
// with the values of an IN list it seeks an index by (migration 0012).
func TestActiveRunQueriesSeekTheirIndex(t *testing.T) {
	db := openPlanDB(t)
	for name, q := range map[string]struct {
		sql       string
		args      []any
		ephemeral int // RETURNING collects its rows in one
	}{
		"thread head": {threadHeadQuery + " WHERE t.thread_id = ?", []any{"t"}, 0},
		"active runs": {activeRunsQuery, []any{"t"}, 0},
		"end":         {endHeldRunQuery, []any{"success", "2026-01-01", "r", "o"}, 1},
	} {
		all := queryPlan(t, db, q.sql, q.args...)
		require.Regexp(t, `INDEX runs_active_thread \(thread_id=\?\)`, all, name)
		require.Equal(t, q.ephemeral, strings.Count(opcodes(t, db, q.sql, q.args...), "OpenEphemeral"), name)
	}
}

// openPlanDB opens a new file whose statements' plans a test reads.
func openPlanDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "gs.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// opcodes returns the opcodes of q's bytecode (EXPLAIN), joined by " ".
func opcodes(t *testing.T, db *DB, q string, args ...any) string {
	t.Helper()
	var prog []struct {
		Addr, P1, P2, P3, P4, P5, Comment any
		Opcode                            string
	}
	require.NoError(t, db.reader.Select(&prog, `EXPLAIN `+q, args...))
	require.NotEmpty(t, prog)
	ops := make([]string, len(prog))
	for i, p := range prog {
		ops[i] = p.Opcode
	}
	return strings.Join(ops, " ")
}
