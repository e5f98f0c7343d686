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
	type plain Thread
	if t.Interrupts == nil {
		t.Interrupts = map[string][]Interrupt{}
	}
	return json.Marshal(plain(t))
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
