package postgres

import (
	"context"
	"fmt"

	"github.com/graphserver/graphserver/driver"
	"github.com/jackc/pgx/v5"
)

// truncateStatements lists, per flag, the statements emptying its tables.
// Thread deletion cascades to runs and checkpoints.
var truncateStatements = []struct {
	on    func(driver.TruncateOptions) bool
	stmts []string
}{
	{func(o driver.TruncateOptions) bool { return o.Runs }, []string{
		`DELETE FROM webhook_outbox`,
		`DELETE FROM runs`,
	}},
	{func(o driver.TruncateOptions) bool { return o.Threads }, []string{
		`DELETE FROM threads`,
	}},
	{func(o driver.TruncateOptions) bool { return o.Checkpoints }, []string{
		`DELETE FROM checkpoint_writes_replaced`,
		`DELETE FROM checkpoint_writes`,
		`DELETE FROM checkpoints`,
		`DELETE FROM checkpoint_blobs`,
	}},
	{func(o driver.TruncateOptions) bool { return o.Assistants }, []string{
		`DELETE FROM assistants WHERE (metadata ->> 'created_by') IS DISTINCT FROM 'system'`,
	}},
	{func(o driver.TruncateOptions) bool { return o.Store }, []string{
		`DELETE FROM store_items`,
	}},
}

// Truncate implements driver.TruncateStorage: it deletes what opts
// flags in one transaction, keeping system assistants.
func (db *DB) Truncate(ctx context.Context, opts driver.TruncateOptions) error {
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
