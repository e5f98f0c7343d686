// Package embedtest holds HashEmbedder, a deterministic
// graphserver.Embedder for tests, benchmarks and examples. It is not part of
// graphserver's API: production code plugs in a real embedding model.
package embedtest

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"unicode"

	"github.com/graphserver/graphserver"
)

var _ graphserver.Embedder = HashEmbedder{}

// DimensionsDefault is the vector size of a HashEmbedder whose
// Dims is zero.
const DimensionsDefault = 256

// HashEmbedder is a deterministic graphserver.Embedder for tests and examples: it
// lower-cases a text, splits it into letter/digit tokens, hashes each token
// into one of Dims buckets and returns the normalised bucket counts. Texts
// sharing words get a positive cosine similarity; it knows nothing of meaning
// and never calls a network service. The zero value is ready to use.
type HashEmbedder struct {
	Dims int // vector size; 0 means DimensionsDefault
}

// Dimensions returns the vector size.
func (e HashEmbedder) Dimensions() int {
	if e.Dims <= 0 {
		return DimensionsDefault
	}
	return e.Dims
}

// Embed returns one unit vector per text (the zero vector for a text
// without tokens). It never fails unless ctx is done.
func (e HashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dims := e.Dimensions()
	out := make([][]float32, len(texts))
	for i, text := range texts {
		v := make([]float32, dims)
		for _, tok := range tokenize(text) {
			h := fnv.New32a()
			h.Write([]byte(tok))
			v[h.Sum32()%uint32(dims)]++
		}
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		if norm > 0 {
			n := float32(math.Sqrt(norm))
			for j := range v {
				v[j] /= n
			}
		}
		out[i] = v
	}
	return out, nil
}

// tokenize splits text into lower-case runs of letters and digits, the
// tokens HashEmbedder hashes.
func tokenize(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}
