package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/jsoncol"
)

// assistantRow is an assistants (or assistant_versions) row.
type assistantRow struct {
	AssistantID string         `db:"assistant_id"`
	GraphID     string         `db:"graph_id"`
	Config      string         `db:"config"`
	Context     string         `db:"context"`
	Metadata    string         `db:"metadata"`
	Name        string         `db:"name"`
	Description sql.NullString `db:"description"`
	Version     int            `db:"version"`
	CreatedAt   string         `db:"created_at"`
	UpdatedAt   string         `db:"updated_at"`
}

const assistantColumns = `assistant_id, graph_id, config, context, metadata, name, description, version, created_at, updated_at`

func (r *assistantRow) assistant() (*graphserver.Assistant, error) {
	a := &graphserver.Assistant{AssistantID: r.AssistantID, GraphID: r.GraphID, Name: r.Name, Version: r.Version}
	var err error
	if a.Config, err = jsoncol.DecodeObject(r.Config); err != nil {
		return nil, err
	}
	if a.Context, err = jsoncol.DecodeObject(r.Context); err != nil {
		return nil, err
	}
	if a.Metadata, err = jsoncol.DecodeObject(r.Metadata); err != nil {
		return nil, err
	}
	if r.Description.Valid {
		d := r.Description.String
		a.Description = &d
	}
	if a.CreatedAt, err = parseTime(r.CreatedAt); err != nil {
		return nil, err
	}
	if r.UpdatedAt != "" {
		if a.UpdatedAt, err = parseTime(r.UpdatedAt); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// assistantArgs are the encoded columns of a.
type assistantArgs struct {
	config, context, metadata string
	description               sql.NullString
}

func encodeAssistant(a *graphserver.Assistant) (assistantArgs, error) {
	var e assistantArgs
	var err error
	if e.config, err = jsoncol.Object(a.Config); err != nil {
		return e, err
	}
	if e.context, err = jsoncol.Object(a.Context); err != nil {
		return e, err
	}
	if e.metadata, err = jsoncol.Object(a.Metadata); err != nil {
		return e, err
	}
	if a.Description != nil {
		e.description = sql.NullString{String: *a.Description, Valid: true}
	}
	return e, nil
}

func assistantNotFound(id string) error {
	return graphserver.Errorf(graphserver.ENOTFOUND, "Assistant %s not found", id)
}

// getAssistant reads one assistant visible through filter.
func getAssistant(ctx context.Context, q sqlx.QueryerContext, id string, filter graphserver.Filter) (*graphserver.Assistant, error) {
	var w where
	w.add("assistant_id = ?", id)
	if err := w.filter("metadata", filter); err != nil {
		return nil, err
	}
	var r assistantRow
	err := sqlx.GetContext(ctx, q, &r, `SELECT `+assistantColumns+` FROM assistants`+w.String(), w.args...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, assistantNotFound(id)
	} else if err != nil {
		return nil, fmt.Errorf("get assistant %s: %w", id, err)
	}
	return r.assistant()
}

const insertAssistantVersion = `INSERT INTO assistant_versions
	(assistant_id, version, graph_id, config, context, metadata, name, description, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// CreateAssistant implements driver.AssistantStorage. It stores a as
// version 1 (a.Version is ignored); zero timestamps are set to now.
func (db *DB) CreateAssistant(ctx context.Context, a *graphserver.Assistant, ifExists string, filter graphserver.Filter) (*graphserver.Assistant, error) {
	defer db.assistantsChanged()
	e, err := encodeAssistant(a)
	if err != nil {
		return nil, err
	}
	created, updated := a.CreatedAt, a.UpdatedAt
	if created.IsZero() {
		created = db.now()
	}
	if updated.IsZero() {
		updated = created
	}
	var out *graphserver.Assistant
	err = db.write(ctx, func(tx *connTx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO assistants (`+assistantColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`,
			a.AssistantID, a.GraphID, e.config, e.context, e.metadata, a.Name, e.description, formatTime(created), formatTime(updated))
		if isConstraint(err) {
			conflict := graphserver.Errorf(graphserver.ECONFLICT, "Assistant %s already exists", a.AssistantID)
			if ifExists != graphserver.IfExistsDoNothing {
				return conflict
			}
			out, err = getAssistant(ctx, tx, a.AssistantID, filter)
			if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
				return conflict
			}
			return err
		} else if err != nil {
			return fmt.Errorf("insert assistant: %w", err)
		}
		if _, err := tx.ExecContext(ctx, insertAssistantVersion, a.AssistantID, 1, a.GraphID, e.config, e.context, e.metadata,
			a.Name, e.description, formatTime(created)); err != nil {
			return fmt.Errorf("insert assistant version: %w", err)
		}
		out, err = getAssistant(ctx, tx, a.AssistantID, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetAssistant implements driver.AssistantStorage.
// Without a filter, an assistant read before is returned from memory while
// no assistant has changed since (assistantCache): one read of a counter,
// or none when this process has the file to itself (OpenOptions.Exclusive),
// where every change is made here and moves assistantGen.
func (db *DB) GetAssistant(ctx context.Context, id string, filter graphserver.Filter) (*graphserver.Assistant, error) {
	if filter != nil {
		a, err := getAssistant(ctx, db.reader, id, filter)
		return a, translate(err)
	}
	if db.exclusive {
		// The generation before the read: a change committed meanwhile
		// moves it past the entry.
		g := db.assistantGen.Load()
		if a := db.assistants.get(id, g); a != nil {
			return a, nil
		}
		a, err := getAssistant(ctx, db.reader, id, nil)
		if err != nil {
			return nil, translate(err)
		}
		db.assistants.put(a, g)
		return a, nil
	}
	// Short reads: without ctx's cancellation, database/sql watches no
	// context for them (a goroutine per query otherwise).
	ctx, err := uncancellable(ctx)
	if err != nil {
		return nil, err
	}
	var n int64
	if err := db.reader.GetContext(ctx, &n, `SELECT n FROM assistant_changes WHERE id = 1`); err != nil {
		return nil, translate(fmt.Errorf("get assistant %s: %w", id, err))
	}
	if a := db.assistants.get(id, n); a != nil {
		return a, nil
	}
	// The row and the counter in one statement: one snapshot.
	var r struct {
		assistantRow
		N int64 `db:"n"`
	}
	err = db.reader.GetContext(ctx, &r, `SELECT `+assistantColumns+`, (SELECT n FROM assistant_changes WHERE id = 1) AS n
		FROM assistants WHERE assistant_id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, assistantNotFound(id)
	} else if err != nil {
		return nil, translate(fmt.Errorf("get assistant %s: %w", id, err))
	}
	a, err := r.assistant()
	if err != nil {
		return nil, err
	}
	db.assistants.put(a, r.N)
	return a, nil
}

// UpdateAssistant implements driver.AssistantStorage: the patch becomes
// version max+1 and current; metadata is merged shallowly, other given
// fields replace the current ones.
func (db *DB) UpdateAssistant(ctx context.Context, id string, patch *graphserver.AssistantPatch, now time.Time, filter graphserver.Filter) (*graphserver.Assistant, error) {
	defer db.assistantsChanged()
	if patch == nil {
		patch = &graphserver.AssistantPatch{}
	}
	var out *graphserver.Assistant
	err := db.write(ctx, func(tx *connTx) error {
		a, err := getAssistant(ctx, tx, id, filter)
		if err != nil {
			return err
		}
		var maxVersion int
		if err := tx.GetContext(ctx, &maxVersion, `SELECT coalesce(max(version), 0) FROM assistant_versions WHERE assistant_id = ?`, id); err != nil {
			return fmt.Errorf("max assistant version: %w", err)
		}
		if patch.GraphID != nil {
			a.GraphID = *patch.GraphID
		}
		if patch.Config != nil {
			a.Config = patch.Config
		}
		if patch.Context != nil {
			a.Context = patch.Context
		}
		if patch.Metadata != nil {
			a.Metadata = a.Metadata.Merge(patch.Metadata)
		}
		if patch.Name != nil {
			a.Name = *patch.Name
		}
		if patch.Description != nil {
			a.Description = patch.Description
		}
		a.Version = max(maxVersion, a.Version) + 1
		a.UpdatedAt = now
		e, err := encodeAssistant(a)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, insertAssistantVersion, id, a.Version, a.GraphID, e.config, e.context, e.metadata,
			a.Name, e.description, formatTime(now)); err != nil {
			return fmt.Errorf("insert assistant version: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE assistants SET graph_id = ?, config = ?, context = ?, metadata = ?, name = ?,
			description = ?, version = ?, updated_at = ? WHERE assistant_id = ?`,
			a.GraphID, e.config, e.context, e.metadata, a.Name, e.description, a.Version, formatTime(now), id); err != nil {
			return fmt.Errorf("update assistant: %w", err)
		}
		out, err = getAssistant(ctx, tx, id, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteAssistant implements driver.AssistantStorage. With
// deleteThreads, the threads whose metadata.assistant_id is id and that
// filter lets through are deleted too, with their checkpoints.
func (db *DB) DeleteAssistant(ctx context.Context, id string, deleteThreads bool, filter graphserver.Filter) error {
	defer db.assistantsChanged()
	return db.write(ctx, func(tx *connTx) error {
		if _, err := getAssistant(ctx, tx, id, filter); err != nil {
			return err
		}
		if deleteThreads {
			var w where
			if err := w.contains("metadata", map[string]any{"assistant_id": id}); err != nil {
				return err
			}
			if err := w.filter("metadata", filter); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM threads`+w.String(), w.args...); err != nil {
				return fmt.Errorf("delete assistant threads: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM assistants WHERE assistant_id = ?`, id); err != nil {
			return fmt.Errorf("delete assistant: %w", err)
		}
		return nil
	})
}

// assistantSorts whitelists sort_by values (never interpolate user input).
var assistantSorts = map[string]string{
	"assistant_id": "assistant_id",
	"graph_id":     "graph_id",
	"name":         "name",
	"created_at":   "created_at",
	"updated_at":   "updated_at",
}

// orderBy builds an ORDER BY clause from whitelisted columns, with idCol as
// the tie breaker in the same direction. An unknown or empty sortBy gives
// def; an order other than asc gives desc.
func orderBy(sorts map[string]string, sortBy, order, def, idCol string) string {
	col, ok := sorts[sortBy]
	if !ok {
		col = def
	}
	dir := "DESC"
	if order == "asc" {
		dir = "ASC"
	}
	if col == idCol {
		return " ORDER BY " + col + " " + dir
	}
	return " ORDER BY " + col + " " + dir + ", " + idCol + " " + dir
}

// limitOffset builds LIMIT/OFFSET; limit <= 0 means no limit. plusOne asks
// for one extra row so the caller can tell whether more exist.
func limitOffset(limit, offset int, plusOne bool) (string, []any) {
	if limit <= 0 {
		return " LIMIT -1 OFFSET ?", []any{max(offset, 0)}
	}
	if plusOne {
		limit++
	}
	return " LIMIT ? OFFSET ?", []any{limit, max(offset, 0)}
}

func assistantSearchWhere(s *graphserver.AssistantSearch) (*where, error) {
	w := &where{}
	if s.GraphID != "" {
		w.add("graph_id = ?", s.GraphID)
	}
	if s.Name != "" {
		w.add("instr(lower(name), lower(?)) > 0", s.Name)
	}
	if err := w.contains("metadata", s.Metadata); err != nil {
		return nil, err
	}
	if err := w.filter("metadata", s.Filter); err != nil {
		return nil, err
	}
	return w, nil
}

// SearchAssistants implements driver.AssistantStorage. It returns at
// most s.Limit+1 full rows (no limit when s.Limit <= 0), sorted by
// s.SortBy (default created_at) and s.SortOrder (default desc).
func (db *DB) SearchAssistants(ctx context.Context, s *graphserver.AssistantSearch) ([]*graphserver.Assistant, error) {
	if s == nil {
		s = &graphserver.AssistantSearch{}
	}
	w, err := assistantSearchWhere(s)
	if err != nil {
		return nil, err
	}
	lim, largs := limitOffset(s.Limit, s.Offset, true)
	q := `SELECT ` + assistantColumns + ` FROM assistants` + w.String() +
		orderBy(assistantSorts, s.SortBy, s.SortOrder, "created_at", "assistant_id") + lim
	var rows []assistantRow
	if err := db.reader.SelectContext(ctx, &rows, q, append(w.args, largs...)...); err != nil {
		return nil, translate(fmt.Errorf("search assistants: %w", err))
	}
	out := make([]*graphserver.Assistant, 0, len(rows))
	for i := range rows {
		a, err := rows[i].assistant()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// CountAssistants implements driver.AssistantStorage; limit, offset
// and sort are ignored.
func (db *DB) CountAssistants(ctx context.Context, s *graphserver.AssistantSearch) (int, error) {
	if s == nil {
		s = &graphserver.AssistantSearch{}
	}
	w, err := assistantSearchWhere(s)
	if err != nil {
		return 0, err
	}
	var n int
	if err := db.reader.GetContext(ctx, &n, `SELECT count(*) FROM assistants`+w.String(), w.args...); err != nil {
		return 0, translate(fmt.Errorf("count assistants: %w", err))
	}
	return n, nil
}

// ListAssistantVersions implements driver.AssistantStorage: versions
// newest first, filtered by containment on each version's metadata. It
// returns ENOTFOUND when the assistant is missing or s.Filter hides it.
func (db *DB) ListAssistantVersions(ctx context.Context, id string, s *graphserver.AssistantVersionSearch) ([]*graphserver.AssistantVersion, error) {
	if s == nil {
		s = &graphserver.AssistantVersionSearch{}
	}
	var out []*graphserver.AssistantVersion
	err := db.read(ctx, func(tx *connTx) error {
		if _, err := getAssistant(ctx, tx, id, s.Filter); err != nil {
			return err
		}
		var w where
		w.add("assistant_id = ?", id)
		if err := w.contains("metadata", s.Metadata); err != nil {
			return err
		}
		lim, largs := limitOffset(s.Limit, s.Offset, false)
		var rows []assistantRow
		if err := tx.SelectContext(ctx, &rows, `SELECT assistant_id, version, graph_id, config, context, metadata, name,
			description, created_at, '' AS updated_at FROM assistant_versions`+w.String()+` ORDER BY version DESC`+lim,
			append(w.args, largs...)...); err != nil {
			return fmt.Errorf("list assistant versions: %w", err)
		}
		out = make([]*graphserver.AssistantVersion, 0, len(rows))
		for i := range rows {
			a, err := rows[i].assistant()
			if err != nil {
				return err
			}
			out = append(out, &graphserver.AssistantVersion{
				AssistantID: a.AssistantID, Version: a.Version, GraphID: a.GraphID, Config: a.Config,
				Context: a.Context, Metadata: a.Metadata, Name: a.Name, Description: a.Description, CreatedAt: a.CreatedAt,
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetAssistantVersion implements driver.AssistantStorage: the version's
// graph id, config, context, metadata, name and description are copied onto
// the assistant, which points at it from then on. ENOTFOUND when the
// assistant (or that version) is missing or hidden.
func (db *DB) SetAssistantVersion(ctx context.Context, id string, version int, now time.Time, filter graphserver.Filter) (*graphserver.Assistant, error) {
	defer db.assistantsChanged()
	var out *graphserver.Assistant
	err := db.write(ctx, func(tx *connTx) error {
		if _, err := getAssistant(ctx, tx, id, filter); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE assistants SET
			(graph_id, config, context, metadata, name, description, version, updated_at) =
			(SELECT graph_id, config, context, metadata, name, description, version, ? FROM assistant_versions
			 WHERE assistant_id = ? AND version = ?)
			WHERE assistant_id = ? AND EXISTS (SELECT 1 FROM assistant_versions WHERE assistant_id = ? AND version = ?)`,
			formatTime(now), id, version, id, id, version)
		if err != nil {
			return fmt.Errorf("set assistant version: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("set assistant version: %w", err)
		} else if n == 0 {
			return graphserver.Errorf(graphserver.ENOTFOUND, "Assistant %s has no version %d", id, version)
		}
		out, err = getAssistant(ctx, tx, id, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
