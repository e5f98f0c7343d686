package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/sqlite"
)

// putText puts the item key (namespace "texts") indexed on text.
func putText(t *testing.T, db *sqlite.DB, key, text string) {
	t.Helper()
	require.NoError(t, db.PutItem(t.Context(), &driver.ItemWrite{Namespace: []string{"texts"}, Key: key,
		Value: graphserver.Object{"text": text}, Now: time.Now(), Index: []driver.ItemIndexEntry{{Path: "text", Text: text}}}))
}

// searchKeys returns the keys of the items a full-text search for query
// finds.
func searchKeys(t *testing.T, db *sqlite.DB, query string) []string {
	t.Helper()
	items, err := db.SearchItems(t.Context(), &driver.ItemQuery{Query: query, Limit: 10, Now: time.Now()})
	require.NoError(t, err)
	keys := []string{}
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return keys
}

// TestStoreTextsIndexedLater: a put's text waits to be indexed with others,
// but a full-text search always finds every committed put as it is now:
// replaced and deleted texts no longer match, whether they were indexed
// already or still waiting, and texts left waiting by a closed DB are
// indexed by the next one.
func TestStoreTextsIndexedLater(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gs.db")
	db, err := sqlite.Open(path)
	require.NoError(t, err)

	putText(t, db, "a", "alpha apple")
	require.Equal(t, []string{"a"}, searchKeys(t, db, "alpha"))
	n, err := db.WaitingTexts(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "a search indexes the waiting texts first")

	putText(t, db, "a", "charlie cherry") // replaces an indexed text
	putText(t, db, "b", "bravo banana")
	putText(t, db, "b", "delta date") // replaces a text that may still wait
	putText(t, db, "c", "foxtrot fig")
	require.NoError(t, db.DeleteItem(t.Context(), []string{"texts"}, "c"))
	putText(t, db, "d", "golf grape") // may take the deleted item's id
	require.Empty(t, searchKeys(t, db, "alpha"))
	require.Empty(t, searchKeys(t, db, "bravo"))
	require.Empty(t, searchKeys(t, db, "foxtrot"))
	require.Equal(t, []string{"a"}, searchKeys(t, db, "cherry"))
	require.Equal(t, []string{"b"}, searchKeys(t, db, "delta"))
	require.Equal(t, []string{"d"}, searchKeys(t, db, "golf"))

	putText(t, db, "e", "echo elder")
	require.NoError(t, db.Close())
	db, err = sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	// The new DB's indexer indexes what the closed one left waiting,
	// without a search asking.
	require.Eventually(t, func() bool {
		n, err := db.WaitingTexts(context.Background())
		return err == nil && n == 0
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"e"}, searchKeys(t, db, "echo"))
}
