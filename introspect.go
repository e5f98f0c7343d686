package graphserver

import "context"

// assistantGraph reads an assistant (a graph id is accepted for its system
// assistant) and returns it with its registered graph.
func (s *Server) assistantGraph(ctx context.Context, id string) (*Assistant, Graph, error) {
	a, err := s.GetAssistant(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	g := s.graphs[a.GraphID]
	if g == nil {
		return nil, nil, Errorf(ENOTFOUND, "Graph %q of assistant %s is not registered.", a.GraphID, a.AssistantID)
	}
	return a, g, nil
}

// GetAssistantGraph draws the assistant's graph; xray > 0 expands subgraphs
// that many levels. It returns ENOTFOUND for a missing assistant and EINVALID
// for a negative xray.
func (s *Server) GetAssistantGraph(ctx context.Context, assistantID string, xray int) (*Drawing, error) {
	if xray < 0 {
		return nil, Errorf(EINVALID, "Invalid xray: must be a boolean or a non-negative integer")
	}
	a, g, err := s.assistantGraph(ctx, assistantID)
	if err != nil {
		return nil, err
	}
	return g.Drawing(ctx, a.Config, xray)
}

// GetAssistantSchemas returns the JSON Schemas of the assistant's graph. It
// returns ENOTFOUND for a missing assistant.
func (s *Server) GetAssistantSchemas(ctx context.Context, assistantID string) (*GraphSchemas, error) {
	a, g, err := s.assistantGraph(ctx, assistantID)
	if err != nil {
		return nil, err
	}
	sc, err := g.Schemas(ctx, a.Config)
	if err != nil {
		return nil, err
	}
	out := *sc
	out.GraphID = a.GraphID
	return &out, nil
}

// GetAssistantSubgraphs returns the schemas of the subgraphs of the
// assistant's graph by namespace, limited to namespace when non-empty and
// including nested levels when recurse is set. It returns ENOTFOUND for a
// missing assistant.
func (s *Server) GetAssistantSubgraphs(ctx context.Context, assistantID, namespace string, recurse bool) (map[string]*GraphSchemas, error) {
	a, g, err := s.assistantGraph(ctx, assistantID)
	if err != nil {
		return nil, err
	}
	return g.Subgraphs(ctx, a.Config, namespace, recurse)
}
