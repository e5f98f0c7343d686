//go:build unix

package crashtest

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", for PRAGMA integrity_check

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/httpapi"
	gsqlite "github.com/graphserver/graphserver/sqlite"
)

// The child process: the test binary re-executed with these variables set
// serves the API (TestMain) until it is killed or its stdin closes.
const (
	childDBEnv     = "GRAPHSERVER_CRASH_DB"
	childLedgerEnv = "GRAPHSERVER_CRASH_LEDGER"
)

// childLease is the child's lease duration: far longer than the test, so a
// run recovered during the test was not recovered by lease expiry.
const childLease = 2 * time.Minute

var long = flag.Bool("crash.long", false, "run the long crash test (1,000 runs on 50 threads, 30 kills)")

func TestMain(m *testing.M) {
	if db := os.Getenv(childDBEnv); db != "" {
		if err := serveChild(db, os.Getenv(childLedgerEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// nodes are the nodes of the chain graph the child serves, run in order.
var nodes = []string{"a", "b", "c"}

// serveChild serves the API on 127.0.0.1:0 over the database at dbPath,
// printing "listening on http://ADDR". Each node of its "chain" graph
// appends "S <run> <node> <token>" to the ledger when it starts and
// "E <run> <node> <token>" when it ends (50-500 ms later), and writes
// "<node>:<token>" to the steps channel. It returns when stdin closes.
func serveChild(dbPath, ledgerPath string) error {
	ledger, err := os.OpenFile(ledgerPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	var ledgerMu sync.Mutex
	note := func(kind, run, node, token string) {
		ledgerMu.Lock()
		defer ledgerMu.Unlock()
		_, _ = fmt.Fprintf(ledger, "%s %s %s %s\n", kind, run, node, token) // one O_APPEND write: survives SIGKILL
	}
	g := graph.New(graph.Channels{"steps": graph.Append()})
	for _, n := range nodes {
		g.AddNode(n, func(ctx context.Context, s graph.State) (any, error) {
			run, _ := graph.Configurable(ctx)["run_id"].(string)
			token := uuid.NewString()
			note("S", run, n, token)
			t := time.NewTimer(time.Duration(50+rand.IntN(451)) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			note("E", run, n, token)
			return graph.Update{"steps": n + ":" + token}, nil
		})
	}
	g.AddEdge(graph.Start, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", graph.End)
	chain, err := g.Compile(graph.CompileOptions{Name: "chain"})
	if err != nil {
		return err
	}
	db, err := gsqlite.Open(dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	srv, err := graphserver.New(graphserver.Options{
		Storage:       db,
		Graphs:        map[string]graphserver.Graph{"chain": chain},
		LeaseDuration: childLease,
		MaxAttempts:   100, // every run must succeed, however often it is killed
		Webhooks: graphserver.WebhookOptions{
			Sender:  httpapi.NewWebhookSender(httpapi.WebhookSenderOptions{AllowPrivate: true}),
			Policy:  graphserver.WebhookPolicy{AllowPrivate: true},
			Backoff: 20 * time.Millisecond,
		},
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		return err
	}
	hs := httptest.NewUnstartedServer(httpapi.New(srv, httpapi.Options{}))
	hs.Start()
	fmt.Printf("listening on %s\n", hs.URL)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent goes
	hs.Close()
	return srv.Close(ctx)
}

// child is one running server process.
type child struct {
	cmd     *exec.Cmd
	url     string
	started time.Time
	stdin   io.WriteCloser
}

func startChild(t *testing.T, dbPath, ledger, logPath string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDBEnv+"="+dbPath, childLedgerEnv+"="+ledger)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { logf.Close() })
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	c := &child{cmd: cmd, started: time.Now(), stdin: stdin}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		require.True(t, strings.HasPrefix(l, "listening on http://127.0.0.1:"), l)
		c.url = strings.TrimPrefix(l, "listening on ")
	case <-time.After(60 * time.Second):
		t.Fatal("child did not start")
	}
	return c
}

// kill ends the child with SIGKILL and waits for it.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.cmd.Wait()
}

// stop ends the child cleanly (its stdin closes) and waits for it.
func (c *child) stop(t *testing.T) {
	t.Helper()
	c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		c.kill()
		t.Fatal("child did not stop")
	}
}

func call(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if out != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}

// TestCrash runs a server in a child process, puts runs of a three-node
// graph (nodes of 50-500 ms, a webhook each) on threads, kills the server
// with SIGKILL at random moments, restarts it on the same file each time,
// and checks: every run ends with success; no node whose result was
// committed ran again; no thread stays busy; every run's webhook arrives
// (duplicates carry the same delivery id); the runs a kill left running are
// recovered at once on restart (long before their two-minute lease could
// expire); the database passes PRAGMA integrity_check. -crash.long runs a
// bigger version.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: child processes killed and restarted")
	}
	threads, runsPerThread, kills := 20, 5, 5
	if *long {
		threads, runsPerThread, kills = 50, 20, 30
	}
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "gs.db")
	ledger := filepath.Join(dir, "ledger")
	logPath := filepath.Join(dir, "child.log")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("child log (tail):\n%s", tail(string(b), 4000))
		}
	})

	// The webhook receiver records every delivery attempt that reaches it.
	var hookMu sync.Mutex
	hooks := map[string][]string{} // run id -> delivery ids received
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		hookMu.Lock()
		hooks[body.RunID] = append(hooks[body.RunID], r.Header.Get(graphserver.WebhookIDHeader)+" "+body.Status)
		hookMu.Unlock()
	}))
	t.Cleanup(recv.Close)

	c := startChild(t, dbPath, ledger, logPath)
	// The test reads the database beside the child, for run attempts.
	db, err := gsqlite.Open(dbPath)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })

	var threadIDs, runIDs []string
	for range threads {
		var th struct {
			ThreadID string `json:"thread_id"`
		}
		require.Equal(t, 200, call(t, "POST", c.url+"/threads", `{}`, &th))
		threadIDs = append(threadIDs, th.ThreadID)
	}
	for range runsPerThread {
		for _, tid := range threadIDs {
			var run struct {
				RunID string `json:"run_id"`
			}
			require.Equal(t, 200, call(t, "POST", c.url+"/threads/"+tid+"/runs",
				`{"assistant_id":"chain","input":{},"multitask_strategy":"enqueue","webhook":"`+recv.URL+`/hook"}`, &run))
			runIDs = append(runIDs, run.RunID)
		}
	}

	ctx := t.Context()
	running := func() map[string]int { // run id -> attempt, of the runs running now
		out := map[string]int{}
		for _, id := range runIDs {
			r, err := db.GetRun(ctx, "", id, nil)
			require.NoError(t, err)
			if r.Status == graphserver.RunRunning {
				out[id] = r.Attempt
			}
		}
		return out
	}
	var recoveries []time.Duration
	for k := range kills {
		time.Sleep(time.Duration(200+rand.IntN(1000)) * time.Millisecond) // a random moment of the work
		c.kill()
		stranded := running()
		c = startChild(t, dbPath, ledger, logPath)
		if len(stranded) == 0 {
			continue
		}
		// Recovered: each run the kill left running is running again (a
		// later attempt) or ended.
		deadline := c.started.Add(childLease / 2)
		for {
			now := running()
			left := 0
			for id, attempt := range stranded {
				if a, ok := now[id]; ok && a == attempt {
					left++
				}
			}
			if left == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "kill %d: %d runs still held by the dead process", k+1, left)
			time.Sleep(5 * time.Millisecond)
		}
		recoveries = append(recoveries, time.Since(c.started))
	}

	// Every run ends, with success.
	deadline := time.Now().Add(5 * time.Minute)
	for _, id := range runIDs {
		for {
			r, err := db.GetRun(ctx, "", id, nil)
			require.NoError(t, err)
			if r.Status != graphserver.RunPending && r.Status != graphserver.RunRunning {
				require.Equal(t, graphserver.RunSuccess, r.Status, "run %s", id)
				break
			}
			require.True(t, time.Now().Before(deadline), "run %s stuck %s", id, r.Status)
			time.Sleep(20 * time.Millisecond)
		}
	}

	// No thread stays busy; each holds the steps of its runs, once each.
	committed := map[string]bool{} // "<node>:<token>" in some thread's state
	for _, tid := range threadIDs {
		var th struct {
			Status string `json:"status"`
			Values struct {
				Steps []string `json:"steps"`
			} `json:"values"`
		}
		require.Equal(t, 200, call(t, "GET", c.url+"/threads/"+tid, "", &th))
		require.Equal(t, "idle", th.Status, "thread %s", tid)
		require.Len(t, th.Values.Steps, runsPerThread*len(nodes), "thread %s steps", tid)
		for _, s := range th.Values.Steps {
			committed[s] = true
		}
	}

	// No node whose result was committed ran again: in the ledger, the end
	// of a committed execution is the last start of its (run, node), and
	// each (run, node) has exactly one committed execution.
	b, err := os.ReadFile(ledger)
	require.NoError(t, err)
	lastStart := map[string]int{} // "run node" -> line of its last start
	committedEnd := map[string]int{}
	reran := 0
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 4, "ledger line %q", line)
		key := f[1] + " " + f[2]
		switch f[0] {
		case "S":
			if _, done := committedEnd[key]; done {
				reran++
			}
			lastStart[key] = i
		case "E":
			if committed[f[2]+":"+f[3]] {
				_, dup := committedEnd[key]
				require.False(t, dup, "%s committed twice", key)
				committedEnd[key] = i
			}
		}
	}
	require.Zero(t, reran, "nodes started again after their result was committed")
	require.Len(t, committedEnd, len(runIDs)*len(nodes))
	starts := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "S ") {
			starts++
		}
	}

	// Every run's webhook arrives; a delivery sent twice keeps its id.
	deadline = time.Now().Add(2 * time.Minute)
	for {
		hookMu.Lock()
		n := len(hooks)
		hookMu.Unlock()
		if n == len(runIDs) {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d of %d webhooks arrived", n, len(runIDs))
		time.Sleep(20 * time.Millisecond)
	}
	dups := 0
	hookMu.Lock()
	for id, got := range hooks {
		require.True(t, slices.Contains(runIDs, id))
		for _, g := range got {
			require.Equal(t, got[0], g, "run %s: one delivery id, status success", id)
			require.True(t, strings.HasSuffix(g, " success"), g)
		}
		dups += len(got) - 1
	}
	hookMu.Unlock()

	c.stop(t)
	require.NoError(t, db.Close())
	raw, err := sql.Open("sqlite", dbPath)
	require.NoError(t, err)
	defer raw.Close()
	var integrity string
	require.NoError(t, raw.QueryRow(`PRAGMA integrity_check`).Scan(&integrity))
	require.Equal(t, "ok", integrity)

	slices.Sort(recoveries)
	t.Logf("%d runs on %d threads, %d SIGKILLs: all succeeded; node executions %d for %d nodes (interrupted ones re-ran, committed ones never); "+
		"webhooks %d delivered, %d sent again after a kill (same id); recovery after restart (process start to stranded runs reclaimed): %v",
		len(runIDs), threads, kills, starts, len(runIDs)*len(nodes), len(runIDs), dups, recoveries)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
