package graphserver

import (
	"context"

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

// ensureSystemAssistants creates one assistant per registered graph, leaving
// existing ones untouched.
func (s *Server) ensureSystemAssistants(ctx context.Context) error {
	now := s.clock()
	for graphID := range s.graphs {
		a := &Assistant{
			AssistantID: SystemAssistantID(graphID),
			GraphID:     graphID,
			Config:      Object{},
			Context:     Object{},
			Metadata:    Metadata{"created_by": "system"},
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
