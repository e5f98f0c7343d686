// Package vecrank ranks store items by the cosine similarity of their
// stored vectors to a query vector, for the storage drivers' vector
// searches: the encoding of a vector column, the score, and the ranking and
// paging that both drivers apply alike (scored items first, best first, then
// the unscored ones).
package vecrank

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
)

// Encode renders a vector as little-endian float32s, the stored form.
func Encode(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Cosine returns the cosine similarity of q and the encoded vector b (of the
// same size), 0 when either is zero or the sizes differ.
func Cosine(q []float32, b []byte) float64 {
	if len(b) != 4*len(q) {
		return 0
	}
	var dot, nq, nb float64
	for i, x := range q {
		y := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		dot += float64(x) * y
		nq += float64(x) * float64(x)
		nb += y * y
	}
	if nq == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(nq*nb)
}

// Scored is an item id with its best score.
type Scored struct {
	ID    int64
	Score float64
}

// Ranking collects the scores of a query's vectors, read in item id order
// (an item may have several vectors: its best one counts).
type Ranking struct {
	q      []float32
	ranked []Scored
}

// New returns an empty ranking for query vector q.
func New(q []float32) *Ranking { return &Ranking{q: q} }

// Add scores the encoded vector of item id. Calls come in id order.
func (r *Ranking) Add(id int64, vector []byte) {
	s := Cosine(r.q, vector)
	if n := len(r.ranked); n > 0 && r.ranked[n-1].ID == id {
		r.ranked[n-1].Score = max(r.ranked[n-1].Score, s)
	} else {
		r.ranked = append(r.ranked, Scored{id, s})
	}
}

// Page sorts the ranking (best score first, then the newer id) and returns
// the scored items of the page at offset with limit items, and how many
// unscored items the page takes after them (take) past the first skip
// unscored ones; take is 0 when scored items fill the page.
func (r *Ranking) Page(offset, limit int) (page []Scored, skip, take int) {
	slices.SortStableFunc(r.ranked, func(a, b Scored) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(b.ID, a.ID))
	})
	end := offset + limit
	n := len(r.ranked)
	page = r.ranked[min(offset, n):min(end, n)]
	if end <= n {
		return page, 0, 0
	}
	return page, max(offset-n, 0), end - max(offset, n)
}

// Scores returns the score of each of the page's rows, rows being the page's
// scored items followed by its unscored ones (nil scores).
func (r *Ranking) Scores(offset, rows int) []*float64 {
	scores := make([]*float64, rows)
	for i := range scores {
		if j := offset + i; j < len(r.ranked) {
			s := r.ranked[j].Score
			scores[i] = &s
		}
	}
	return scores
}

// Reset empties the ranking, for a transaction run again.
func (r *Ranking) Reset() { r.ranked = r.ranked[:0] }
