// Package cmdtest runs the example servers' run functions inside tests: on a
// free port, waiting for their "listening on" line, stopped at cleanup.
package cmdtest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// RunFunc is an example program's main body: it serves until ctx ends,
// printing "listening on http://HOST:PORT" to stdout once ready.
type RunFunc func(ctx context.Context, args []string, stdout io.Writer) error

// Server is one running instance of a RunFunc.
type Server struct {
	// URL is the base URL the program printed.
	URL string
	// Stop cancels the program and returns what its RunFunc returned. It may
	// be called more than once; Start also calls it at cleanup.
	Stop func() error
}

// Start runs run with args in a goroutine and waits (up to 30 s) for its
// address. The caller passes "-addr 127.0.0.1:0" (or its own free address).
func Start(t *testing.T, run RunFunc, args ...string) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, pw)
		pw.CloseWithError(io.EOF)
		done <- err
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	var line string
	select {
	case line = <-lines:
	case err := <-done:
		cancel()
		t.Fatalf("server exited before listening: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("server did not print its address")
	}
	require.True(t, strings.HasPrefix(line, "listening on http://127.0.0.1:"), line)
	s := &Server{URL: strings.TrimPrefix(line, "listening on "), Stop: sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return context.DeadlineExceeded
		}
	})}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// Do sends a request with body (may be "") and decodes the JSON response
// into out (when non-nil). It returns the status code once the whole
// response is read: waits and joins answer 200 (and heartbeats) before the
// run ends, so the status alone does not mean the run ended.
func Do(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if out != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	return resp.StatusCode
}
