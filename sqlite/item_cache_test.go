package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestItemCache checks the itemCache's rules: a write drops the items it
// names and no other; a row read before a write of its item (or of every
// item) is not kept; past itemCacheWrites remembered keys, reads older
// than the last write are refused whatever their item, while the kept
// rows stay.
func TestItemCache(t *testing.T) {
	t.Parallel()
	row := func(v string) *itemRow { return &itemRow{Value: v} }
	a, b := itemKey{"ns", "a"}, itemKey{"ns", "b"}
	newCache := func() *itemCache {
		return &itemCache{wrote: map[itemKey]int64{}, m: map[itemKey]*itemRow{}}
	}

	t.Run("AWriteDropsItsItemsOnly", func(t *testing.T) {
		t.Parallel()
		c := newCache()
		g := c.generation()
		c.put(a, row(`{"v":1}`), g)
		c.put(b, row(`{"v":2}`), g)
		c.changed(a)
		require.Nil(t, c.get(a))
		require.Equal(t, `{"v":2}`, c.get(b).Value)
		require.Equal(t, len(`{"v":2}`), c.bytes)
		c.changed()
		require.Nil(t, c.get(b), "a write naming no item drops them all")
		require.Zero(t, c.bytes)
	})

	t.Run("ARowReadBeforeAWriteIsNotKept", func(t *testing.T) {
		t.Parallel()
		c := newCache()
		g := c.generation() // a read starts
		c.changed(a)        // a write of a commits meanwhile
		c.put(a, row(`{"v":"old"}`), g)
		require.Nil(t, c.get(a), "the row may predate the write")
		c.put(b, row(`{"v":2}`), g)
		require.NotNil(t, c.get(b), "b was not written")
		c.put(a, row(`{"v":"new"}`), c.generation())
		require.Equal(t, `{"v":"new"}`, c.get(a).Value, "a read after the write is kept")

		g = c.generation()
		c.changed() // every item
		c.put(b, row(`{"v":"old"}`), g)
		require.Nil(t, c.get(b))
	})

	t.Run("ForgottenWritesRefuseOlderReads", func(t *testing.T) {
		t.Parallel()
		c := newCache()
		kept := itemKey{"ns", "kept"}
		c.put(kept, row(`1`), c.generation())
		g := c.generation() // a read of a starts
		for i := range itemCacheWrites + 1 {
			c.changed(itemKey{"other", fmt.Sprint(i)})
		}
		require.LessOrEqual(t, len(c.wrote), itemCacheWrites)
		c.put(a, row(`{"v":"old"}`), g)
		require.Nil(t, c.get(a), "a's write may be among those forgotten")
		require.NotNil(t, c.get(kept), "rows kept before stay")
		c.put(a, row(`{"v":1}`), c.generation())
		require.NotNil(t, c.get(a))
	})

	t.Run("Bounds", func(t *testing.T) {
		t.Parallel()
		c := newCache()
		big := make([]byte, itemCacheValueSize+1)
		c.put(a, row(string(big)), c.generation())
		require.Nil(t, c.get(a), "a value over itemCacheValueSize is not kept")
		for i := range itemCacheSize + 10 {
			c.put(itemKey{"ns", fmt.Sprint(i)}, row(`1`), c.generation())
		}
		require.Len(t, c.m, itemCacheSize)
		require.Equal(t, itemCacheSize, c.bytes)
	})
}

// TestItemCacheOfFile checks that the DBs of one file share its itemCache,
// and that the file's last DB closing drops it.
func TestItemCacheOfFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gs.db")
	db1, err := Open(path)
	require.NoError(t, err)
	db2, err := Open(path)
	require.NoError(t, err)
	require.Same(t, db1.items, db2.items)
	k := itemKey{"ns", "k"}
	db1.items.put(k, &itemRow{Value: `1`}, db1.items.generation())
	require.NoError(t, db1.Close())
	require.NotNil(t, db2.items.get(k), "db2 still has the file open")
	require.NoError(t, db2.Close())

	db3, err := Open(path)
	require.NoError(t, err)
	defer db3.Close()
	require.Nil(t, db3.items.get(k), "a new cache once every DB of the file closed")
	id, err := fileID(path)
	require.NoError(t, err)
	itemCaches.mu.Lock()
	defer itemCaches.mu.Unlock()
	require.Same(t, db3.items, itemCaches.m[id])
	require.Equal(t, 1, db3.items.refs)
}
