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
	{func(o driver.TruncateOptions) bool { return o.Store }, []string{
		`DELETE FROM store_items`,
	}},
}

// Truncate implements driver.TruncateStorage: it deletes what opts
// flags in one transaction; assistants go last, but those matching
// opts.KeepAssistants.
func (db *DB) Truncate(ctx context.Context, opts driver.TruncateOptions) error {
	var keep where
	if err := keep.filter("metadata", opts.KeepAssistants); err != nil {
		return err
	}
	deleteAssistants := `DELETE FROM assistants`
	if len(keep.conds) > 0 {
		// A condition is NULL where a key is missing: such rows go.
		deleteAssistants += ` WHERE NOT coalesce((` + keep.and() + `), false)`
	}
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
		if opts.Assistants {
			if _, err := exec(ctx, tx, deleteAssistants, keep.args...); err != nil {
				return fmt.Errorf("truncate assistants: %w", err)
			}
		}
		return nil
	})
}
