package postgres

import (
	"context"
	"fmt"

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
	{func(o graphserver.TruncateOptions) bool { return o.Assistants }, []string{
		`DELETE FROM assistants WHERE (metadata ->> 'created_by') IS DISTINCT FROM 'system'`,
	}},
	{func(o graphserver.TruncateOptions) bool { return o.Store }, []string{
		`DELETE FROM store_items`,
	}},
}

// Truncate implements graphserver.TruncateStorage: it deletes what opts
// flags in one transaction, keeping system assistants.
func (db *DB) Truncate(ctx context.Context, opts graphserver.TruncateOptions) error {
	return db.tx(ctx, func(tx pgx.Tx) error {
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
