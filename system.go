package graphserver

import (
	"context"
	"maps"
	"slices"

	"github.com/google/uuid"
)

// systemAssistantNamespace is the UUID namespace LangGraph derives system
// assistant ids from.
var systemAssistantNamespace = uuid.MustParse("6ba7b821-9dad-11d1-80b4-00c04fd430c8")

// SystemAssistantID returns the id of the system assistant of a graph:
// UUIDv5(6ba7b821-9dad-11d1-80b4-00c04fd430c8, graphID).
func SystemAssistantID(graphID string) string {
	return uuid.NewSHA1(systemAssistantNamespace, []byte(graphID)).String()
}

// systemCreatedBy is the metadata.created_by of the system assistants.
const systemCreatedBy = "system"

// SystemAssistantFilter returns the Filter matching the system assistants
// (metadata {"created_by": "system"}): search with it to list them; the
// HTTP API's truncate keeps what it matches
// (driver.TruncateOptions.KeepAssistants).
func SystemAssistantFilter() Filter { return Filter{"created_by": systemCreatedBy} }

// ensureSystemAssistants creates one assistant per registered graph, leaving
// existing ones untouched.
func (s *Server) ensureSystemAssistants(ctx context.Context) error {
	now := s.clock()
	for graphID := range s.graphs {
		config, runtimeCtx := seedConfig(s.seeds[graphID])
		a := &Assistant{
			AssistantID: SystemAssistantID(graphID),
			GraphID:     graphID,
			Config:      config,
			Context:     runtimeCtx,
			Metadata:    Metadata{"created_by": systemCreatedBy},
			Name:        graphID,
			Version:     1,
			CreatedAt:   now,
			UpdatedAt:   now,
		}
		if _, err := s.storage.CreateAssistant(ctx, a, IfExistsDoNothing, nil); err != nil {
			return err
		}
	}
	return nil
}

// seedConfig splits a GraphConfigs entry into an assistant's config (every
// key but "context") and context (the "context" object). Both are new
// objects (shallow copies), never nil.
func seedConfig(seed Object) (config, runtimeCtx Object) {
	config, runtimeCtx = Object{}, Object{}
	for k, v := range seed.Clone() {
		if k == "context" {
			if c, ok := v.(map[string]any); ok {
				runtimeCtx = Object(c).Clone()
			} else if c, ok := v.(Object); ok {
				runtimeCtx = c.Clone()
			}
			continue
		}
		config[k] = v
	}
	return config, runtimeCtx
}

// Version is the graphserver version reported by GET /info.
const Version = "0.1.0-dev"

// Info is what GET /info reports: the version, and flags telling clients
// (LangGraph Studio reads them) which features this server offers.
type Info struct {
	Version string    `json:"version"`
	Context string    `json:"context"`
	Flags   InfoFlags `json:"flags"`
	Host    InfoHost  `json:"host"`
}

// InfoFlags are the feature flags of GET /info.
type InfoFlags struct {
	Assistants               bool `json:"assistants"`
	Crons                    bool `json:"crons"`
	Langsmith                bool `json:"langsmith"`
	LangsmithTracingReplicas bool `json:"langsmith_tracing_replicas"`
	// Auth is true when access control is on (Options.Auth): requests
	// other than /ok and /info need credentials.
	Auth bool `json:"auth"`
}

// InfoHost describes the deployment, in the Platform's shape; a self-hosted
// graphserver has no project, revision or tenant ids.
type InfoHost struct {
	Kind           string  `json:"kind"`
	ProjectID      *string `json:"project_id"`
	HostRevisionID *string `json:"host_revision_id"`
	RevisionID     *string `json:"revision_id"`
	TenantID       *string `json:"tenant_id"`
}

// Info reports the server's version and which features are on. It does no
// I/O and is safe for concurrent use.
func (s *Server) Info() *Info {
	return &Info{
		Version: Version,
		Context: "go",
		Flags: InfoFlags{
			Assistants:               true,
			Crons:                    true,
			Langsmith:                false,
			LangsmithTracingReplicas: true,
			Auth:                     s.auth != nil,
		},
		Host: InfoHost{Kind: "self-hosted"},
	}
}

// GraphIDs returns the ids of the graphs the server hosts (the keys of
// Options.Graphs), sorted. It does no I/O; the caller owns the slice.
func (s *Server) GraphIDs() []string {
	return slices.Sorted(maps.Keys(s.graphs))
}

// Ping checks that the storage answers, for health checks (GET /ok?check_db=1).
// It returns the storage's error and blocks until it answers or ctx ends.
func (s *Server) Ping(ctx context.Context) error {
	return s.storage.Ping(ctx)
}
