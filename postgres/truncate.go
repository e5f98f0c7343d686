package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/graphserver/graphserver"
)

// truncateStatements lists, per flag, the statements emptying its tables.
// Thread deletion cascades to runs and checkpoints.
var truncateStatements = []struct {
	on    func(graphserver.TruncateOptions) bool
	stmts []string
}{
	{func(o graphserver.TruncateOptions) bool { return o.Runs }, []string{
		`DELETE FROM webhook_outbox`,
		`DELETE FROM runs`,
	}},
	{func(o graphserver.TruncateOptions) bool { return o.Threads }, []string{
		`DELETE FROM threads`,
	}},
	{func(o graphserver.TruncateOptions) bool { return o.Checkpoints }, []string{
		`DELETE FROM checkpoint_writes_replaced`,
		`DELETE FROM checkpoint_writes`,
		`DELETE FROM checkpoints`,
		`DELETE FROM checkpoint_blobs`,
	}},
	{func(o graphserver.TruncateOptions) bool { return o.Store }, []string{
		`DELETE FROM store_items`,
	}},
}

// Truncate implements graphserver.TruncateStorage: it deletes what opts
// flags in one transaction, keeping the assistants keepAssistants matches.
func (db *DB) Truncate(ctx context.Context, opts graphserver.TruncateOptions, keepAssistants graphserver.Filter) error {
	var keep where
	if err := keep.filter("metadata", keepAssistants); err != nil {
		return err
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		if opts.Assistants {
			q := `DELETE FROM assistants`
			if len(keep.conds) > 0 {
				// A condition that is NULL (a key missing) does not keep.
				q += ` WHERE NOT coalesce((` + strings.Join(keep.conds, " AND ") + `), false)`
			}
			if _, err := exec(ctx, tx, q, keep.args...); err != nil {
				return fmt.Errorf("truncate: %w", err)
			}
		}
		for _, group := range truncateStatements {
			if !group.on(opts) {
				continue
			}
			for _, stmt := range group.stmts {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("truncate: %w", err)
				}
			}
		}
		return nil
	})
}
