package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
	"github.com/graphserver/graphserver/internal/vecrank"
)

var _ driver.ItemStorage = (*DB)(nil)

// itemRow is a row of store_items.
type itemRow struct {
	ID         int64           `db:"id"`
	Namespace  string          `db:"namespace"`
	Key        string          `db:"key"`
	Value      string          `db:"value"`
	CreatedAt  string          `db:"created_at"`
	UpdatedAt  string          `db:"updated_at"`
	TTLMinutes sql.NullFloat64 `db:"ttl_minutes"`
	ExpiresAt  sql.NullString  `db:"expires_at"` // read by GetItem only
}

const itemColumns = `id, namespace, key, value, created_at, updated_at, ttl_minutes`

// item converts a row into a SearchItem (Score nil).
func (r *itemRow) item() (graphserver.SearchItem, error) {
	value, err := jsoncol.DecodeObject(r.Value)
	if err != nil {
		return graphserver.SearchItem{}, err
	}
	created, err := parseTime(r.CreatedAt)
	if err != nil {
		return graphserver.SearchItem{}, err
	}
	updated, err := parseTime(r.UpdatedAt)
	if err != nil {
		return graphserver.SearchItem{}, err
	}
	return graphserver.SearchItem{Item: graphserver.Item{
		Namespace: strings.Split(r.Namespace, "."),
		Key:       r.Key,
		Value:     value,
		CreatedAt: created,
		UpdatedAt: updated,
	}}, nil
}

// expiresAfter renders the expiry of an item with a TTL of minutes, counted
// from t.
func expiresAfter(t time.Time, minutes float64) string {
	return formatTime(t.Add(time.Duration(minutes * float64(time.Minute))))
}

// PutItem implements driver.ItemStorage.
func (db *DB) PutItem(ctx context.Context, w *driver.ItemWrite) error {
	ns := strings.Join(w.Namespace, ".")
	defer db.items.changed(itemKey{ns, w.Key})
	value, err := jsoncol.Object(w.Value)
	if err != nil {
		return err
	}
	now := w.Now.UTC().Truncate(time.Millisecond)
	var ttl sql.NullFloat64
	var expires sql.NullString
	if w.TTL > 0 {
		ttl = sql.NullFloat64{Float64: w.TTL.Minutes(), Valid: true}
		expires = sql.NullString{String: expiresAfter(now, ttl.Float64), Valid: true}
	}
	var texts []string
	for _, e := range w.Index {
		texts = append(texts, e.Text)
	}
	indexed := len(w.Index) > 0
	// Grouped: the commit, most of the cost of a put, is shared with the
	// writes queued meanwhile.
	err = db.writeGrouped(ctx, func(ctx context.Context, tx *connTx) error {
		var prev struct {
			ID        int64          `db:"id"`
			CreatedAt string         `db:"created_at"`
			UpdatedAt string         `db:"updated_at"`
			ExpiresAt sql.NullString `db:"expires_at"`
			Indexed   bool           `db:"indexed"`
		}
		// A new item takes one statement; when the key is taken (the
		// insert does nothing), the item is read and replaced.
		res, err := tx.ExecContext(ctx, `INSERT INTO store_items (namespace, key, value, created_at, updated_at, ttl_minutes, expires_at, indexed)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, key) DO NOTHING`, ns, w.Key, value, formatTime(now), formatTime(now), ttl, expires, indexed)
		if err != nil {
			return fmt.Errorf("insert store item: %w", err)
		}
		inserted, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("insert store item: %w", err)
		}
		var id int64
		if inserted == 1 {
			if id, err = res.LastInsertId(); err != nil {
				return fmt.Errorf("insert store item: %w", err)
			}
		} else {
			if err := tx.GetContext(ctx, &prev, `SELECT id, created_at, updated_at, expires_at, indexed FROM store_items WHERE namespace = ? AND key = ?`, ns, w.Key); err != nil {
				return fmt.Errorf("read store item: %w", err)
			}
			id = prev.ID
			created := prev.CreatedAt
			updated := now
			if prev.ExpiresAt.Valid && prev.ExpiresAt.String <= formatTime(now) {
				created = formatTime(now) // the old item has expired: this is a new one
			} else {
				last, err := parseTime(prev.UpdatedAt)
				if err != nil {
					return err
				}
				if !updated.After(last) {
					updated = last.Add(time.Millisecond)
				}
			}
			if _, err := tx.ExecContext(ctx, `UPDATE store_items
SET value = ?, created_at = ?, updated_at = ?, ttl_minutes = ?, expires_at = ?, indexed = ? WHERE id = ?`,
				value, created, formatTime(updated), ttl, expires, indexed, id); err != nil {
				return fmt.Errorf("update store item: %w", err)
			}
			if prev.Indexed { // else there is nothing to delete
				if _, err := tx.ExecContext(ctx, `DELETE FROM store_vectors WHERE item_id = ?`, id); err != nil {
					return fmt.Errorf("delete store vectors: %w", err)
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM store_fts WHERE rowid = ?`, id); err != nil {
					return fmt.Errorf("delete store text: %w", err)
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM store_fts_pending WHERE item_id = ?`, id); err != nil {
					return fmt.Errorf("delete store text: %w", err)
				}
			}
		}
		for i, e := range w.Index {
			if e.Vector == nil {
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO store_vectors (item_id, seq, path, dims, vector) VALUES (?, ?, ?, ?, ?)`,
				id, i, e.Path, len(e.Vector), vecrank.Encode(e.Vector)); err != nil {
				return fmt.Errorf("insert store vector: %w", err)
			}
		}
		if len(texts) > 0 {
			// Indexed later, with others (textindex.go).
			if _, err := tx.ExecContext(ctx, `INSERT INTO store_fts_pending (item_id, text) VALUES (?, ?)`, id, strings.Join(texts, "\n")); err != nil {
				return fmt.Errorf("insert store text: %w", err)
			}
		}
		return nil
	})
	if err == nil && len(texts) > 0 {
		db.textQueued()
	}
	return err
}

// GetItem implements driver.ItemStorage. On a file this process has to
// itself (OpenOptions.Exclusive), an item read before is returned from
// memory while it has not been written since (itemCache).
func (db *DB) GetItem(ctx context.Context, namespace []string, key string, now time.Time, refresh bool) (*graphserver.Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nowS := formatTime(now)
	k := itemKey{strings.Join(namespace, "."), key}
	var r *itemRow
	var gen int64
	if db.exclusive {
		// The generation before the read: a write of the item committed
		// meanwhile keeps the row read from being kept.
		gen = db.items.generation()
		r = db.items.get(k)
	}
	if r == nil {
		// The row has the namespace and key asked for (compared as
		// bytes): they are not read back. An expired row is read too (and
		// cached: it is refused below, as it would be at a later clock).
		r = &itemRow{Namespace: k.namespace, Key: key}
		// One statement: no read transaction around it (its BEGIN and
		// COMMIT would cost as much as the query). Its context cannot be
		// cancelled (a cancellable one costs database/sql a goroutine per
		// query, more than this lookup): a done ctx fails the read before
		// it starts (above), and waiting for a connection is short, each
		// read holding one for microseconds. Background rather than
		// uncancellable(ctx): the driver reads no value of ctx, and asking
		// ctx for its Done channel would make one.
		err := db.reader.QueryRowContext(context.Background(), `SELECT id, value, created_at, updated_at, ttl_minutes, expires_at
FROM store_items WHERE namespace = ? AND key = ?`, k.namespace, key).
			Scan(&r.ID, &r.Value, &r.CreatedAt, &r.UpdatedAt, &r.TTLMinutes, &r.ExpiresAt)
		if err != nil {
			return nil, translate(err)
		}
		if db.exclusive {
			db.items.put(k, r, gen)
		}
	}
	if r.ExpiresAt.Valid && r.ExpiresAt.String <= nowS { // timestamps sort as strings
		return nil, translate(sql.ErrNoRows)
	}
	if refresh && r.TTLMinutes.Valid {
		if err := db.refreshItems(ctx, []itemRow{*r}, now); err != nil {
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
	var keys []itemKey
	for _, r := range rows {
		if r.TTLMinutes.Valid {
			keys = append(keys, itemKey{r.Namespace, r.Key})
		}
	}
	if len(keys) == 0 {
		return nil
	}
	defer db.items.changed(keys...)
	nowS := formatTime(now)
	return db.write(ctx, func(tx *connTx) error {
		for _, r := range rows {
			if !r.TTLMinutes.Valid {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE store_items SET expires_at = ?
WHERE id = ? AND ttl_minutes IS NOT NULL AND expires_at > ?`, expiresAfter(now, r.TTLMinutes.Float64), r.ID, nowS); err != nil {
				return fmt.Errorf("refresh store item ttl: %w", err)
			}
		}
		return nil
	})
}

// DeleteItem implements driver.ItemStorage.
func (db *DB) DeleteItem(ctx context.Context, namespace []string, key string) error {
	ns := strings.Join(namespace, ".")
	defer db.items.changed(itemKey{ns, key})
	return db.write(ctx, func(tx *connTx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM store_items WHERE namespace = ? AND key = ?`, ns, key)
		if err != nil {
			return fmt.Errorf("delete store item: %w", err)
		}
		return nil
	})
}

// DeleteExpiredItems implements driver.ItemStorage.
func (db *DB) DeleteExpiredItems(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := db.write(ctx, func(tx *connTx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM store_items WHERE expires_at IS NOT NULL AND expires_at <= ?`, formatTime(now))
		if err != nil {
			return fmt.Errorf("delete expired store items: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	if n > 0 || err != nil {
		// Which items went is not known: drop them all. A sweep that
		// deleted nothing (most of them) changed nothing.
		db.items.changed()
	}
	return int(n), err
}

// ListItemNamespaces implements driver.ItemStorage.
func (db *DB) ListItemNamespaces(ctx context.Context, prefix []string, now time.Time) ([][]string, error) {
	var w itemWhere
	w.prefix("namespace", prefix)
	w.live("expires_at", now)
	var names []string
	err := db.read(ctx, func(tx *connTx) error {
		return tx.SelectContext(ctx, &names, `SELECT DISTINCT namespace FROM store_items WHERE `+w.and(), w.args...)
	})
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(names))
	for i, n := range names {
		out[i] = strings.Split(n, ".")
	}
	return out, nil
}

// SearchItems implements driver.ItemStorage.
func (db *DB) SearchItems(ctx context.Context, q *driver.ItemQuery) ([]graphserver.SearchItem, error) {
	var w itemWhere
	w.prefix("i.namespace", q.NamespacePrefix)
	w.labels("i.namespace", q.NamespaceLabels)
	w.live("i.expires_at", q.Now)
	for _, c := range q.Conditions {
		if err := w.condition("i.value", c); err != nil {
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
		err = db.read(ctx, func(tx *connTx) error {
			return tx.SelectContext(ctx, &rows, `SELECT `+prefixed("i.", itemColumns)+` FROM store_items AS i
WHERE `+w.and()+` ORDER BY i.updated_at DESC, i.id DESC LIMIT ? OFFSET ?`, append(w.args, q.Limit, q.Offset)...)
		})
	}
	if err != nil {
		return nil, err
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

// searchText ranks the items matching w by FTS5 bm25 relevance to q.Query;
// items whose text matches no query term are left out.
func (db *DB) searchText(ctx context.Context, q *driver.ItemQuery, w *itemWhere) ([]itemRow, []*float64, error) {
	match := ftsQuery(q.Query)
	if match == "" {
		return nil, nil, nil
	}
	// The search sees every put committed before it.
	if err := db.indexText(ctx); err != nil {
		return nil, nil, err
	}
	var got []struct {
		itemRow
		Rank float64 `db:"rank"`
	}
	err := db.read(ctx, func(tx *connTx) error {
		return tx.SelectContext(ctx, &got, `SELECT `+prefixed("i.", itemColumns)+`, bm25(store_fts) AS rank
FROM store_fts JOIN store_items AS i ON i.id = store_fts.rowid
WHERE store_fts MATCH ? AND `+w.and()+` ORDER BY rank, i.updated_at DESC, i.id DESC LIMIT ? OFFSET ?`,
			append(append([]any{match}, w.args...), q.Limit, q.Offset)...)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("full-text search store items: %w", err)
	}
	rows := make([]itemRow, len(got))
	scores := make([]*float64, len(got))
	for i, g := range got {
		rows[i] = g.itemRow
		r := max(-g.Rank, 0) // bm25 is lower for better matches
		s := r / (1 + r)
		scores[i] = &s
	}
	return rows, scores, nil
}

// ftsQuery turns free text into an FTS5 query matching any of its words,
// each quoted so that no FTS5 syntax gets through; "" when there is no word.
func ftsQuery(text string) string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for i, w := range words {
		words[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	return strings.Join(words, " OR ")
}

// searchVector ranks the items matching w by the best cosine similarity of
// their vectors to q.Vector (ties: the most recently inserted item first),
// computed here over every candidate vector, then pads with the items that
// have no vector of that size (unscored, newest first).
func (db *DB) searchVector(ctx context.Context, q *driver.ItemQuery, w *itemWhere) ([]itemRow, []*float64, error) {
	dims := len(q.Vector)
	rank := vecrank.New(q.Vector)
	var rows []itemRow
	err := db.read(ctx, func(tx *connTx) error {
		cur, err := tx.QueryContext(ctx, `SELECT v.item_id, v.vector
FROM store_vectors AS v JOIN store_items AS i ON i.id = v.item_id
WHERE v.dims = ? AND `+w.and()+` ORDER BY v.item_id`, append([]any{dims}, w.args...)...)
		if err != nil {
			return fmt.Errorf("read store vectors: %w", err)
		}
		defer cur.Close()
		var blob sql.RawBytes // valid until the next Next: no copy per row
		for cur.Next() {
			var id int64
			if err := cur.Scan(&id, &blob); err != nil {
				return fmt.Errorf("read store vectors: %w", err)
			}
			rank.Add(id, blob)
		}
		if err := cur.Err(); err != nil {
			return fmt.Errorf("read store vectors: %w", err)
		}

		// The page: scored items first, then unscored ones.
		page, skip, take := rank.Page(q.Offset, q.Limit)
		if len(page) > 0 {
			ids := make([]any, len(page))
			for i, p := range page {
				ids[i] = p.ID
			}
			var got []itemRow
			if err := tx.SelectContext(ctx, &got, `SELECT `+itemColumns+` FROM store_items WHERE id IN (`+placeholders(len(ids))+`)`, ids...); err != nil {
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
		var rest []itemRow
		if err := tx.SelectContext(ctx, &rest, `SELECT `+prefixed("i.", itemColumns)+` FROM store_items AS i
WHERE NOT EXISTS (SELECT 1 FROM store_vectors AS v WHERE v.item_id = i.id AND v.dims = ?) AND `+w.and()+`
ORDER BY i.updated_at DESC, i.id DESC LIMIT ? OFFSET ?`, append(append([]any{dims}, w.args...), take, skip)...); err != nil {
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

// placeholders returns "?, ?, ..." with n marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// prefixed qualifies each column of a comma-separated list with p.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ", ")
	for i, c := range parts {
		parts[i] = p + c
	}
	return strings.Join(parts, ", ")
}

// itemWhere accumulates AND-ed conditions on store_items and their bound
// arguments.
type itemWhere struct {
	conds []string
	args  []any
}

func (w *itemWhere) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// and returns "c1 AND c2 ..." or "1".
func (w *itemWhere) and() string {
	if len(w.conds) == 0 {
		return "1"
	}
	return strings.Join(w.conds, " AND ")
}

// prefix restricts col to the namespaces starting with the labels of p.
func (w *itemWhere) prefix(col string, p []string) {
	if len(p) == 0 {
		return
	}
	s := strings.Join(p, ".")
	w.add("("+col+" = ? OR ("+col+" >= ? AND "+col+" < ?))", s, s+".", s+"/")
}

// labels restricts col (a namespace, labels joined by ".") to the
// namespaces holding each label of labels at any position. A label holding
// "." matches no namespace, as no stored label holds one.
func (w *itemWhere) labels(col string, labels []string) {
	for _, l := range labels {
		if strings.Contains(l, ".") {
			w.add("0")
			continue
		}
		w.add("instr('.' || "+col+" || '.', ?) > 0", "."+l+".")
	}
}

// live restricts to items not expired at now.
func (w *itemWhere) live(col string, now time.Time) {
	w.add("("+col+" IS NULL OR "+col+" > ?)", formatTime(now))
}

// condition adds one filter condition on the top-level field c.Field of the
// JSON object in col, with the semantics of driver.ItemCondition.
func (w *itemWhere) condition(col string, c driver.ItemCondition) error {
	if strings.ContainsAny(c.Field, `"\`) {
		return graphserver.Errorf(graphserver.EINVALID, "The filter field %q cannot contain a quote or a backslash.", c.Field)
	}
	path := `$."` + c.Field + `"`
	typ := "coalesce(json_type(" + col + ", ?), '')"
	val := "json_extract(" + col + ", ?)"
	eq := func() (string, []any, error) {
		switch v := c.Value.(type) {
		case nil:
			return typ + " = 'null'", []any{path}, nil
		case bool:
			return typ + " = '" + map[bool]string{true: "true", false: "false"}[v] + "'", []any{path}, nil
		case float64:
			return "(" + typ + " IN ('integer', 'real') AND " + val + " = ?)", []any{path, path, v}, nil
		case string:
			return "(" + typ + " = 'text' AND " + val + " = ?)", []any{path, path, v}, nil
		case map[string]any, []any:
			b, err := json.Marshal(v)
			if err != nil {
				return "", nil, fmt.Errorf("encode filter value: %w", err)
			}
			kind := "object"
			if _, ok := v.([]any); ok {
				kind = "array"
			}
			return "(" + typ + " = '" + kind + "' AND " + val + " = ?)", []any{path, path, string(b)}, nil
		default:
			return "", nil, graphserver.Errorf(graphserver.EINVALID, "The filter value for %q has an unsupported type %T.", c.Field, v)
		}
	}
	switch c.Op {
	case "$eq":
		cond, args, err := eq()
		if err != nil {
			return err
		}
		w.add(cond, args...)
	case "$ne":
		cond, args, err := eq()
		if err != nil {
			return err
		}
		w.add("NOT coalesce("+cond+", 0)", args...)
	case "$gt", "$gte", "$lt", "$lte":
		op := map[string]string{"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[c.Op]
		switch v := c.Value.(type) {
		case float64:
			w.add("("+typ+" IN ('integer', 'real') AND "+val+" "+op+" ?)", path, path, v)
		case string:
			w.add("("+typ+" = 'text' AND "+val+" "+op+" ?)", path, path, v)
		default:
			return graphserver.Errorf(graphserver.EINVALID, "The filter operator %s on %q takes a number or a string.", c.Op, c.Field)
		}
	default:
		return graphserver.Errorf(graphserver.EINVALID, "The filter operator %q on %q is not supported.", c.Op, c.Field)
	}
	return nil
}
