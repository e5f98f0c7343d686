package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRun runs every row briefly against an in-process server and checks
// the table: each row measured (a failed request fails the run).
func TestRun(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"-inprocess", "-n", "40", "-clients", "2", "-subscribers", "20", "-log-level", "error"}, &out, io.Discard)
	require.NoError(t, err)
	table := out.String()
	for _, sc := range scenarios {
		require.Contains(t, table, "| "+sc.name+" | ", table)
	}
	require.Contains(t, table, "| 20 idle joined SSE subscribers: server RSS | 20 joined in ", table)
	require.NotContains(t, table, "| 0/s", table)
	require.Contains(t, table, "s in all for quiet servers before measurements", table)
	require.Contains(t, table, "| the box's limit, in this run, before and after the rows | rate |", table)
	// Each row as a fraction of net/http alone measured around it.
	require.Contains(t, table, "| CPU/req | graphserver ÷ net/http alone around it |\n", table)
	for _, sc := range scenarios {
		require.Regexp(t, `\| `+regexp.QuoteMeta(sc.name)+` \| .* \| [0-9.]+%(–[0-9.]+%)? \|\n`, table)
	}
	// Measured twice (before and after), the limits are ranges unless the
	// two agree to the printed digit.
	require.Regexp(t, `\| `+regexp.QuoteMeta(limitHTTP)+` \| [0-9]+/s(–[0-9]+/s)? \| [0-9.]+ ms(–[0-9.]+ ms)? \|`, table)
	require.Regexp(t, `\| `+regexp.QuoteMeta(limitSQLite)+` \| [0-9]+/s(–[0-9]+/s)? \| [0-9.]+ ms(–[0-9.]+ ms)? \|`, table)
}

// TestLimitsOnly measures only the box's limits: no row of the server's
// table, and the limits table with both rows.
func TestLimitsOnly(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"-inprocess", "-n", "30", "-clients", "2", "-only", "limits", "-log-level", "error"}, &out, io.Discard)
	require.NoError(t, err)
	table := out.String()
	require.NotContains(t, table, "| scenario |", table)
	require.Contains(t, table, "| the box's limit, in this run | rate | p50 | p99 | CPU/req |", table)
	require.Contains(t, table, "| "+limitHTTP+" | ", table)
	require.Contains(t, table, "| "+limitSQLite+" | ", table)
}

// TestRunAgainst measures two servers and prints their ratio.
func TestRunAgainst(t *testing.T) {
	var out bytes.Buffer
	other, err := startTarget(t.Context(), &options{inProcess: true, clients: 2}, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, other.stop()) })
	err = run(t.Context(), []string{"-inprocess", "-n", "20", "-clients", "2", "-subscribers", "0", "-only", "threads",
		"-js", other.base, "-js-name", "other", "-repeat", "2"}, &out, io.Discard)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Equal(t, "| scenario | graphserver | p50 | p99 | CPU/req | other | p50 | p99 | CPU/req | graphserver ÷ other | graphserver ÷ net/http alone around it |", lines[len(lines)-3])
	require.Regexp(t, `^\| POST /threads \| .* \| [0-9.]+× rate, [0-9.]+× faster p50(, [0-9.]+× less CPU)? \| [0-9.]+%(–[0-9.]+%)? \|$`, lines[len(lines)-1])
}

// TestNoLimits: with -limits=false, neither the limits table nor the
// column of fractions of net/http alone.
func TestNoLimits(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"-inprocess", "-n", "20", "-clients", "2", "-subscribers", "0", "-only", "threads", "-limits=false"}, &out, io.Discard)
	require.NoError(t, err)
	table := out.String()
	require.Contains(t, table, "| scenario | graphserver | p50 | p99 | CPU/req |\n", table)
	require.NotContains(t, table, "net/http", table)
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-n", "0"}, {"-clients", "0"}, {"-subscribers", "-1"}, {"-bogus"}} {
		require.Error(t, run(t.Context(), args, io.Discard, io.Discard), args)
	}
}

// burn keeps one core busy in this process until stop is closed, then
// sets done.
func burn(stop <-chan struct{}, done *atomic.Bool) {
	for n := 0; ; n++ {
		select {
		case <-stop:
			done.Store(true)
			return
		default:
		}
		for i := range 1 << 16 {
			n ^= i
		}
	}
}

// TestWaitQuiet checks that a measurement waits for the servers' processes
// to finish the last one's work: waitQuiet returns only once a busy
// process is quiet, gives up at its limit, and has nothing to wait for
// without a process apart.
func TestWaitQuiet(t *testing.T) {
	stop := make(chan struct{})
	var done atomic.Bool
	go burn(stop, &done)
	time.AfterFunc(600*time.Millisecond, func() { close(stop) })
	// Quiet means under a tenth of a core: the burning goroutine shares
	// two cores with other test processes (go test -race runs packages in
	// parallel), and got under half of one in a 100 ms window of a CI run.
	quiet, err := waitQuiet(t.Context(), []int{0, os.Getpid()}, 100*time.Millisecond, 0.1, time.Minute)
	require.NoError(t, err)
	require.True(t, quiet)
	require.True(t, done.Load(), "quiet only once the process stopped burning")

	stop = make(chan struct{})
	defer close(stop)
	var never atomic.Bool
	go burn(stop, &never)
	quiet, err = waitQuiet(t.Context(), []int{os.Getpid()}, 100*time.Millisecond, 0.1, 300*time.Millisecond)
	require.NoError(t, err)
	require.False(t, quiet, "still busy at the limit")
	require.False(t, never.Load())

	quiet, err = waitQuiet(t.Context(), []int{0}, time.Hour, 0.5, time.Hour)
	require.NoError(t, err)
	require.True(t, quiet, "no process apart: nothing to wait for")
}

// TestNetHTTPAroundEachMeasurement: net/http alone is measured just before
// and just after each of graphserver's measurements, adjacentRequests
// requests each time, for the last column.
func TestNetHTTPAroundEachMeasurement(t *testing.T) {
	o := &options{n: 20, clients: 2, repeat: 2, only: "threads"}
	gs, err := startTarget(t.Context(), &options{inProcess: true, clients: o.clients}, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, gs.stop()) })
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	require.NoError(t, loadTest(t.Context(), o, []*target{gs}, newTarget("bare", srv.URL, o.clients), &out))
	require.Equal(t, int64(o.repeat*2*adjacentRequests(o)), served.Load())
	require.Regexp(t, `\| POST /threads \| .* \| [0-9.]+%(–[0-9.]+%)? \|\n`, out.String())
}
