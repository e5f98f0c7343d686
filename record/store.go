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

// AppendJSON appends it's JSON encoding (json.Marshal's) to b; a nil it is
// null. A store item is the answer of GET /store/items: see
// Thread.AppendJSON.
func (it *Item) AppendJSON(b []byte) ([]byte, error) {
	if it == nil {
		return append(b, "null"...), nil
	}
	b, err := it.appendFields(append(b, '{'))
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendFields appends it's fields, without the closing brace.
func (it *Item) appendFields(b []byte) ([]byte, error) {
	var err error
	b = append(b, `"namespace":`...)
	if it.Namespace == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, label := range it.Namespace {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, label)
		}
		b = append(b, ']')
	}
	b = append(b, `,"key":`...)
	b = appendJSONString(b, it.Key)
	b = append(b, `,"value":`...)
	if b, err = it.Value.AppendJSON(b); err != nil {
		return nil, err
	}
	b = append(b, `,"created_at":`...)
	if b, err = appendJSONTime(b, it.CreatedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"updated_at":`...)
	return appendJSONTime(b, it.UpdatedAt)
}

// AppendJSON appends it's JSON encoding (json.Marshal's) to b; a nil it is
// null. (Without it, SearchItem would have Item's, which lacks the score.)
func (it *SearchItem) AppendJSON(b []byte) ([]byte, error) {
	if it == nil {
		return append(b, "null"...), nil
	}
	b, err := it.Item.appendFields(append(b, '{'))
	if err != nil {
		return nil, err
	}
	b = append(b, `,"score":`...)
	if it.Score == nil {
		return append(b, "null}"...), nil
	}
	if b, err = appendJSONFloat(b, *it.Score); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}
