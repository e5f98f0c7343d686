package sqlite

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFormatTime checks formatTime against time.Format, on edge dates and
// random instants in and out of the years it writes itself.
func TestFormatTime(t *testing.T) {
	t.Parallel()
	paris := time.FixedZone("CET", 3600)
	times := []time.Time{
		{},
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 1, 12, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 23, 30, 0, 1500, paris), // another day in UTC
		time.Date(2025, 6, 1, 8, 9, 10, 123456789, time.UTC),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		times = append(times, time.Unix(rng.Int64N(400_000_000_000)-200_000_000_000, rng.Int64N(1e9)))
	}
	for _, tm := range times {
		require.Equal(t, tm.UTC().Format(TimeFormat), formatTime(tm), "%v", tm)
	}
}
