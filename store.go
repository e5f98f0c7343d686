package graphserver

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/record"
)

// Item is a JSON object stored under a namespace path and a key.
type Item = record.Item

// SearchItem is an Item returned by a search; Score is set by query searches.
type SearchItem = record.SearchItem

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
	Filter     map[string]any `json:"filter,omitempty"` // value-field conditions: exact match or $eq $ne $gt $gte $lt $lte
	Limit      int            `json:"limit,omitempty"`  // default 10
	Offset     int            `json:"offset,omitempty"`
	Query      string         `json:"query,omitempty"` // ranked search over indexed fields
	RefreshTTL *bool          `json:"refresh_ttl,omitempty"`
}

// NamespaceList selects namespaces for ListNamespaces.
type NamespaceList struct {
	Prefix   []string `json:"prefix,omitempty"` // "*" matches any label
	Suffix   []string `json:"suffix,omitempty"`
	MaxDepth int      `json:"max_depth,omitempty"` // 0 = no limit
	Limit    int      `json:"limit,omitempty"`     // default 100
	Offset   int      `json:"offset,omitempty"`
}

// Store defaults and bounds.
const (
	// ItemSearchLimitDefault is the page size of SearchItems without a limit.
	ItemSearchLimitDefault = 10
	// NamespaceListLimitDefault is the page size of ListNamespaces without a
	// limit.
	NamespaceListLimitDefault = 100
	// StoreLimitMax is the largest limit SearchItems and ListNamespaces accept.
	StoreLimitMax = 1000
	// StoreSweepIntervalDefault is the default Options.StoreSweepInterval.
	StoreSweepIntervalDefault = time.Minute
)

const (
	storeWildcard               = "*"
	storeNamespaceSeparator     = "."
	storeIndexWholeValue        = "$"
	storeMessageInvalidNS       = `Invalid namespace: it must be a non-empty list of non-empty labels, none containing "."`
	storeMessageInvalidPrefixNS = `Invalid namespace: labels must be non-empty and must not contain "."`
)

// ItemPut is the body of PUT /store/items.
type ItemPut struct {
	Namespace []string `json:"namespace"`
	Key       string   `json:"key"`
	// Value is the item's JSON object (required).
	Value Object `json:"value"`
	// Index says which fields of Value query search ranks on; nil indexes
	// the fields in Options.StoreIndexFields.
	Index *ItemIndex `json:"index,omitempty"`
	// TTL is minutes until the item expires, counted from its last write (or
	// refreshing read); nil uses Options.StoreDefaultTTL.
	TTL *float64 `json:"ttl,omitempty"`
}

// ItemIndex is the index field of an ItemPut: false on the wire (Disabled)
// indexes nothing, a list of JSON paths indexes those fields, and null or
// true index the server's default fields.
//
// A path names fields by dotted keys, with [n] for an array element and [*]
// for every element ("content", "sections[*].text"); "$" is the whole value.
type ItemIndex struct {
	Disabled bool
	Fields   []string
}

// UnmarshalJSON accepts false, true, null or a list of paths.
func (x *ItemIndex) UnmarshalJSON(b []byte) error {
	var on bool
	if err := json.Unmarshal(b, &on); err == nil {
		*x = ItemIndex{Disabled: !on}
		return nil
	}
	var fields []string
	if err := json.Unmarshal(b, &fields); err != nil {
		return Errorf(EINVALID, "index must be false, null or a list of JSON paths")
	}
	*x = ItemIndex{Fields: fields}
	return nil
}

// MarshalJSON writes false, null or the list of paths.
func (x ItemIndex) MarshalJSON() ([]byte, error) {
	if x.Disabled {
		return []byte("false"), nil
	} else if x.Fields == nil {
		return []byte("null"), nil
	}
	return json.Marshal(x.Fields)
}

// ItemDelete is the body of DELETE /store/items.
type ItemDelete struct {
	Namespace []string `json:"namespace"`
	Key       string   `json:"key"`
}

// ItemSearchRequest is the body of POST /store/items/search.
type ItemSearchRequest struct {
	NamespacePrefix []string `json:"namespace_prefix"` // may be empty: every item
	ItemSearch
}

// Filter operators of store search.
var itemFilterOps = []string{"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}

// itemConfig is the store part of Options, with defaults applied.
type itemConfig struct {
	embedder      Embedder
	indexFields   []string
	defaultTTL    time.Duration
	sweepInterval time.Duration

	drain     chan struct{} // closed by beginDrain: the sweeper stops
	drainOnce *sync.Once
}

func newItemConfig(opts Options) itemConfig {
	c := itemConfig{
		embedder:      opts.Embedder,
		indexFields:   opts.StoreIndexFields,
		defaultTTL:    opts.StoreDefaultTTL,
		sweepInterval: opts.StoreSweepInterval,
		drain:         make(chan struct{}),
		drainOnce:     new(sync.Once),
	}
	return c
}

// beginDrain stops the sweeper.
func (c itemConfig) beginDrain() {
	if c.drainOnce != nil {
		c.drainOnce.Do(func() { close(c.drain) })
	}
}

// itemClock returns the current time in UTC at millisecond precision, the
// precision of item timestamps.
func (s *Server) itemClock() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// PutItem creates or replaces an item. It keeps the created_at of an item it
// replaces and gives each put of an item a later updated_at (by at least a
// millisecond). Index and TTL default to Options.StoreIndexFields and
// Options.StoreDefaultTTL. With an Embedder, the indexed fields are embedded
// before anything is written; an embedder failure writes nothing.
//
// It returns EINVALID for an invalid namespace (empty, an empty label, a
// label containing "."), an empty key, a missing value, a TTL that is not a
// positive number of minutes, or an invalid index path.
func (s *Server) PutItem(ctx context.Context, p ItemPut) error {
	st := s.storage
	if err := validateNamespace(p.Namespace); err != nil {
		return err
	} else if p.Key == "" {
		return Errorf(EINVALID, "key is required")
	} else if p.Value == nil {
		return Errorf(EINVALID, "value is required and must be a JSON object")
	}
	ttl := s.itemCfg.defaultTTL
	if p.TTL != nil {
		if err := checkTTLMinutes("ttl", *p.TTL); err != nil {
			return err
		}
		ttl = time.Duration(*p.TTL * float64(time.Minute))
	}
	fields := s.itemCfg.indexFields
	if p.Index != nil {
		if p.Index.Disabled {
			fields = nil
		} else if p.Index.Fields != nil {
			fields = p.Index.Fields
		}
	}
	sr := &StoreRequest{Namespace: slices.Clone(p.Namespace), Key: p.Key, Value: p.Value}
	f, err := s.storeAuth(ctx, "put", sr)
	if err != nil {
		return err
	}
	if sr.Value != nil {
		p.Value = sr.Value // as the handler left it
	}
	if ok, err := matchItem(p.Namespace, p.Key, p.Value, f); err != nil {
		return err
	} else if !ok {
		return Forbidden("Not authorized to write this item.")
	}
	// Work on a canonical copy: the caller keeps its map, and the indexed
	// texts are those of the stored JSON.
	value, err := canonicalObject(p.Value)
	if err != nil {
		return err
	}
	index, err := indexEntries(value, fields)
	if err != nil {
		return err
	}
	if err := s.embedEntries(ctx, index); err != nil {
		return err
	}
	return st.PutItem(ctx, &driver.ItemWrite{
		Namespace: slices.Clone(p.Namespace),
		Key:       p.Key,
		Value:     value,
		Now:       s.itemClock(),
		TTL:       ttl,
		Index:     index,
	})
}

// embedEntries sets the Vector of each entry when an Embedder is configured.
func (s *Server) embedEntries(ctx context.Context, index []driver.ItemIndexEntry) error {
	if s.itemCfg.embedder == nil || len(index) == 0 {
		return nil
	}
	texts := make([]string, len(index))
	for i, e := range index {
		texts[i] = e.Text
	}
	vectors, err := s.embed(ctx, texts)
	if err != nil {
		return err
	}
	for i := range index {
		index[i].Vector = vectors[i]
	}
	return nil
}

// embed calls the Embedder and checks the shape of its answer.
func (s *Server) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vectors, err := s.itemCfg.embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed %d texts: %w", len(texts), err)
	} else if len(vectors) != len(texts) {
		return nil, fmt.Errorf("embed %d texts: the embedder returned %d vectors", len(texts), len(vectors))
	}
	return vectors, nil
}

// GetItem returns the item at namespace and key, or nil (and no error) when
// there is none or it has expired. refreshTTL (nil means true) moves the
// expiry of an item that has a TTL to now + TTL.
//
// It returns EBADREQUEST "Key is required" for an empty key and EINVALID for
// an invalid namespace.
func (s *Server) GetItem(ctx context.Context, namespace []string, key string, refreshTTL *bool) (*Item, error) {
	st := s.storage
	if key == "" {
		return nil, Errorf(EBADREQUEST, "Key is required")
	} else if err := validateNamespace(namespace); err != nil {
		return nil, err
	}
	refresh := refreshTTL == nil || *refreshTTL
	f, err := s.storeKeyAuth(ctx, "get", namespace, key)
	if err != nil {
		return nil, err
	}
	if ok, err := matchItem(namespace, key, nil, keysOnly(f)); err != nil || !ok {
		return nil, err // hidden: as missing
	}
	it, err := st.GetItem(ctx, namespace, key, s.itemClock(), refresh)
	if ErrorCode(err) == ENOTFOUND {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if ok, err := matchItem(it.Namespace, it.Key, it.Value, f); err != nil || !ok {
		return nil, err
	}
	return it, nil
}

// DeleteItem deletes the item at namespace and key; deleting a missing item
// is not an error. It returns EINVALID for an invalid namespace or an empty
// key.
func (s *Server) DeleteItem(ctx context.Context, namespace []string, key string) error {
	st := s.storage
	if err := validateNamespace(namespace); err != nil {
		return err
	} else if key == "" {
		return Errorf(EINVALID, "key is required")
	}
	f, err := s.storeKeyAuth(ctx, "delete", namespace, key)
	if err != nil {
		return err
	}
	if ok, err := matchItem(namespace, key, nil, keysOnly(f)); err != nil || !ok {
		return err // hidden: as missing, and deleting a missing item does nothing
	}
	if len(f) > len(keysOnly(f)) {
		// Conditions on the value: the item decides. Read without
		// refreshing its TTL, as the delete would not.
		it, err := st.GetItem(ctx, namespace, key, s.itemClock(), false)
		if ErrorCode(err) == ENOTFOUND {
			return nil
		} else if err != nil {
			return err
		}
		if ok, err := matchItem(it.Namespace, it.Key, it.Value, f); err != nil || !ok {
			return err
		}
	}
	return st.DeleteItem(ctx, namespace, key)
}

// SearchItems returns the items whose namespace starts with
// req.NamespacePrefix (label by label: ["a"] matches ["a"] and ["a","b"],
// not ["ab"]) and whose value matches req.Filter, skipping req.Offset and
// returning at most req.Limit (default 10, at most 1000).
//
// Without a query, items come newest updated_at first. With req.Query and an
// Embedder, items are ranked by the cosine similarity of their indexed
// fields (the best field counts) to the query, which is their Score; items
// not indexed follow with a nil Score. With req.Query and no Embedder, only
// items whose indexed text matches the query are returned, ranked by SQLite
// FTS5 relevance, Score being bm25 mapped into [0, 1) (higher is better).
// RefreshTTL (nil means true) refreshes the TTL of the returned items.
//
// A filter maps top-level value fields to a JSON value (equal to it) or to an
// object of operators $eq $ne $gt $gte $lt $lte, ANDed; {"$and": [filter,
// ...]} ANDs whole filters. It returns EINVALID for a bad filter, limit,
// offset or prefix label.
func (s *Server) SearchItems(ctx context.Context, req ItemSearchRequest) ([]SearchItem, error) {
	st := s.storage
	for _, l := range req.NamespacePrefix {
		if l == "" || strings.Contains(l, storeNamespaceSeparator) {
			return nil, Errorf(EINVALID, "%s", storeMessageInvalidPrefixNS)
		}
	}
	limit, err := storeLimit(req.Limit, ItemSearchLimitDefault, req.Offset)
	if err != nil {
		return nil, err
	}
	if err := checkFilter("store", req.Filter); err != nil {
		return nil, err
	}
	conds, err := parseItemFilter(req.Filter)
	if err != nil {
		return nil, err
	}
	authz, err := s.storeAuth(ctx, "search", &StoreRequest{Namespace: slices.Clone(req.NamespacePrefix), Filter: req.Filter,
		Limit: limit, Offset: req.Offset, Query: req.Query})
	if err != nil {
		return nil, err
	}
	labels, rest, err := namespaceLabels(authz)
	if err != nil {
		return nil, err
	}
	authConds, err := parseItemFilter(rest)
	if err != nil {
		return nil, fmt.Errorf("store access filter: %w", err)
	}
	conds = append(conds, authConds...)
	q := &driver.ItemQuery{
		NamespacePrefix: slices.Clone(req.NamespacePrefix),
		NamespaceLabels: labels,
		Conditions:      conds,
		Limit:           limit,
		Offset:          req.Offset,
		Now:             s.itemClock(),
		RefreshTTL:      req.RefreshTTL == nil || *req.RefreshTTL,
	}
	if strings.TrimSpace(req.Query) != "" {
		q.Query = req.Query
		if s.itemCfg.embedder != nil {
			vectors, err := s.embed(ctx, []string{req.Query})
			if err != nil {
				return nil, err
			}
			q.Vector = vectors[0]
		}
	}
	items, err := st.SearchItems(ctx, q)
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []SearchItem{}
	}
	return items, nil
}

// ListNamespaces returns the distinct namespaces of the stored items that
// match req.Prefix (leading labels) and req.Suffix (trailing labels), where a
// "*" label matches any label, each truncated to req.MaxDepth labels when
// set and de-duplicated, sorted label by label, then paged by req.Offset and
// req.Limit (default 100, at most 1000). It returns EINVALID for a bad
// limit, offset, max_depth or label.
func (s *Server) ListNamespaces(ctx context.Context, req NamespaceList) ([][]string, error) {
	st := s.storage
	for _, l := range slices.Concat(req.Prefix, req.Suffix) {
		if l == "" || strings.Contains(l, storeNamespaceSeparator) {
			return nil, Errorf(EINVALID, "%s", storeMessageInvalidPrefixNS)
		}
	}
	limit, err := storeLimit(req.Limit, NamespaceListLimitDefault, req.Offset)
	if err != nil {
		return nil, err
	} else if req.MaxDepth < 0 {
		return nil, Errorf(EINVALID, "max_depth must be a positive integer or null")
	}
	authz, err := s.storeAuth(ctx, "list_namespaces", &StoreRequest{Namespace: slices.Clone(req.Prefix), Suffix: slices.Clone(req.Suffix),
		MaxDepth: req.MaxDepth, Limit: limit, Offset: req.Offset})
	if err != nil {
		return nil, err
	}
	labels, rest, err := namespaceLabels(authz)
	if err != nil {
		return nil, err
	}
	// The labels before the first wildcard narrow the query; the rest is
	// matched here.
	literal := req.Prefix
	if i := slices.Index(literal, storeWildcard); i >= 0 {
		literal = literal[:i]
	}
	var all [][]string
	if len(rest) == 0 {
		all, err = st.ListItemNamespaces(ctx, slices.Clone(literal), s.itemClock())
	} else {
		all, err = s.namespacesOfMatchingItems(ctx, literal, labels, rest)
	}
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, ns := range all {
		if !labelsMatch(ns, req.Prefix, false) || !labelsMatch(ns, req.Suffix, true) || !hasLabels(ns, labels) {
			continue
		}
		if req.MaxDepth > 0 && len(ns) > req.MaxDepth {
			ns = ns[:req.MaxDepth]
		}
		out = append(out, ns)
	}
	slices.SortFunc(out, slices.Compare)
	out = slices.CompactFunc(out, slices.Equal)
	if req.Offset >= len(out) {
		return [][]string{}, nil
	}
	out = out[req.Offset:]
	return out[:min(limit, len(out))], nil
}

// namespacesOfMatchingItems lists the namespaces under prefix, holding
// labels, of the items whose values match the access filter conditions
// authz: a caller sees a namespace only through an item it may read. It
// reads the matching items page by page, without refreshing their TTLs.
func (s *Server) namespacesOfMatchingItems(ctx context.Context, prefix, labels []string, authz Filter) ([][]string, error) {
	conds, err := parseItemFilter(authz)
	if err != nil {
		return nil, fmt.Errorf("store access filter: %w", err)
	}
	seen := map[string]bool{}
	var out [][]string
	const page = SearchLimitMax
	for offset := 0; ; offset += page {
		items, err := s.storage.SearchItems(ctx, &driver.ItemQuery{
			NamespacePrefix: slices.Clone(prefix),
			NamespaceLabels: labels,
			Conditions:      conds,
			Limit:           page,
			Offset:          offset,
			Now:             s.itemClock(),
		})
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if k := strings.Join(it.Namespace, "\x00"); !seen[k] {
				seen[k] = true
				out = append(out, it.Namespace)
			}
		}
		if len(items) < page {
			return out, nil
		}
	}
}

// storeAuth asks the access-control hook (authFilter) about a store action.
// The filter it returns applies to an item as the document {...value,
// "namespace": [labels], "key": key}: "namespace" conditions hold the
// labels the namespace must contain ($contains, or a list by containment),
// other keys are value fields.
func (s *Server) storeAuth(ctx context.Context, action string, value *StoreRequest) (Filter, error) {
	return s.authFilter(ctx, "store", action, value)
}

// storeKeyAuth is storeAuth for an action on the item at namespace and key
// (get, delete); without an Auth it builds no request.
func (s *Server) storeKeyAuth(ctx context.Context, action string, namespace []string, key string) (Filter, error) {
	if s.auth == nil {
		return nil, nil
	}
	return s.storeAuth(ctx, action, &StoreRequest{Namespace: slices.Clone(namespace), Key: key})
}

// keysOnly returns the conditions of f on "namespace" and "key", the ones
// known before an item is read.
func keysOnly(f Filter) Filter {
	var out Filter
	for k, v := range f {
		if k == "namespace" || k == "key" {
			if out == nil {
				out = Filter{}
			}
			out[k] = v
		}
	}
	return out
}

// matchItem reports whether the item at namespace and key, with value,
// matches the store access filter f.
func matchItem(namespace []string, key string, value Object, f Filter) (bool, error) {
	if len(f) == 0 {
		return true, nil
	}
	doc := map[string]any{}
	for k, v := range value {
		doc[k] = v
	}
	ns := make([]any, len(namespace))
	for i, l := range namespace {
		ns[i] = l
	}
	doc["namespace"], doc["key"] = ns, key
	return matchFilter(doc, f)
}

// namespaceLabels splits a store access filter into the labels its
// "namespace" condition requires and the other conditions. A "namespace"
// condition is {"$contains": label | [labels]}, {"$eq": [labels]} or
// [labels] (containment: the namespace holds them all), or a label; a
// "key" condition cannot narrow a search or a listing (EINTERNAL: the
// handler asked for what the store cannot do).
func namespaceLabels(f Filter) ([]string, Filter, error) {
	var labels []string
	var rest Filter
	for k, v := range f {
		switch k {
		case "namespace":
			c, err := canonicalJSON(v)
			if err != nil {
				return nil, nil, err
			}
			if ops, ok := operatorObject(c); ok {
				if len(ops) != 1 {
					return nil, nil, Errorf(EINTERNAL, "A store access filter on namespace takes one operator.")
				}
				for op, arg := range ops {
					if op != "$contains" && op != "$eq" {
						return nil, nil, Errorf(EINTERNAL, "The store access filter operator %q is not supported on namespace.", op)
					}
					c = arg
				}
			}
			switch c := c.(type) {
			case string:
				labels = append(labels, c)
			case []any:
				for _, e := range c {
					l, ok := e.(string)
					if !ok {
						return nil, nil, Errorf(EINTERNAL, "A store access filter on namespace takes labels (strings).")
					}
					labels = append(labels, l)
				}
			default:
				return nil, nil, Errorf(EINTERNAL, "A store access filter on namespace takes labels (strings).")
			}
		case "key":
			return nil, nil, Errorf(EINTERNAL, "Store access filters on key are not supported on searches and listings.")
		default:
			if rest == nil {
				rest = Filter{}
			}
			rest[k] = v
		}
	}
	return labels, rest, nil
}

// hasLabels reports whether ns holds every label of labels.
func hasLabels(ns, labels []string) bool {
	for _, l := range labels {
		if !slices.Contains(ns, l) {
			return false
		}
	}
	return true
}

// labelsMatch reports whether ns starts (or, with atEnd, ends) with pattern,
// a "*" label in pattern matching any label.
func labelsMatch(ns, pattern []string, atEnd bool) bool {
	if len(pattern) > len(ns) {
		return false
	}
	if atEnd {
		ns = ns[len(ns)-len(pattern):]
	}
	for i, p := range pattern {
		if p != storeWildcard && p != ns[i] {
			return false
		}
	}
	return true
}

// storeLimit validates limit and offset and applies the default limit.
func storeLimit(limit, def, offset int) (int, error) {
	if limit < 0 || limit > StoreLimitMax {
		return 0, Errorf(EINVALID, "limit must be between 1 and %d", StoreLimitMax)
	} else if offset < 0 {
		return 0, Errorf(EINVALID, "offset must be 0 or more")
	}
	return cmp.Or(limit, def), nil
}

// validateNamespace checks an item's namespace.
func validateNamespace(ns []string) error {
	if len(ns) == 0 {
		return Errorf(EINVALID, "%s", storeMessageInvalidNS)
	}
	for _, l := range ns {
		if l == "" || strings.Contains(l, storeNamespaceSeparator) {
			return Errorf(EINVALID, "%s", storeMessageInvalidNS)
		}
	}
	return nil
}

// ParseNamespace splits a namespace written with labels joined by "." (the
// form GET /store/items takes) into labels; "" gives no labels.
func ParseNamespace(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, storeNamespaceSeparator)
}

// canonicalObject returns a deep copy of v as decoded JSON (numbers become
// float64), or EINVALID if v cannot be encoded as JSON.
func canonicalObject(v Object) (Object, error) {
	// A value decoded from a request body is canonical already: copying it
	// is what encoding and decoding it again would give, for much less.
	if c, ok := copyCanonical(map[string]any(v), 0); ok {
		return Object(c.(map[string]any)), nil
	}
	b, err := json.Marshal(map[string]any(v))
	if err != nil {
		return nil, Errorf(EINVALID, "value cannot be encoded as JSON: %v", err)
	}
	var out Object
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode item value: %w", err)
	}
	return out, nil
}

// copyCanonicalDepthMax is how deep copyCanonical copies before it leaves
// a value to the JSON round trip (which reports cyclic values).
const copyCanonicalDepthMax = 100

// copyCanonical returns a deep copy of v when v holds only what decoding
// JSON yields and encoding it again keeps as it is: nil, bools, finite
// float64s, valid UTF-8 strings, and non-nil map[string]any and []any of
// those. ok is false for anything else (an int, a struct, a nil map, NaN),
// which only a round trip through JSON makes canonical.
func copyCanonical(v any, depth int) (c any, ok bool) {
	if depth > copyCanonicalDepthMax {
		return nil, false
	}
	switch v := v.(type) {
	case nil, bool:
		return v, true
	case float64:
		return v, !math.IsInf(v, 0) && !math.IsNaN(v)
	case string:
		return v, utf8.ValidString(v)
	case map[string]any:
		if v == nil {
			return nil, false
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			if !utf8.ValidString(k) {
				return nil, false
			}
			if out[k], ok = copyCanonical(e, depth+1); !ok {
				return nil, false
			}
		}
		return out, true
	case []any:
		if v == nil {
			return nil, false
		}
		out := make([]any, len(v))
		for i, e := range v {
			if out[i], ok = copyCanonical(e, depth+1); !ok {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

// canonicalJSON returns v as decoded JSON (string, float64, bool, nil,
// map[string]any or []any).
func canonicalJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, Errorf(EINVALID, "filter value cannot be encoded as JSON: %v", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode filter value: %w", err)
	}
	return out, nil
}

// parseItemFilter turns a store search filter into conditions.
func parseItemFilter(f map[string]any) ([]driver.ItemCondition, error) {
	var out []driver.ItemCondition
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, field := range keys {
		raw := f[field]
		if field == "$and" {
			v, err := canonicalJSON(raw)
			if err != nil {
				return nil, err
			}
			list, ok := v.([]any)
			if !ok {
				return nil, Errorf(EINVALID, "filter: $and takes a list of filters")
			}
			for _, sub := range list {
				m, ok := sub.(map[string]any)
				if !ok {
					return nil, Errorf(EINVALID, "filter: $and takes a list of filters")
				}
				conds, err := parseItemFilter(m)
				if err != nil {
					return nil, err
				}
				out = append(out, conds...)
			}
			continue
		}
		if field == "" || strings.HasPrefix(field, "$") || strings.ContainsAny(field, `"\`) {
			return nil, Errorf(EINVALID, "filter: %q is not a field name (operators go inside a field's object; names must not contain quotes or backslashes)", field)
		}
		v, err := canonicalJSON(raw)
		if err != nil {
			return nil, err
		}
		ops, isOps := operatorObject(v)
		if !isOps {
			out = append(out, driver.ItemCondition{Field: field, Op: "$eq", Value: v})
			continue
		}
		opNames := make([]string, 0, len(ops))
		for op := range ops {
			opNames = append(opNames, op)
		}
		slices.Sort(opNames)
		for _, op := range opNames {
			operand := ops[op]
			if !slices.Contains(itemFilterOps, op) {
				return nil, Errorf(EINVALID, "filter: unknown operator %q on %q; use one of %s", op, field, strings.Join(itemFilterOps, " "))
			}
			switch op {
			case "$gt", "$gte", "$lt", "$lte":
				switch operand.(type) {
				case float64, string:
				default:
					return nil, Errorf(EINVALID, "filter: %s on %q takes a number or a string", op, field)
				}
			}
			out = append(out, driver.ItemCondition{Field: field, Op: op, Value: operand})
		}
	}
	return out, nil
}

// operatorObject reports whether v is a non-empty object whose keys all
// start with "$" (an object of operators). Any other object, one mixing
// operators and fields included, is compared as a plain value.
func operatorObject(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return nil, false
	}
	for k := range m {
		if !strings.HasPrefix(k, "$") {
			return nil, false
		}
	}
	return m, true
}

// indexEntries returns the texts of value at the given paths. A path matching
// nothing contributes nothing.
func indexEntries(value Object, paths []string) ([]driver.ItemIndexEntry, error) {
	var out []driver.ItemIndexEntry
	for _, p := range paths {
		segs, err := parseIndexPath(p)
		if err != nil {
			return nil, err
		}
		var found []any
		collectPath(map[string]any(value), segs, &found)
		for _, v := range found {
			text, ok := v.(string)
			if !ok {
				var b []byte
				var err error
				if m, isMap := v.(map[string]any); isMap && m != nil {
					b, err = Object(m).AppendJSON(nil) // json.Marshal's text, without reflection ("$", the default)
				} else {
					b, err = json.Marshal(v)
				}
				if err != nil {
					return nil, fmt.Errorf("encode indexed field %s: %w", p, err)
				}
				text = string(b)
			}
			out = append(out, driver.ItemIndexEntry{Path: p, Text: text})
		}
	}
	return out, nil
}

// pathSeg is one step of an index path: a key, an array index, or every
// array element (all).
type pathSeg struct {
	key   string
	index int
	isKey bool
	all   bool
}

// parseIndexPath parses "a.b[0].c[*]" (an optional leading "$." or "$").
func parseIndexPath(p string) ([]pathSeg, error) {
	bad := Errorf(EINVALID, "index: %q is not a valid path (use dotted keys with [n] or [*], or $ for the whole value)", p)
	rest := strings.TrimPrefix(strings.TrimPrefix(p, storeIndexWholeValue), ".")
	if p == "" {
		return nil, bad
	}
	var segs []pathSeg
	for rest != "" {
		switch {
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, bad
			}
			inner := rest[1:end]
			if inner == "*" {
				segs = append(segs, pathSeg{all: true})
			} else {
				n, err := strconv.Atoi(inner)
				if err != nil {
					return nil, bad
				}
				segs = append(segs, pathSeg{index: n})
			}
			rest = rest[end+1:]
			if strings.HasPrefix(rest, ".") {
				rest = rest[1:]
				if rest == "" {
					return nil, bad
				}
			}
		default:
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return nil, bad
			}
			segs = append(segs, pathSeg{key: rest[:end], isKey: true})
			rest = rest[end:]
			if strings.HasPrefix(rest, ".") {
				rest = rest[1:]
				if rest == "" {
					return nil, bad
				}
			}
		}
	}
	return segs, nil
}

// collectPath appends the values at segs below v to out.
func collectPath(v any, segs []pathSeg, out *[]any) {
	if len(segs) == 0 {
		if v != nil {
			*out = append(*out, v)
		}
		return
	}
	seg := segs[0]
	switch {
	case seg.isKey:
		if m, ok := v.(map[string]any); ok {
			if child, ok := m[seg.key]; ok {
				collectPath(child, segs[1:], out)
			}
		}
	case seg.all:
		if a, ok := v.([]any); ok {
			for _, child := range a {
				collectPath(child, segs[1:], out)
			}
		}
	default:
		if a, ok := v.([]any); ok {
			i := seg.index
			if i < 0 {
				i += len(a)
			}
			if i >= 0 && i < len(a) {
				collectPath(a[i], segs[1:], out)
			}
		}
	}
}

// Store returns the server's item store as the Store graphs get in
// GraphRun.Store: the same items the API serves, with the same rules,
// default index fields, default TTL and TTL refresh on reads.
func (s *Server) Store() Store { return serverStore{s} }

// serverStore adapts the Server's store methods to the Store interface. A
// graph's store is not subject to access control (as in LangGraph): the
// graph decides which namespaces it uses, from the user it is given.
type serverStore struct{ s *Server }

func (v serverStore) GetItem(ctx context.Context, namespace []string, key string) (*Item, error) {
	return v.s.GetItem(systemContext(ctx), namespace, key, nil)
}

func (v serverStore) PutItem(ctx context.Context, namespace []string, key string, value Object) error {
	if value == nil {
		value = Object{}
	}
	return v.s.PutItem(systemContext(ctx), ItemPut{Namespace: namespace, Key: key, Value: value})
}

func (v serverStore) DeleteItem(ctx context.Context, namespace []string, key string) error {
	return v.s.DeleteItem(systemContext(ctx), namespace, key)
}

func (v serverStore) SearchItems(ctx context.Context, prefix []string, opts ItemSearch) ([]SearchItem, error) {
	return v.s.SearchItems(systemContext(ctx), ItemSearchRequest{NamespacePrefix: prefix, ItemSearch: opts})
}

func (v serverStore) ListNamespaces(ctx context.Context, opts NamespaceList) ([][]string, error) {
	return v.s.ListNamespaces(systemContext(ctx), opts)
}

// sweepItems deletes expired items every sweep interval until ctx ends or
// the server begins draining.
func (s *Server) sweepItems(ctx context.Context) {
	s.every(ctx, s.itemCfg.sweepInterval, func(ctx context.Context) {
		s.logSweep(ctx, "expired store items", func() (int, error) { return s.SweepItems(ctx) })
		s.logSweep(ctx, "expired threads", func() (int, error) { return s.SweepThreads(ctx) })
	})
}

// logSweep runs one sweep and logs what it did.
func (s *Server) logSweep(ctx context.Context, what string, sweep func() (int, error)) {
	if n, err := sweep(); err != nil {
		if ctx.Err() == nil {
			s.logger.Error("sweep "+what, "err", err)
		}
	} else if n > 0 {
		s.logger.Debug("swept "+what, "count", n)
	}
}

// SweepItems deletes the store items that have expired and returns how many
// it deleted. Start runs it every Options.StoreSweepInterval; expired items
// are invisible before they are swept.
func (s *Server) SweepItems(ctx context.Context) (int, error) {
	return s.storage.DeleteExpiredItems(ctx, s.itemClock())
}
