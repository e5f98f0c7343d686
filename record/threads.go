package record

import (
	"encoding/json"
	"time"
)

// Thread holds persistent graph state: a chain of checkpoints, and a summary
// of the latest one (Values, Interrupts, Status) kept for cheap reads and search.
type Thread struct {
	ThreadID       string                 `json:"thread_id"`
	CreatedAt      time.Time              `json:"created_at"`
	UpdatedAt      time.Time              `json:"updated_at"`
	StateUpdatedAt time.Time              `json:"state_updated_at"`
	Metadata       Metadata               `json:"metadata"`
	Config         Object                 `json:"config"`
	Context        Object                 `json:"context"`
	Status         string                 `json:"status"`
	Values         json.RawMessage        `json:"values"` // null before the first checkpoint
	Interrupts     map[string][]Interrupt `json:"interrupts"`
	Error          json.RawMessage        `json:"error"` // {"error","message"} when Status is error
	TTL            *ThreadTTLInfo         `json:"ttl,omitempty"`
	// Extracted holds the values a search's Extract paths found (alias ->
	// value, null when missing); only on SearchThreads results.
	Extracted map[string]any `json:"extracted,omitempty"`
}

// MarshalJSON writes a nil Interrupts map as {} as the LangGraph API requires.
func (t Thread) MarshalJSON() ([]byte, error) {
	return t.AppendJSON(make([]byte, 0, 512))
}

// AppendJSON appends t's JSON encoding (MarshalJSON's) to b; a nil t is
// null. It builds the object field by field: a thread is the answer of the
// busiest thread routes, and json.Marshal would encode it by reflection
// and then copy and check the result once more.
func (t *Thread) AppendJSON(b []byte) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, `{"thread_id":`...)
	b = appendJSONString(b, t.ThreadID)
	b = append(b, `,"created_at":`...)
	if b, err = appendJSONTime(b, t.CreatedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"updated_at":`...)
	if b, err = appendJSONTime(b, t.UpdatedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"state_updated_at":`...)
	if b, err = appendJSONTime(b, t.StateUpdatedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"metadata":`...)
	if b, err = t.Metadata.AppendJSON(b); err != nil {
		return nil, err
	}
	b = append(b, `,"config":`...)
	if b, err = t.Config.AppendJSON(b); err != nil {
		return nil, err
	}
	b = append(b, `,"context":`...)
	if b, err = t.Context.AppendJSON(b); err != nil {
		return nil, err
	}
	b = append(b, `,"status":`...)
	b = appendJSONString(b, t.Status)
	b = append(b, `,"values":`...)
	if b, err = appendJSONRaw(b, t.Values); err != nil {
		return nil, err
	}
	b = append(b, `,"interrupts":`...)
	if len(t.Interrupts) == 0 {
		b = append(b, '{', '}')
	} else if b, err = appendMarshal(b, t.Interrupts); err != nil {
		return nil, err
	}
	b = append(b, `,"error":`...)
	if b, err = appendJSONRaw(b, t.Error); err != nil {
		return nil, err
	}
	if t.TTL != nil {
		b = append(b, `,"ttl":`...)
		if b, err = appendMarshal(b, t.TTL); err != nil {
			return nil, err
		}
	}
	if len(t.Extracted) > 0 {
		b = append(b, `,"extracted":`...)
		if b, err = appendJSONMap(b, t.Extracted, 0); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// ThreadTTL asks for a thread to expire after Minutes of inactivity.
type ThreadTTL struct {
	Minutes  float64 `json:"ttl"`
	Strategy string  `json:"strategy,omitempty"` // delete (default) | keep_latest
}

// UnmarshalJSON accepts a bare number of minutes as well as {ttl, strategy}.
func (t *ThreadTTL) UnmarshalJSON(b []byte) error {
	var n float64
	if err := json.Unmarshal(b, &n); err == nil {
		*t = ThreadTTL{Minutes: n, Strategy: "delete"}
		return nil
	}
	type plain ThreadTTL
	return json.Unmarshal(b, (*plain)(t))
}

// ThreadTTLInfo is the ttl field of a Thread read with include=ttl.
type ThreadTTLInfo struct {
	Strategy   string     `json:"strategy"`
	TTLMinutes float64    `json:"ttl_minutes"`
	ExpiresAt  *time.Time `json:"expires_at"`
}

// Interrupt is a pending interrupt raised by a graph task.
type Interrupt struct {
	Value any    `json:"value"`
	ID    string `json:"id"`
}

// ThreadPatch is the body of PATCH /threads/{id}. Metadata is merged shallowly.
type ThreadPatch struct {
	Metadata Metadata   `json:"metadata,omitempty"`
	TTL      *ThreadTTL `json:"ttl,omitempty"`
}

// ThreadSearch selects threads for search and count.
type ThreadSearch struct {
	IDs       []string        `json:"ids,omitempty"`
	Metadata  Metadata        `json:"metadata,omitempty"` // containment
	Values    json.RawMessage `json:"values,omitempty"`   // containment on current values
	Status    string          `json:"status,omitempty"`
	Limit     int             `json:"limit,omitempty"`
	Offset    int             `json:"offset,omitempty"`
	SortBy    string          `json:"sort_by,omitempty"`
	SortOrder string          `json:"sort_order,omitempty"`
	Select    []string        `json:"select,omitempty"`
	// Extract maps aliases to paths evaluated on each thread found, such as
	// values.messages[-1].content (dotted keys, [index] for list items,
	// negative from the end), starting with values, metadata, config,
	// context or interrupts; at most ThreadExtractMax. The results are in
	// each thread's Extracted. Search only.
	Extract map[string]string `json:"extract,omitempty"`

	Filter Filter `json:"-"` // as AssistantSearch.Filter
}
