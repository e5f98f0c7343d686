package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/graphserver/graphserver/driver"
)

// webhookRow is a webhook_outbox row.
type webhookRow struct {
	ID       string    `db:"id"`
	RunID    string    `db:"run_id"`
	URL      string    `db:"url"`
	Body     string    `db:"body"`
	Attempts int       `db:"attempts"`
	NextAt   time.Time `db:"next_at"`
}

// ClaimWebhooks implements driver.RunStorage. Deliveries another
// process is claiming are skipped.
func (db *DB) ClaimWebhooks(ctx context.Context, now, leaseUntil time.Time, limit int) ([]*driver.WebhookDelivery, error) {
	rows, err := selectRows[webhookRow](ctx, db.pool, `UPDATE webhook_outbox SET next_at = ?
		WHERE id IN (SELECT id FROM webhook_outbox WHERE next_at <= ? ORDER BY next_at LIMIT ? FOR UPDATE SKIP LOCKED)
		RETURNING id, run_id, url, body, attempts, next_at`, leaseUntil, now, limit)
	if err != nil {
		return nil, translate(fmt.Errorf("claim webhooks: %w", err))
	}
	out := make([]*driver.WebhookDelivery, 0, len(rows))
	for _, r := range rows {
		out = append(out, &driver.WebhookDelivery{ID: r.ID, RunID: r.RunID, URL: r.URL, Body: json.RawMessage(r.Body),
			Attempts: r.Attempts, NextAt: utc(r.NextAt)})
	}
	return out, nil
}

// EnqueueWebhook implements driver.RunStorage.
func (db *DB) EnqueueWebhook(ctx context.Context, d *driver.WebhookDelivery) error {
	if _, err := exec(ctx, db.pool, `INSERT INTO webhook_outbox (id, run_id, url, body, attempts, next_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		d.ID, d.RunID, d.URL, string(d.Body), d.Attempts, d.NextAt, d.NextAt); err != nil {
		return translate(fmt.Errorf("queue webhook: %w", err))
	}
	return nil
}

// UpdateWebhook implements driver.RunStorage.
func (db *DB) UpdateWebhook(ctx context.Context, id string, attempts int, done bool, next time.Time, lastError string) error {
	var err error
	if done {
		_, err = exec(ctx, db.pool, `DELETE FROM webhook_outbox WHERE id = ?`, id)
	} else {
		_, err = exec(ctx, db.pool, `UPDATE webhook_outbox SET attempts = ?, next_at = ?, last_error = ? WHERE id = ?`,
			attempts, next, nullText(lastError), id)
	}
	return translate(err)
}
