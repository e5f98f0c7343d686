package sqlite

import (
	"context"
	"errors"
	"time"

	"github.com/graphserver/graphserver"
)

var errTODO = errors.New("sqlite: not implemented yet")

// CreateThread implements graphserver.ThreadStorage.
func (db *DB) CreateThread(ctx context.Context, t *graphserver.Thread, ifExists string, filter graphserver.Filter) (*graphserver.Thread, error) {
	return nil, errTODO
}

// GetThread implements graphserver.ThreadStorage.
func (db *DB) GetThread(ctx context.Context, id string, filter graphserver.Filter) (*graphserver.Thread, error) {
	return nil, errTODO
}

// UpdateThread implements graphserver.ThreadStorage.
func (db *DB) UpdateThread(ctx context.Context, id string, patch *graphserver.ThreadPatch, now time.Time, filter graphserver.Filter) (*graphserver.Thread, error) {
	return nil, errTODO
}

// DeleteThread implements graphserver.ThreadStorage.
func (db *DB) DeleteThread(ctx context.Context, id string, filter graphserver.Filter) error {
	return errTODO
}

// SearchThreads implements graphserver.ThreadStorage.
func (db *DB) SearchThreads(ctx context.Context, s *graphserver.ThreadSearch) ([]*graphserver.Thread, error) {
	return nil, errTODO
}

// CountThreads implements graphserver.ThreadStorage.
func (db *DB) CountThreads(ctx context.Context, s *graphserver.ThreadSearch) (int, error) {
	return 0, errTODO
}

// CopyThread implements graphserver.ThreadStorage.
func (db *DB) CopyThread(ctx context.Context, sourceID, newID string, now time.Time, filter graphserver.Filter) (*graphserver.Thread, error) {
	return nil, errTODO
}

// PruneThreads implements graphserver.ThreadStorage.
func (db *DB) PruneThreads(ctx context.Context, ids []string, strategy string, filter graphserver.Filter) (int, error) {
	return 0, errTODO
}

// SetThreadSummary implements graphserver.ThreadStorage.
func (db *DB) SetThreadSummary(ctx context.Context, id string, s *graphserver.ThreadSummary, now time.Time) error {
	return errTODO
}
