package sqlite_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
)

// TestCheckpointCompactForm checks that engine-style checkpoints (UUIDv7 ids
// created at the id's millisecond) store their ids as 16 bytes and no
// created_at, and that other ids and times keep the plain form.
func TestCheckpointCompactForm(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	ctx := t.Context()
	_, err := db.CreateThread(ctx, &graphserver.Thread{ThreadID: "t1"}, "", nil)
	require.NoError(t, err)
	ms := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC).UnixMilli()
	v7 := func(ms int64) string {
		u := uuid.Must(uuid.NewV7())
		var ts [8]byte
		binary.BigEndian.PutUint64(ts[:], uint64(ms)<<16)
		copy(u[:6], ts[:6])
		return u.String()
	}
	a, b, c := v7(ms), v7(ms+1), v7(ms+2)
	for _, cp := range []*driver.CheckpointRecord{
		{ThreadID: "t1", CheckpointID: a, CreatedAt: time.UnixMilli(ms)},
		{ThreadID: "t1", CheckpointID: b, ParentCheckpointID: a, CreatedAt: time.UnixMilli(ms + 1).Add(time.Microsecond)},
		{ThreadID: "t1", CheckpointID: c, ParentCheckpointID: b, CreatedAt: time.UnixMilli(ms + 2)},
		{ThreadID: "t1", CheckpointID: "zz", ParentCheckpointID: c, CreatedAt: time.UnixMilli(ms + 3)},
	} {
		require.NoError(t, db.PutCheckpoint(ctx, cp))
	}
	forms, err := db.CheckpointForms(ctx, "t1")
	require.NoError(t, err)
	require.Equal(t, []string{"text blob text", "blob text null", "blob blob text", "blob blob null"}, forms)
}
