package graphserver

import (
	"context"
)

// Embedder turns texts into vectors for semantic store search (the query of
// SearchItems). Set one in Options.Embedder; without one, query search ranks
// by full-text relevance instead.
//
// Implementations must be safe for concurrent use. Embed returns one vector of
// Dimensions() numbers per text, in order; an error fails the put or search
// that asked for it.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dimensions() int
}
