package record

import "time"

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
