package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
	"github.com/graphserver/graphserver/internal/vecrank"
)

var _ driver.ItemStorage = (*DB)(nil)

// itemRow is a row of store_items.
type itemRow struct {
	ID         int64     `db:"id"`
	Namespace  string    `db:"namespace"`
	Key        string    `db:"key"`
	Value      string    `db:"value"`
	CreatedAt  time.Time `db:"created_at"`
	UpdatedAt  time.Time `db:"updated_at"`
	TTLMinutes *float64  `db:"ttl_minutes"`
}

const itemColumns = `i.id, i.namespace, i.key, i.value, i.created_at, i.updated_at, i.ttl_minutes`

// item converts a row into a SearchItem (Score nil).
func (r *itemRow) item() (graphserver.SearchItem, error) {
	value, err := jsoncol.DecodeObject(r.Value)
	if err != nil {
		return graphserver.SearchItem{}, err
	}
	return graphserver.SearchItem{Item: graphserver.Item{
		Namespace: strings.Split(r.Namespace, "."),
		Key:       r.Key,
		Value:     value,
		CreatedAt: utc(r.CreatedAt),
		UpdatedAt: utc(r.UpdatedAt),
	}}, nil
}

// ttlExpiry returns the expiry of an item with a TTL of minutes, counted
// from t.
func ttlExpiry(t time.Time, minutes float64) time.Time {
	return t.Add(time.Duration(minutes * float64(time.Minute)))
}

// PutItem implements driver.ItemStorage. The item's row is locked
// while it is replaced, so concurrent puts of one item get increasing
// updated_at times.
func (db *DB) PutItem(ctx context.Context, w *driver.ItemWrite) error {
	value, err := jsoncol.Object(w.Value)
	if err != nil {
		return err
	}
	now := w.Now.UTC().Truncate(time.Millisecond)
	var ttl *float64
	var expires *time.Time
	if w.TTL > 0 {
		m := w.TTL.Minutes()
		e := ttlExpiry(now, m)
		ttl, expires = &m, &e
	}
	ns := strings.Join(w.Namespace, ".")
	var texts []string
	for _, e := range w.Index {
		texts = append(texts, e.Text)
	}
	var text *string
	if len(texts) > 0 {
		t := strings.Join(texts, "\n")
		text = &t
	}
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		type prevRow struct {
			ID        int64      `db:"id"`
			CreatedAt time.Time  `db:"created_at"`
			UpdatedAt time.Time  `db:"updated_at"`
			ExpiresAt *time.Time `db:"expires_at"`
		}
		// Insert, or lock the existing row.
		id, err := scalar[int64](ctx, tx, `INSERT INTO store_items (namespace, key, value, created_at, updated_at, ttl_minutes, expires_at, tsv)
			VALUES (?, ?, ?, ?, ?, ?, ?, to_tsvector('simple', ?::text)) ON CONFLICT (namespace, key) DO NOTHING RETURNING id`,
			ns, w.Key, value, now, now, ttl, expires, text)
		if err == nil {
			return insertVectors(ctx, tx, id, w.Index)
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("insert store item: %w", err)
		}
		prev, err := getRow[prevRow](ctx, tx, `SELECT id, created_at, updated_at, expires_at FROM store_items
			WHERE namespace = ? AND key = ? FOR UPDATE`, ns, w.Key)
		if err != nil {
			return fmt.Errorf("read store item: %w", err)
		}
		created, updated := prev.CreatedAt, now
		if prev.ExpiresAt != nil && !prev.ExpiresAt.After(now) {
			created = now // the old item has expired: this is a new one
		} else if !updated.After(prev.UpdatedAt) {
			updated = prev.UpdatedAt.Add(time.Millisecond)
		}
		if _, err := exec(ctx, tx, `UPDATE store_items SET value = ?, created_at = ?, updated_at = ?, ttl_minutes = ?, expires_at = ?,
			tsv = to_tsvector('simple', ?::text) WHERE id = ?`, value, created, updated, ttl, expires, text, prev.ID); err != nil {
			return fmt.Errorf("update store item: %w", err)
		}
		if _, err := exec(ctx, tx, `DELETE FROM store_vectors WHERE item_id = ?`, prev.ID); err != nil {
			return fmt.Errorf("delete store vectors: %w", err)
		}
		return insertVectors(ctx, tx, prev.ID, w.Index)
	})
}

// insertVectors stores the embedded index entries of item id.
func insertVectors(ctx context.Context, tx pgx.Tx, id int64, index []driver.ItemIndexEntry) error {
	for i, e := range index {
		if e.Vector == nil {
			continue
		}
		if _, err := exec(ctx, tx, `INSERT INTO store_vectors (item_id, seq, path, dims, vector) VALUES (?, ?, ?, ?, ?)`,
			id, i, e.Path, len(e.Vector), vecrank.Encode(e.Vector)); err != nil {
			return fmt.Errorf("insert store vector: %w", err)
		}
	}
	return nil
}

// GetItem implements driver.ItemStorage.
func (db *DB) GetItem(ctx context.Context, namespace []string, key string, now time.Time, refresh bool) (*graphserver.Item, error) {
	r, err := getRow[itemRow](ctx, db.pool, `SELECT `+itemColumns+` FROM store_items AS i
		WHERE i.namespace = ? AND i.key = ? AND (i.expires_at IS NULL OR i.expires_at > ?)`, strings.Join(namespace, "."), key, now)
	if err != nil {
		return nil, translate(err)
	}
	if refresh && r.TTLMinutes != nil {
		if err := db.refreshItems(ctx, []itemRow{r}, now); err != nil {
			return nil, err
		}
	}
	it, err := r.item()
	if err != nil {
		return nil, err
	}
	return &it.Item, nil
}

// refreshItems moves the expiry of the rows that have a TTL (and have not
// expired meanwhile) to now + TTL.
func (db *DB) refreshItems(ctx context.Context, rows []itemRow, now time.Time) error {
	var ids []int64
	for _, r := range rows {
		if r.TTLMinutes != nil {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := exec(ctx, db.pool, `UPDATE store_items SET expires_at = $1::timestamptz + ttl_minutes * interval '1 minute'
		WHERE id = ANY($2::bigint[]) AND ttl_minutes IS NOT NULL AND expires_at > $1`, now, ids)
	if err != nil {
		return translate(fmt.Errorf("refresh store item ttl: %w", err))
	}
	return nil
}

// DeleteItem implements driver.ItemStorage.
func (db *DB) DeleteItem(ctx context.Context, namespace []string, key string) error {
	if _, err := exec(ctx, db.pool, `DELETE FROM store_items WHERE namespace = ? AND key = ?`, strings.Join(namespace, "."), key); err != nil {
		return translate(fmt.Errorf("delete store item: %w", err))
	}
	return nil
}

// DeleteExpiredItems implements driver.ItemStorage.
func (db *DB) DeleteExpiredItems(ctx context.Context, now time.Time) (int, error) {
	n, err := exec(ctx, db.pool, `DELETE FROM store_items WHERE expires_at IS NOT NULL AND expires_at <= ?`, now)
	if err != nil {
		return 0, translate(fmt.Errorf("delete expired store items: %w", err))
	}
	return int(n), nil
}

// ListItemNamespaces implements driver.ItemStorage.
func (db *DB) ListItemNamespaces(ctx context.Context, prefix []string, now time.Time) ([][]string, error) {
	var w where
	itemPrefix(&w, prefix)
	w.add("(i.expires_at IS NULL OR i.expires_at > ?)", now)
	names, err := scalars[string](ctx, db.pool, `SELECT DISTINCT i.namespace FROM store_items AS i WHERE `+w.and(), w.args...)
	if err != nil {
		return nil, translate(fmt.Errorf("list store namespaces: %w", err))
	}
	out := make([][]string, len(names))
	for i, n := range names {
		out[i] = strings.Split(n, ".")
	}
	return out, nil
}

// itemPrefix restricts i.namespace to the namespaces starting with the
// labels of p.
func itemPrefix(w *where, p []string) {
	if len(p) == 0 {
		return
	}
	s := strings.Join(p, ".")
	w.add("(i.namespace = ? OR (i.namespace >= ? AND i.namespace < ?))", s, s+".", s+"/")
}

// itemLabels restricts the search to namespaces holding each label of
// labels at any position (ItemQuery.NamespaceLabels, from access control).
// A label holding "." matches nothing: no stored label holds one.
func itemLabels(w *where, labels []string) {
	for _, l := range labels {
		if strings.Contains(l, ".") {
			w.add("FALSE")
			continue
		}
		w.add("strpos('.' || i.namespace || '.', ?) > 0", "."+l+".")
	}
}

// SearchItems implements driver.ItemStorage.
func (db *DB) SearchItems(ctx context.Context, q *driver.ItemQuery) ([]graphserver.SearchItem, error) {
	var w where
	itemPrefix(&w, q.NamespacePrefix)
	itemLabels(&w, q.NamespaceLabels)
	w.add("(i.expires_at IS NULL OR i.expires_at > ?)", q.Now)
	for _, c := range q.Conditions {
		if err := itemCondition(&w, c); err != nil {
			return nil, err
		}
	}
	var (
		rows   []itemRow
		scores []*float64
		err    error
	)
	switch {
	case q.Vector != nil:
		rows, scores, err = db.searchVector(ctx, q, &w)
	case q.Query != "":
		rows, scores, err = db.searchText(ctx, q, &w)
	default:
		rows, err = selectRows[itemRow](ctx, db.pool, `SELECT `+itemColumns+` FROM store_items AS i
			WHERE `+w.and()+` ORDER BY i.updated_at DESC, i.id DESC LIMIT ? OFFSET ?`, append(w.args, q.Limit, q.Offset)...)
	}
	if err != nil {
		return nil, translate(err)
	}
	out := make([]graphserver.SearchItem, 0, len(rows))
	for i := range rows {
		it, err := rows[i].item()
		if err != nil {
			return nil, err
		}
		if scores != nil {
			it.Score = scores[i]
		}
		out = append(out, it)
	}
	if q.RefreshTTL {
		if err := db.refreshItems(ctx, rows, q.Now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// searchText ranks the items matching w by ts_rank relevance to q.Query;
// items whose text matches no query word are left out.
func (db *DB) searchText(ctx context.Context, q *driver.ItemQuery, w *where) ([]itemRow, []*float64, error) {
	match := tsQuery(q.Query)
	if match == "" {
		return nil, nil, nil
	}
	type rankedRow struct {
		itemRow
		Rank float64 `db:"rank"`
	}
	got, err := selectRows[rankedRow](ctx, db.pool, `SELECT `+itemColumns+`, ts_rank(i.tsv, to_tsquery('simple', ?))::float8 AS rank
		FROM store_items AS i WHERE i.tsv @@ to_tsquery('simple', ?) AND `+w.and()+`
		ORDER BY rank DESC, i.updated_at DESC, i.id DESC LIMIT ? OFFSET ?`,
		append(append([]any{match, match}, w.args...), q.Limit, q.Offset)...)
	if err != nil {
		return nil, nil, fmt.Errorf("full-text search store items: %w", err)
	}
	rows := make([]itemRow, len(got))
	scores := make([]*float64, len(got))
	for i, g := range got {
		rows[i] = g.itemRow
		r := max(g.Rank, 0)
		s := r / (1 + r)
		scores[i] = &s
	}
	return rows, scores, nil
}

// tsQuery turns free text into a tsquery matching any of its words, each
// quoted so that no tsquery syntax gets through; "" when there is no word.
func tsQuery(text string) string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for i, w := range words {
		words[i] = "'" + strings.ReplaceAll(w, "'", "''") + "'"
	}
	return strings.Join(words, " | ")
}

// searchVector ranks the items matching w by the best cosine similarity of
// their vectors to q.Vector (ties: the most recently inserted item first),
// computed here over every candidate vector, then pads with the items that
// have no vector of that size (unscored, newest first).
func (db *DB) searchVector(ctx context.Context, q *driver.ItemQuery, w *where) ([]itemRow, []*float64, error) {
	dims := len(q.Vector)
	rank := vecrank.New(q.Vector)
	var rows []itemRow
	err := db.tx(ctx, func(tx pgx.Tx) error {
		rank.Reset()
		rows = nil
		cur, err := tx.Query(ctx, rebind(`SELECT v.item_id, v.vector
			FROM store_vectors AS v JOIN store_items AS i ON i.id = v.item_id
			WHERE v.dims = ? AND `+w.and()+` ORDER BY v.item_id`), append([]any{dims}, w.args...)...)
		if err != nil {
			return fmt.Errorf("read store vectors: %w", err)
		}
		for cur.Next() {
			var id int64
			var blob []byte
			if err := cur.Scan(&id, &blob); err != nil {
				cur.Close()
				return fmt.Errorf("read store vectors: %w", err)
			}
			rank.Add(id, blob)
		}
		cur.Close()
		if err := cur.Err(); err != nil {
			return fmt.Errorf("read store vectors: %w", err)
		}

		// The page: scored items first, then unscored ones.
		page, skip, take := rank.Page(q.Offset, q.Limit)
		if len(page) > 0 {
			ids := make([]int64, len(page))
			for i, p := range page {
				ids[i] = p.ID
			}
			got, err := selectRows[itemRow](ctx, tx, `SELECT `+itemColumns+` FROM store_items AS i WHERE i.id = ANY(?::bigint[])`, ids)
			if err != nil {
				return fmt.Errorf("read store items: %w", err)
			}
			byID := make(map[int64]itemRow, len(got))
			for _, r := range got {
				byID[r.ID] = r
			}
			for _, p := range page {
				rows = append(rows, byID[p.ID])
			}
		}
		if take == 0 {
			return nil
		}
		rest, err := selectRows[itemRow](ctx, tx, `SELECT `+itemColumns+` FROM store_items AS i
			WHERE NOT EXISTS (SELECT 1 FROM store_vectors AS v WHERE v.item_id = i.id AND v.dims = ?) AND `+w.and()+`
			ORDER BY i.updated_at DESC, i.id DESC LIMIT ? OFFSET ?`, append(append([]any{dims}, w.args...), take, skip)...)
		if err != nil {
			return fmt.Errorf("read unindexed store items: %w", err)
		}
		rows = append(rows, rest...)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return rows, rank.Scores(q.Offset, len(rows)), nil
}

// itemCondition adds one filter condition on the top-level field c.Field of
// the item value, with the semantics of driver.ItemCondition: jsonb
// equality is typed and deep; the ordering operators compare numbers with
// numbers and strings with strings (byte order).
func itemCondition(w *where, c driver.ItemCondition) error {
	field := "(i.value -> ?::text)"
	switch c.Op {
	case "$eq", "$ne":
		b, err := json.Marshal(c.Value)
		if err != nil {
			return graphserver.Errorf(graphserver.EINVALID, "The filter value for %q cannot be encoded as JSON: %v.", c.Field, err)
		}
		if c.Op == "$eq" {
			w.add(field+" = ?::jsonb", c.Field, string(b))
		} else {
			w.add(field+" IS DISTINCT FROM ?::jsonb", c.Field, string(b))
		}
	case "$gt", "$gte", "$lt", "$lte":
		op := map[string]string{"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[c.Op]
		switch v := c.Value.(type) {
		case float64:
			w.add("CASE WHEN jsonb_typeof("+field+") = 'number' THEN ("+field+")::numeric "+op+" ?::numeric ELSE false END",
				c.Field, c.Field, v)
		case string:
			w.add("CASE WHEN jsonb_typeof("+field+") = 'string' THEN (i.value ->> ?::text) COLLATE \"C\" "+op+" ?::text ELSE false END",
				c.Field, c.Field, v)
		default:
			return graphserver.Errorf(graphserver.EINVALID, "The filter operator %s on %q takes a number or a string.", c.Op, c.Field)
		}
	default:
		return graphserver.Errorf(graphserver.EINVALID, "The filter operator %q on %q is not supported.", c.Op, c.Field)
	}
	return nil
}
