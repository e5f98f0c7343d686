package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/graphserver/graphserver"
)

// formatTime renders t for a timestamp column (see TimeFormat), into a
// buffer on the stack: every write and every read of an expiring row
// formats its clock, and this makes the string its one allocation.
func formatTime(t time.Time) string {
	var b [len(TimeFormat) + 8]byte
	return string(t.UTC().AppendFormat(b[:0], TimeFormat))
}

// parseTime reads a timestamp column.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}

// nullTime renders an optional timestamp (nil = NULL).
func nullTime(t *time.Time) sql.NullString {
	if t == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: formatTime(*t), Valid: true}
}

// parseNullTime reads an optional timestamp column.
func parseNullTime(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := parseTime(s.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// nullString is s as a nullable column: nil is NULL.
func nullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

// rawOrNil reads an optional raw JSON column: NULL gives nil.
func rawOrNil(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

// normalizeJSON turns any Go value (Object, []string, ints, json.Number, ...)
// into the plain form encoding/json decodes to: map[string]any, []any,
// string, float64, bool or nil.
func normalizeJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, graphserver.Errorf(graphserver.EINVALID, "The filter value cannot be encoded as JSON: %v.", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("normalize json: %w", err)
	}
	return out, nil
}
