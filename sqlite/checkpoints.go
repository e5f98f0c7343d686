package sqlite

import (
	"context"

	"github.com/graphserver/graphserver"
)

// PutCheckpoint implements graphserver.Checkpointer.
func (db *DB) PutCheckpoint(ctx context.Context, cp *graphserver.CheckpointRecord) error {
	return errTODO
}

// PutWrites implements graphserver.Checkpointer.
func (db *DB) PutWrites(ctx context.Context, threadID, ns, checkpointID, taskID string, writes []graphserver.PendingWrite) error {
	return errTODO
}

// GetCheckpoint implements graphserver.Checkpointer.
func (db *DB) GetCheckpoint(ctx context.Context, threadID, ns, checkpointID string) (*graphserver.CheckpointRecord, error) {
	return nil, errTODO
}

// ListCheckpoints implements graphserver.Checkpointer.
func (db *DB) ListCheckpoints(ctx context.Context, threadID string, opts graphserver.CheckpointListOptions) ([]*graphserver.CheckpointRecord, error) {
	return nil, errTODO
}
