package vecrank_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver/internal/vecrank"
)

func TestRanking(t *testing.T) {
	t.Parallel()
	r := vecrank.New([]float32{1, 0})
	r.Add(1, vecrank.Encode([]float32{0, 1}))    // 0
	r.Add(2, vecrank.Encode([]float32{1, 1}))    // ~0.71
	r.Add(2, vecrank.Encode([]float32{1, 0}))    // 1: item 2's best vector counts
	r.Add(3, vecrank.Encode([]float32{1, 1}))    // ~0.71
	r.Add(4, vecrank.Encode([]float32{1, 0, 0})) // another size: 0

	page, skip, take := r.Page(0, 2)
	require.Equal(t, []int64{2, 3}, ids(page))
	require.Zero(t, take, "scored items fill the page")
	require.Zero(t, skip)

	page, skip, take = r.Page(3, 3)
	require.Equal(t, []int64{1}, ids(page), "equal scores: the newer id first (4, then 1)")
	require.Equal(t, 0, skip)
	require.Equal(t, 2, take, "two unscored items complete the page")
	scores := r.Scores(3, 3)
	require.NotNil(t, scores[0])
	require.Nil(t, scores[1])

	_, skip, take = r.Page(6, 2)
	require.Equal(t, 2, skip, "the unscored items before the page")
	require.Equal(t, 2, take)
}

func ids(p []vecrank.Scored) []int64 {
	var out []int64
	for _, s := range p {
		out = append(out, s.ID)
	}
	return out
}
