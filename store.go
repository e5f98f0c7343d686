package graphserver

import (
	"context"
	"time"
)

// Item is a JSON object stored under a namespace path and a key.
type Item struct {
	Namespace []string  `json:"namespace"`
	Key       string    `json:"key"`
	Value     Object    `json:"value"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SearchItem is an Item returned by a search; Score is set by query searches.
type SearchItem struct {
	Item
	Score *float64 `json:"score"`
}

// Store is the cross-thread key-value store graphs read and write through
// their runtime, and that the API exposes under /store. The server's own
// implementation enforces namespace rules, TTLs and indexing; a nil Store in
// a GraphRun means the graph has none.
type Store interface {
	// GetItem returns the item, or nil (and no error) when there is none.
	GetItem(ctx context.Context, namespace []string, key string) (*Item, error)
	// PutItem creates or replaces the item.
	PutItem(ctx context.Context, namespace []string, key string, value Object) error
	// DeleteItem deletes the item; deleting a missing item is not an error.
	DeleteItem(ctx context.Context, namespace []string, key string) error
	// SearchItems returns items under a namespace prefix.
	SearchItems(ctx context.Context, prefix []string, opts ItemSearch) ([]SearchItem, error)
	// ListNamespaces lists distinct namespaces.
	ListNamespaces(ctx context.Context, opts NamespaceList) ([][]string, error)
}

// ItemSearch selects items for SearchItems.
type ItemSearch struct {
	Filter     map[string]any // value-field conditions: exact match or $eq $ne $gt $gte $lt $lte
	Limit      int            // default 10
	Offset     int
	Query      string // ranked search over indexed fields
	RefreshTTL *bool
}

// NamespaceList selects namespaces for ListNamespaces.
type NamespaceList struct {
	Prefix   []string // "*" matches any label
	Suffix   []string
	MaxDepth int // 0 = no limit
	Limit    int // default 100
	Offset   int
}
