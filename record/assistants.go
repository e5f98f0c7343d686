package record

import "time"

// Assistant is a named configuration bound to a registered graph. Every
// change creates a new AssistantVersion; Version names the current one.
type Assistant struct {
	AssistantID string    `json:"assistant_id"`
	GraphID     string    `json:"graph_id"`
	Config      Object    `json:"config"`
	Context     Object    `json:"context"`
	Metadata    Metadata  `json:"metadata"`
	Name        string    `json:"name"`
	Description *string   `json:"description"`
	Version     int       `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// AssistantVersion is one saved version of an assistant.
type AssistantVersion struct {
	AssistantID string    `json:"assistant_id"`
	Version     int       `json:"version"`
	GraphID     string    `json:"graph_id"`
	Config      Object    `json:"config"`
	Context     Object    `json:"context"`
	Metadata    Metadata  `json:"metadata"`
	Name        string    `json:"name"`
	Description *string   `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

// AssistantPatch is the body of PATCH /assistants/{id}. Nil fields are left
// unchanged; Metadata is merged shallowly into the current metadata.
type AssistantPatch struct {
	GraphID     *string  `json:"graph_id,omitempty"`
	Config      Object   `json:"config,omitempty"`
	Context     Object   `json:"context,omitempty"`
	Metadata    Metadata `json:"metadata,omitempty"`
	Name        *string  `json:"name,omitempty"`
	Description *string  `json:"description,omitempty"`
}

// AssistantSearch selects assistants for search and count.
type AssistantSearch struct {
	Metadata  Metadata `json:"metadata,omitempty"` // containment match
	GraphID   string   `json:"graph_id,omitempty"`
	Name      string   `json:"name,omitempty"` // case-insensitive substring
	Limit     int      `json:"limit,omitempty"`
	Offset    int      `json:"offset,omitempty"`
	SortBy    string   `json:"sort_by,omitempty"`    // assistant_id|graph_id|name|created_at|updated_at
	SortOrder string   `json:"sort_order,omitempty"` // asc|desc
	Select    []string `json:"select,omitempty"`

	// Filter narrows by metadata with Filter operators. In-process callers
	// may set it; the Server ANDs the caller's access-control filter onto it.
	// It is not settable over HTTP.
	Filter Filter `json:"-"`
}

// AssistantVersionSearch selects versions of one assistant.
type AssistantVersionSearch struct {
	Metadata Metadata `json:"metadata,omitempty"`
	Limit    int      `json:"limit,omitempty"`
	Offset   int      `json:"offset,omitempty"`
	Filter   Filter   `json:"-"` // as AssistantSearch.Filter
}
