// Command loadtest measures run throughput and latency of a graphserver on
// SQLite over HTTP: a one-node graph, N concurrent clients.
//
//	go run ./examples/loadtest -runs 4000 -clients 8
//
// It reports runs/s through POST /runs/wait (stateless) and POST
// /threads/{id}/runs/wait, the p50/p99 latency from request to result, and
// the time to the first SSE event of POST /runs/stream.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
	"github.com/graphserver/graphserver/httpapi"
	"github.com/graphserver/graphserver/sqlite"
)

func main() {
	runs := flag.Int("runs", 4000, "runs per scenario")
	clients := flag.Int("clients", 8, "concurrent HTTP clients")
	dbPath := flag.String("db", "", "SQLite file (default: a temp file)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	only := flag.String("only", "", "run only the scenarios whose name contains this text (e.g. threads)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*runs, *clients, *dbPath, *only); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(runs, clients int, dbPath, only string) error {
	if dbPath == "" {
		dir, err := os.MkdirTemp("", "gs-loadtest")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dbPath = filepath.Join(dir, "gs.db")
	}
	db, err := sqlite.Open(dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	echo := graph.Func("echo", func(_ context.Context, input any) (any, error) { return input, nil })
	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"echo": echo},
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		return err
	}
	defer srv.Close(ctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: httpapi.New(srv, httpapi.Options{Logger: slog.New(slog.DiscardHandler)})}
	go hs.Serve(ln)
	defer hs.Close()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients * 2, MaxConnsPerHost: clients * 2}}

	post := func(path, body string) (*http.Response, error) {
		return client.Post(base+path, "application/json", strings.NewReader(body))
	}
	waitBody := `{"assistant_id":"echo","input":{"messages":[{"role":"user","content":"hi"}]}}`

	// Threads for the stateful scenario, one per client.
	threads := make([]string, clients)
	for i := range threads {
		resp, err := post("/threads", `{}`)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		id, _, _ := strings.Cut(strings.TrimPrefix(string(b), `{"thread_id":"`), `"`)
		threads[i] = id
	}

	wait := func(path string) func(int) (time.Duration, error) {
		return func(client int) (time.Duration, error) {
			p := strings.ReplaceAll(path, "{tid}", threads[client])
			start := time.Now()
			resp, err := post(p, waitBody)
			if err != nil {
				return 0, err
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return 0, err
			}
			if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"hi"`)) {
				return 0, fmt.Errorf("POST %s: %d %s", p, resp.StatusCode, b)
			}
			return time.Since(start), nil
		}
	}
	firstEvent := func(int) (time.Duration, error) {
		start := time.Now()
		resp, err := post("/runs/stream", waitBody)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "event: metadata") {
			return 0, fmt.Errorf("first SSE line %q: %v", line, err)
		}
		d := time.Since(start)
		_, _ = io.Copy(io.Discard, r)
		return d, nil
	}

	fmt.Printf("graphserver load test: one-node graph, SQLite (%s), %d clients, %d runs per scenario\n", filepath.Base(dbPath), clients, runs)
	for _, sc := range []struct {
		name string
		fn   func(int) (time.Duration, error)
	}{
		{"POST /runs/wait (stateless)", wait("/runs/wait")},
		{"POST /threads/{id}/runs/wait", wait("/threads/{tid}/runs/wait")},
		{"POST /runs/stream: time to first event", firstEvent},
	} {
		if !strings.Contains(sc.name, only) {
			continue
		}
		if _, err := measure(clients, runs/10, sc.fn); err != nil { // warm-up
			return err
		}
		res, err := measure(clients, runs, sc.fn)
		if err != nil {
			return err
		}
		fmt.Printf("%-42s %8.0f runs/s   p50 %6.2f ms   p99 %6.2f ms\n", sc.name, res.rate, ms(res.p50), ms(res.p99))
	}
	return nil
}

type result struct {
	rate     float64
	p50, p99 time.Duration
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// measure runs fn n times from clients goroutines.
func measure(clients, n int, fn func(client int) (time.Duration, error)) (result, error) {
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				d, err := fn(c)
				if err != nil {
					errs[c] = err
					return
				}
				lat[c] = append(lat[c], d)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for c := range clients {
		if errs[c] != nil {
			return result{}, errs[c]
		}
		all = append(all, lat[c]...)
	}
	slices.Sort(all)
	if len(all) == 0 {
		return result{}, fmt.Errorf("no runs")
	}
	return result{rate: float64(len(all)) / elapsed.Seconds(), p50: all[len(all)/2], p99: all[len(all)*99/100]}, nil
}
