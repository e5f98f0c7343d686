package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/jsoncol"
)

// assistantRow is an assistants (or assistant_versions) row.
type assistantRow struct {
	AssistantID string     `db:"assistant_id"`
	GraphID     string     `db:"graph_id"`
	Config      string     `db:"config"`
	Context     string     `db:"context"`
	Metadata    string     `db:"metadata"`
	Name        string     `db:"name"`
	Description *string    `db:"description"`
	Version     int        `db:"version"`
	CreatedAt   time.Time  `db:"created_at"`
	UpdatedAt   *time.Time `db:"updated_at"`
}

const assistantColumns = `assistant_id, graph_id, config, context, metadata, name, description, version, created_at, updated_at`

func (r *assistantRow) assistant() (*graphserver.Assistant, error) {
	a := &graphserver.Assistant{AssistantID: r.AssistantID, GraphID: r.GraphID, Name: r.Name, Version: r.Version,
		Description: r.Description, CreatedAt: utc(r.CreatedAt)}
	if r.UpdatedAt != nil {
		a.UpdatedAt = utc(*r.UpdatedAt)
	}
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
	return a, nil
}

// assistantArgs are the encoded columns of a.
type assistantArgs struct {
	config, context, metadata string
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
	return e, nil
}

func assistantNotFound(id string) error {
	return graphserver.Errorf(graphserver.ENOTFOUND, "Assistant %s not found", id)
}

// getAssistant reads one assistant visible through filter; forUpdate locks
// its row.
func getAssistant(ctx context.Context, q querier, id string, filter graphserver.Filter, forUpdate bool) (*graphserver.Assistant, error) {
	var w where
	w.add("assistant_id = ?", id)
	if err := w.filter("metadata", filter); err != nil {
		return nil, err
	}
	lock := ""
	if forUpdate {
		lock = " FOR NO KEY UPDATE"
	}
	r, err := getRow[assistantRow](ctx, q, `SELECT `+assistantColumns+` FROM assistants`+w.String()+lock, w.args...)
	if errors.Is(err, pgx.ErrNoRows) {
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
	err = db.tx(ctx, func(tx pgx.Tx) error {
		n, err := exec(ctx, tx, `INSERT INTO assistants (`+assistantColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
			ON CONFLICT (assistant_id) DO NOTHING`,
			a.AssistantID, a.GraphID, e.config, e.context, e.metadata, a.Name, a.Description, created, updated)
		if err != nil {
			return fmt.Errorf("insert assistant: %w", err)
		}
		if n == 0 {
			conflict := graphserver.Errorf(graphserver.ECONFLICT, "Assistant %s already exists", a.AssistantID)
			if ifExists != graphserver.IfExistsDoNothing {
				return conflict
			}
			out, err = getAssistant(ctx, tx, a.AssistantID, filter, false)
			if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
				return conflict
			}
			return err
		}
		if _, err := exec(ctx, tx, insertAssistantVersion, a.AssistantID, 1, a.GraphID, e.config, e.context, e.metadata,
			a.Name, a.Description, created); err != nil {
			return fmt.Errorf("insert assistant version: %w", err)
		}
		out, err = getAssistant(ctx, tx, a.AssistantID, nil, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetAssistant implements driver.AssistantStorage.
func (db *DB) GetAssistant(ctx context.Context, id string, filter graphserver.Filter) (*graphserver.Assistant, error) {
	a, err := getAssistant(ctx, db.pool, id, filter, false)
	return a, translate(err)
}

// UpdateAssistant implements driver.AssistantStorage: the patch becomes
// version max+1 and current; metadata is merged shallowly, other given
// fields replace the current ones.
func (db *DB) UpdateAssistant(ctx context.Context, id string, patch *graphserver.AssistantPatch, now time.Time, filter graphserver.Filter) (*graphserver.Assistant, error) {
	if patch == nil {
		patch = &graphserver.AssistantPatch{}
	}
	var out *graphserver.Assistant
	err := db.tx(ctx, func(tx pgx.Tx) error {
		a, err := getAssistant(ctx, tx, id, filter, true)
		if err != nil {
			return err
		}
		maxVersion, err := scalar[int](ctx, tx, `SELECT coalesce(max(version), 0) FROM assistant_versions WHERE assistant_id = ?`, id)
		if err != nil {
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
		e, err := encodeAssistant(a)
		if err != nil {
			return err
		}
		if _, err := exec(ctx, tx, insertAssistantVersion, id, a.Version, a.GraphID, e.config, e.context, e.metadata,
			a.Name, a.Description, now); err != nil {
			return fmt.Errorf("insert assistant version: %w", err)
		}
		if _, err := exec(ctx, tx, `UPDATE assistants SET graph_id = ?, config = ?, context = ?, metadata = ?, name = ?,
			description = ?, version = ?, updated_at = ? WHERE assistant_id = ?`,
			a.GraphID, e.config, e.context, e.metadata, a.Name, a.Description, a.Version, now, id); err != nil {
			return fmt.Errorf("update assistant: %w", err)
		}
		out, err = getAssistant(ctx, tx, id, nil, false)
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
	return db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := getAssistant(ctx, tx, id, filter, true); err != nil {
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
			if _, err := exec(ctx, tx, `DELETE FROM threads`+w.String(), w.args...); err != nil {
				return fmt.Errorf("delete assistant threads: %w", err)
			}
		}
		if _, err := exec(ctx, tx, `DELETE FROM assistants WHERE assistant_id = ?`, id); err != nil {
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

func assistantSearchWhere(s *graphserver.AssistantSearch) (*where, error) {
	w := &where{}
	if s.GraphID != "" {
		w.add("graph_id = ?", s.GraphID)
	}
	if s.Name != "" {
		w.add("strpos(lower(name), lower(?)) > 0", s.Name)
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
	rows, err := selectRows[assistantRow](ctx, db.pool, `SELECT `+assistantColumns+` FROM assistants`+w.String()+
		orderBy(assistantSorts, s.SortBy, s.SortOrder, "created_at", "assistant_id")+lim, append(w.args, largs...)...)
	if err != nil {
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
	n, err := scalar[int](ctx, db.pool, `SELECT count(*) FROM assistants`+w.String(), w.args...)
	if err != nil {
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
	err := db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := getAssistant(ctx, tx, id, s.Filter, false); err != nil {
			return err
		}
		var w where
		w.add("assistant_id = ?", id)
		if err := w.contains("metadata", s.Metadata); err != nil {
			return err
		}
		lim, largs := limitOffset(s.Limit, s.Offset, false)
		rows, err := selectRows[assistantRow](ctx, tx, `SELECT assistant_id, version, graph_id, config, context, metadata, name,
			description, created_at FROM assistant_versions`+w.String()+` ORDER BY version DESC`+lim, append(w.args, largs...)...)
		if err != nil {
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
	var out *graphserver.Assistant
	err := db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := getAssistant(ctx, tx, id, filter, true); err != nil {
			return err
		}
		n, err := exec(ctx, tx, `UPDATE assistants AS a SET graph_id = v.graph_id, config = v.config, context = v.context,
			metadata = v.metadata, name = v.name, description = v.description, version = v.version, updated_at = ?
			FROM assistant_versions AS v WHERE a.assistant_id = ? AND v.assistant_id = a.assistant_id AND v.version = ?`,
			now, id, version)
		if err != nil {
			return fmt.Errorf("set assistant version: %w", err)
		}
		if n == 0 {
			return graphserver.Errorf(graphserver.ENOTFOUND, "Assistant %s has no version %d", id, version)
		}
		out, err = getAssistant(ctx, tx, id, nil, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
