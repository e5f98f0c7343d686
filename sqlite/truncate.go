package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/graphserver/graphserver/driver"
)

// truncateStatements lists, per flag, the statements emptying its tables.
// Thread deletion cascades to runs and checkpoints through foreign keys;
// store_fts and store_fts_pending rows go with their items through a
// trigger, and are cleared again here in case of orphans.
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
		// Cascades to checkpoint_metadata, checkpoints, checkpoint_blobs
		// and checkpoint_writes.
		`DELETE FROM checkpoint_threads`,
	}},
	{func(o driver.TruncateOptions) bool { return o.Store }, []string{
		`DELETE FROM store_items`,
		`DELETE FROM store_fts`,
		`DELETE FROM store_fts_pending`,
	}},
}

// Truncate implements driver.TruncateStorage: it deletes what opts
// flags in one transaction; assistants go last, but those matching
// opts.KeepAssistants.
func (db *DB) Truncate(ctx context.Context, opts driver.TruncateOptions) error {
	defer db.assistantsChanged()
	defer db.items.changed() // every item
	var keep where
	if err := keep.filter("metadata", opts.KeepAssistants); err != nil {
		return err
	}
	deleteAssistants := `DELETE FROM assistants`
	if len(keep.conds) > 0 {
		// A condition is NULL where a key is missing: such rows go.
		deleteAssistants += ` WHERE NOT coalesce((` + strings.Join(keep.conds, " AND ") + `), 0)`
	}
	return db.write(ctx, func(tx *connTx) error {
		for _, group := range truncateStatements {
			if !group.on(opts) {
				continue
			}
			for _, stmt := range group.stmts {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("truncate: %w", err)
				}
			}
		}
		if opts.Assistants {
			if _, err := tx.ExecContext(ctx, deleteAssistants, keep.args...); err != nil {
				return fmt.Errorf("truncate assistants: %w", err)
			}
		}
		return nil
	})
}
