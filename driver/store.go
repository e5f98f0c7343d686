package driver

import (
	"context"
	"time"

	"github.com/graphserver/graphserver/record"
)

// ItemStorage persists store items. Namespaces reach it validated (at least
// one label, no empty label, no "."), and times are UTC with millisecond
// precision.
type ItemStorage interface {
	// PutItem inserts or replaces the item w describes and replaces its index
	// entries with w.Index. It keeps the created_at of an item it replaces
	// (expired or not) and sets updated_at to w.Now or, when w.Now is not
	// later than the stored updated_at, to that plus one millisecond, so that
	// successive puts of an item get strictly increasing times.
	PutItem(ctx context.Context, w *ItemWrite) error
	// GetItem returns the item, or ENOTFOUND when there is none or it has
	// expired at now. With refresh, it first moves the expiry of an item that
	// has a TTL to now + TTL.
	GetItem(ctx context.Context, namespace []string, key string, now time.Time, refresh bool) (*record.Item, error)
	// DeleteItem deletes the item and its index entries; a missing item is
	// not an error.
	DeleteItem(ctx context.Context, namespace []string, key string) error
	// SearchItems returns the page q.Offset, q.Limit of the items matching q
	// that have not expired at q.Now: ranked by cosine similarity to
	// q.Vector when set (items without vectors follow, unscored), else by
	// full-text relevance to q.Query when set (only matching items), else
	// newest updated_at first. With q.RefreshTTL it moves the expiry of the
	// returned items that have a TTL to q.Now + TTL.
	SearchItems(ctx context.Context, q *ItemQuery) ([]record.SearchItem, error)
	// ListItemNamespaces returns the distinct namespaces of the items under
	// prefix (every item when prefix is empty) that have not expired at now,
	// in no particular order.
	ListItemNamespaces(ctx context.Context, prefix []string, now time.Time) ([][]string, error)
	// DeleteExpiredItems deletes the items expired at now and returns how
	// many it deleted.
	DeleteExpiredItems(ctx context.Context, now time.Time) (int, error)
}

// ItemWrite is an item as PutItem stores it.
type ItemWrite struct {
	Namespace []string
	Key       string
	Value     record.Object
	Now       time.Time
	TTL       time.Duration // 0: never expires; else expires at Now + TTL
	Index     []ItemIndexEntry
}

// ItemIndexEntry is one indexed text of an item: the text at Path, and its
// embedding when an Embedder is configured.
type ItemIndexEntry struct {
	Path   string
	Text   string
	Vector []float32
}

// ItemQuery selects items for ItemStorage.SearchItems.
type ItemQuery struct {
	NamespacePrefix []string // a namespace matches when it starts with these labels
	// NamespaceLabels, from access control, restricts the search to the
	// namespaces holding every one of these labels, at any position.
	NamespaceLabels []string
	Conditions      []ItemCondition
	Query           string    // full-text query (when Vector is nil)
	Vector          []float32 // query embedding
	Limit           int
	Offset          int
	Now             time.Time
	RefreshTTL      bool
}

// ItemCondition is one condition of a store search filter, on a top-level
// field of the value. Op is one of "$eq", "$ne", "$gt", "$gte", "$lt",
// "$lte". Value is a decoded JSON value (string, float64, bool, nil,
// map[string]any or []any); the ordering operators only get a float64 or a
// string, and compare values of the same JSON type only. $eq needs the same
// JSON type and value; $ne matches wherever $eq does not, missing fields
// included.
type ItemCondition struct {
	Field string
	Op    string
	Value any
}
