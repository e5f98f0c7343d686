package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/graphserver/graphserver/driver"
)

// webhookRow is a webhook_outbox row.
type webhookRow struct {
	ID       string `db:"id"`
	RunID    string `db:"run_id"`
	URL      string `db:"url"`
	Body     string `db:"body"`
	Attempts int    `db:"attempts"`
	NextAt   string `db:"next_at"`
}

// ClaimWebhooks implements driver.RunStorage.
func (db *DB) ClaimWebhooks(ctx context.Context, now, leaseUntil time.Time, limit int) ([]*driver.WebhookDelivery, error) {
	var rows []webhookRow
	err := db.write(ctx, func(tx *connTx) error {
		return tx.SelectContext(ctx, &rows, `UPDATE webhook_outbox SET next_at = ?
			WHERE id IN (SELECT id FROM webhook_outbox WHERE next_at <= ? ORDER BY next_at LIMIT ?)
			RETURNING id, run_id, url, body, attempts, next_at`, formatTime(leaseUntil), formatTime(now), limit)
	})
	if err != nil {
		return nil, fmt.Errorf("claim webhooks: %w", err)
	}
	out := make([]*driver.WebhookDelivery, 0, len(rows))
	for _, r := range rows {
		next, err := parseTime(r.NextAt)
		if err != nil {
			return nil, err
		}
		out = append(out, &driver.WebhookDelivery{ID: r.ID, RunID: r.RunID, URL: r.URL, Body: json.RawMessage(r.Body),
			Attempts: r.Attempts, NextAt: next})
	}
	return out, nil
}

// EnqueueWebhook implements driver.RunStorage.
func (db *DB) EnqueueWebhook(ctx context.Context, d *driver.WebhookDelivery) error {
	return db.write(ctx, func(tx *connTx) error {
		return insertWebhook(ctx, tx, d, d.NextAt)
	})
}

// UpdateWebhook implements driver.RunStorage.
func (db *DB) UpdateWebhook(ctx context.Context, id string, attempts int, done bool, next time.Time, lastError string) error {
	return db.write(ctx, func(tx *connTx) error {
		if done {
			_, err := tx.ExecContext(ctx, `DELETE FROM webhook_outbox WHERE id = ?`, id)
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE webhook_outbox SET attempts = ?, next_at = ?, last_error = ? WHERE id = ?`,
			attempts, formatTime(next), sql.NullString{String: lastError, Valid: lastError != ""}, id)
		return err
	})
}
