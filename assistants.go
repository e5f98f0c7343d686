package graphserver

import (
	"cmp"
	"context"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver/record"
)

// Assistant is a named configuration bound to a registered graph. Every
// change creates a new AssistantVersion; Version names the current one.
type Assistant = record.Assistant

// AssistantVersion is one saved version of an assistant.
type AssistantVersion = record.AssistantVersion

// IfExists says what a create does when the id is taken.
const (
	IfExistsRaise     = "raise"      // fail with ECONFLICT (the default)
	IfExistsDoNothing = "do_nothing" // return the existing resource unchanged
)

// AssistantCreate is the body of POST /assistants.
type AssistantCreate struct {
	AssistantID string   `json:"assistant_id,omitempty"` // generated when empty
	GraphID     string   `json:"graph_id"`
	Config      Object   `json:"config,omitempty"`
	Context     Object   `json:"context,omitempty"`
	Metadata    Metadata `json:"metadata,omitempty"`
	IfExists    string   `json:"if_exists,omitempty"` // raise (default) | do_nothing
	Name        string   `json:"name,omitempty"`      // default "Untitled"
	Description *string  `json:"description,omitempty"`
}

// AssistantPatch is the body of PATCH /assistants/{id}. Nil fields are left
// unchanged; Metadata is merged shallowly into the current metadata.
type AssistantPatch = record.AssistantPatch

// AssistantSearch selects assistants for search and count.
type AssistantSearch = record.AssistantSearch

// AssistantVersionSearch selects versions of one assistant.
type AssistantVersionSearch = record.AssistantVersionSearch

// assistantSortColumns are the values sort_by accepts on assistant search.
var assistantSortColumns = []string{"assistant_id", "graph_id", "name", "created_at", "updated_at"}

// assistantSelectColumns are the values select accepts on assistant search.
var assistantSelectColumns = []string{"assistant_id", "graph_id", "name", "description", "config", "context", "created_at", "updated_at", "metadata", "version"}

// resolveAssistantID maps an assistant id from the API to a stored id: a UUID
// in canonical form, or a registered graph id to its system assistant's id.
// Anything else is EINVALID.
func (s *Server) resolveAssistantID(id string) (string, error) {
	if _, ok := s.graphs[id]; ok {
		return SystemAssistantID(id), nil
	}
	if canon, err := parseUUID("assistant", id); err == nil {
		return canon, nil
	}
	return "", Errorf(EINVALID, "Invalid assistant ID: must be a UUID or a registered graph ID")
}

// checkGraph returns ENOTFOUND unless graphID names a registered graph.
func (s *Server) checkGraph(graphID string) error {
	if _, ok := s.graphs[graphID]; !ok {
		return Errorf(ENOTFOUND, "Graph %q not found", graphID)
	}
	return nil
}

// CreateAssistant creates an assistant (version 1) bound to a registered
// graph. An empty AssistantID gets a new UUID; an empty Name is "Untitled".
//
// It returns EINVALID when graph_id is missing, assistant_id is not a UUID or
// if_exists is not raise|do_nothing; EBADREQUEST when config.configurable and
// context are both set; ENOTFOUND when the graph is not registered; ECONFLICT
// when the id is taken and if_exists is raise (with do_nothing, the existing
// assistant is returned unchanged). It blocks on storage.
func (s *Server) CreateAssistant(ctx context.Context, c AssistantCreate) (*Assistant, error) {
	if c.GraphID == "" {
		return nil, Errorf(EINVALID, "graph_id is required")
	}
	id := uuid.NewString()
	if c.AssistantID != "" {
		var err error
		if id, err = parseUUID("assistant", c.AssistantID); err != nil {
			return nil, err
		}
	}
	if err := checkIfExists(&c.IfExists); err != nil {
		return nil, err
	}
	if err := checkConfigContext(c.Config, c.Context); err != nil {
		return nil, err
	}
	if err := s.checkGraph(c.GraphID); err != nil {
		return nil, err
	}
	filter, err := s.authFilter(ctx, "assistants", "create", &c)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	a := &Assistant{
		AssistantID: id,
		GraphID:     c.GraphID,
		Config:      c.Config.Clone(),
		Context:     c.Context.Clone(),
		Metadata:    c.Metadata.Clone(),
		Name:        cmp.Or(c.Name, "Untitled"),
		Description: c.Description,
		Version:     1,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	return s.storage.CreateAssistant(ctx, a, c.IfExists, filter)
}

// GetAssistant returns the assistant with the given id (a UUID or a
// registered graph id). It returns EINVALID for a malformed id and ENOTFOUND
// when the assistant does not exist or is hidden from the caller. It blocks
// on storage.
func (s *Server) GetAssistant(ctx context.Context, id string) (*Assistant, error) {
	id, err := s.resolveAssistantID(id)
	if err != nil {
		return nil, err
	}
	filter, err := s.authFilter(ctx, "assistants", "read", &AssistantRef{AssistantID: id})
	if err != nil {
		return nil, err
	}
	return s.storage.GetAssistant(ctx, id, filter)
}

// UpdateAssistant applies p as a new version of the assistant and makes it
// current; every call, even with an empty patch, creates a version. Metadata
// is merged shallowly; other nil fields are kept.
//
// It returns EINVALID for a malformed id, EBADREQUEST when config.configurable
// and context are both set, ENOTFOUND when the assistant is missing or p
// names an unregistered graph. It blocks on storage.
func (s *Server) UpdateAssistant(ctx context.Context, id string, p AssistantPatch) (*Assistant, error) {
	id, err := s.resolveAssistantID(id)
	if err != nil {
		return nil, err
	}
	if err := checkConfigContext(p.Config, p.Context); err != nil {
		return nil, err
	}
	if p.GraphID != nil {
		if err := s.checkGraph(*p.GraphID); err != nil {
			return nil, err
		}
	}
	u := &AssistantUpdate{AssistantID: id, AssistantPatch: p}
	filter, err := s.authFilter(ctx, "assistants", "update", u)
	if err != nil {
		return nil, err
	}
	p = u.AssistantPatch
	return s.storage.UpdateAssistant(ctx, id, &p, s.clock(), filter)
}

// DeleteAssistant deletes the assistant and its versions; with
// deleteThreads, also the threads whose metadata.assistant_id is its id
// that the caller may delete (threads:delete filter).
// It returns EINVALID for a malformed id and ENOTFOUND when the assistant is
// missing or hidden. It blocks on storage.
func (s *Server) DeleteAssistant(ctx context.Context, id string, deleteThreads bool) error {
	id, err := s.resolveAssistantID(id)
	if err != nil {
		return err
	}
	filter, err := s.authFilter(ctx, "assistants", "delete", &AssistantRef{AssistantID: id})
	if err != nil {
		return err
	}
	if !deleteThreads {
		return s.storage.DeleteAssistant(ctx, id, false, filter)
	}
	threadFilter, err := s.authFilter(ctx, "threads", "delete", &ThreadRef{})
	if err != nil {
		return err
	}
	if threadFilter != nil {
		return s.deleteAssistantFiltered(ctx, id, filter, threadFilter)
	}
	// The threads deleted are not known beforehand: their runs are stopped
	// and their streams ended after the deletion.
	return s.deleteThreads(ctx, nil, func() error { return s.storage.DeleteAssistant(ctx, id, true, filter) })
}

// deleteAssistantFiltered deletes an assistant with only the threads of it
// that threadFilter (the caller's threads:delete filter) lets the caller
// delete: the others, a tenant's own, stay. The assistant is checked first,
// so that a hidden one deletes nothing.
func (s *Server) deleteAssistantFiltered(ctx context.Context, id string, filter, threadFilter Filter) error {
	if _, err := s.storage.GetAssistant(ctx, id, filter); err != nil {
		return err
	}
	for {
		rows, err := s.storage.SearchThreads(ctx, &ThreadSearch{
			Metadata: Metadata{"assistant_id": id}, Filter: threadFilter,
			Limit: SearchLimitMax, SortBy: "thread_id", SortOrder: "asc", Select: []string{"thread_id"},
		})
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		ids := make([]string, len(rows))
		for i, t := range rows {
			ids[i] = t.ThreadID
		}
		var n int
		if err := s.deleteThreads(ctx, ids, func() (err error) {
			n, err = s.storage.PruneThreads(ctx, ids, PruneDelete, threadFilter)
			return err
		}); err != nil {
			return err
		} else if n == 0 {
			break // nothing more the caller may delete: never loop on it
		}
	}
	return s.storage.DeleteAssistant(ctx, id, false, filter)
}

// SearchAssistants returns one page of the assistants matching q, sorted by
// q.SortBy (default created_at) and q.SortOrder (default desc). Limit 0
// means SearchLimitDefault.
//
// It returns EINVALID when limit is outside 1..SearchLimitMax, offset is negative,
// or sort_by, sort_order or a select field is not one the API offers
// (assistantSortColumns, assistantSelectColumns). It blocks on storage.
func (s *Server) SearchAssistants(ctx context.Context, q AssistantSearch) (*Page[*Assistant], error) {
	if err := checkFilter("metadata", q.Metadata); err != nil {
		return nil, err
	}
	if err := checkPaging(&q.Limit, &q.Offset); err != nil {
		return nil, err
	}
	if err := checkSort(&q.SortBy, &q.SortOrder, "created_at", assistantSortColumns); err != nil {
		return nil, err
	}
	if err := checkSelect(q.Select, assistantSelectColumns); err != nil {
		return nil, err
	}
	filter, err := s.authFilter(ctx, "assistants", "search", &q)
	if err != nil {
		return nil, err
	}
	q.Filter = q.Filter.And(filter)
	rows, err := s.storage.SearchAssistants(ctx, &q)
	if err != nil {
		return nil, err
	}
	return newPage(rows, q.Limit, q.Offset, q.Select), nil
}

// CountAssistants counts the assistants matching q's metadata, graph_id and
// name; paging, sort and select are ignored. It blocks on storage.
func (s *Server) CountAssistants(ctx context.Context, q AssistantSearch) (int, error) {
	if err := checkFilter("metadata", q.Metadata); err != nil {
		return 0, err
	}
	filter, err := s.authFilter(ctx, "assistants", "search", &q)
	if err != nil {
		return 0, err
	}
	q.Filter = q.Filter.And(filter)
	return s.storage.CountAssistants(ctx, &q)
}

// ListAssistantVersions returns the versions of an assistant, newest first,
// filtered by q.Metadata and paged by q.Limit (0 means SearchLimitDefault) and
// q.Offset.
//
// It returns EINVALID for a malformed id or paging outside its bounds, and
// ENOTFOUND when no version matches (as the Platform does: an empty list is
// a 404). It blocks on storage.
func (s *Server) ListAssistantVersions(ctx context.Context, id string, q AssistantVersionSearch) ([]*AssistantVersion, error) {
	id, err := s.resolveAssistantID(id)
	if err != nil {
		return nil, err
	}
	if err := checkPaging(&q.Limit, &q.Offset); err != nil {
		return nil, err
	}
	if err := checkFilter("metadata", q.Metadata); err != nil {
		return nil, err
	}
	filter, err := s.authFilter(ctx, "assistants", "read", &AssistantRef{AssistantID: id})
	if err != nil {
		return nil, err
	}
	q.Filter = q.Filter.And(filter)
	versions, err := s.storage.ListAssistantVersions(ctx, id, &q)
	if err != nil {
		return nil, err
	}
	if len(versions) == 0 {
		return nil, Errorf(ENOTFOUND, "Assistant %s not found", id)
	}
	return versions, nil
}

// SetLatestAssistantVersion makes version the assistant's current one,
// copying its config, context, metadata, name and description back onto the
// assistant. It returns EINVALID for a malformed id or a version below 1, and
// ENOTFOUND when the assistant or the version is missing. It blocks on
// storage.
func (s *Server) SetLatestAssistantVersion(ctx context.Context, id string, version int) (*Assistant, error) {
	id, err := s.resolveAssistantID(id)
	if err != nil {
		return nil, err
	}
	if version < 1 {
		return nil, Errorf(EINVALID, "Invalid version %d: must be a positive integer", version)
	}
	filter, err := s.authFilter(ctx, "assistants", "update", &AssistantUpdate{AssistantID: id, Version: version})
	if err != nil {
		return nil, err
	}
	return s.storage.SetAssistantVersion(ctx, id, version, s.clock(), filter)
}
