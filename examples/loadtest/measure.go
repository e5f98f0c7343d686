package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// result is one measurement of a scenario on a target.
type result struct {
	rate     float64 // requests per second
	p50, p99 time.Duration
	cpu      time.Duration // server CPU time (user+system) per request; 0 = unknown
}

// loadTest runs every selected scenario on every target, o.repeat times,
// alternating targets, and prints the table. With bare (the server of the
// HTTP limit, see startBare), each measurement of the first target is
// preceded and followed by one of bare, once the targets are quiet, and
// the table's last column gives the first target's rate as a fraction of
// the mean of those two (the machine's speed drifts: the two around a
// measurement estimate it at that measurement better than either).
func loadTest(ctx context.Context, o *options, targets []*target, bare *target, stdout io.Writer) error {
	for _, t := range targets {
		if err := t.waitReady(ctx); err != nil {
			return fmt.Errorf("%s at %s: %w", t.name, t.base, err)
		}
	}
	fmt.Fprintf(stdout, "loadtest: %d clients, %d requests per measurement, %d measurement(s) per row; %d CPUs, GOMAXPROCS %d, %s; load average %s\n",
		o.clients, o.n, o.repeat, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), loadAverage())
	rows := [][]string{header(targets)}
	if bare != nil {
		rows[0] = append(rows[0], targets[0].name+" ÷ net/http alone around it")
	}
	quiet := &quietWaits{}
	for _, sc := range scenarios {
		if !strings.Contains(sc.key, o.only) {
			continue
		}
		res := make([][]result, len(targets))
		var shares []float64 // of the HTTP limit around each measurement
		for _, t := range targets {
			if sc.setup != nil {
				if err := sc.setup(ctx, t, o.clients); err != nil {
					return fmt.Errorf("%s: %s: %w", t.name, sc.name, err)
				}
			}
			if _, err := measure(ctx, t, o.clients, max(o.n/10, o.clients), sc.req); err != nil { // warm-up
				return fmt.Errorf("%s: %s: %w", t.name, sc.name, err)
			}
		}
		for range o.repeat {
			for i, t := range targets {
				around := i == 0 && bare != nil
				var before result
				if around {
					var err error
					if before, err = measureBare(ctx, o, targets, bare, quiet); err != nil {
						return err
					}
				}
				if err := quiet.wait(ctx, targets); err != nil {
					return err
				}
				r, err := measure(ctx, t, o.clients, o.n, sc.req)
				if err != nil {
					return fmt.Errorf("%s: %s: %w", t.name, sc.name, err)
				}
				res[i] = append(res[i], r)
				if around {
					after, err := measureBare(ctx, o, targets, bare, quiet)
					if err != nil {
						return err
					}
					shares = append(shares, r.rate/((before.rate+after.rate)/2))
				}
			}
		}
		cells := row(sc.name, res)
		if bare != nil {
			cells = append(cells, percentRange(shares))
		}
		rows = append(rows, cells)
	}
	if o.subscribers > 0 && strings.Contains("subscribers", o.only) {
		var cells []string
		var mem []int64
		for _, t := range targets {
			s, err := subscribers(ctx, t, o.subscribers)
			if err != nil {
				return fmt.Errorf("%s: idle subscribers: %w", t.name, err)
			}
			cells = append(cells, s.String(), "", "", "")
			mem = append(mem, s.rss)
		}
		r := append([]string{fmt.Sprintf("%d idle joined SSE subscribers: server RSS", o.subscribers)}, cells...)
		if len(targets) == 2 {
			r = append(r, ratio(float64(mem[1]), float64(mem[0]), "× less"))
		}
		if bare != nil {
			r = append(r, "")
		}
		rows = append(rows, r)
	}
	fmt.Fprintf(stdout, "load average after: %s; %s\n", loadAverage(), quiet)
	if len(rows) > 1 {
		fmt.Fprintln(stdout)
		printTable(stdout, rows)
	}
	return nil
}

// measureBare measures net/http alone (bare) next to a row's measurement,
// once the targets are quiet.
func measureBare(ctx context.Context, o *options, targets []*target, bare *target, quiet *quietWaits) (result, error) {
	if err := quiet.wait(ctx, targets); err != nil {
		return result{}, err
	}
	h, err := measure(ctx, bare, o.clients, adjacentRequests(o), getOK)
	if err != nil {
		return result{}, fmt.Errorf("bare HTTP server: %w", err)
	}
	return h, nil
}

// Before each measurement the servers are left to finish the work of the
// last one, so that a row measures one server and not the other's leftover
// (runs finishing, a collector): until their processes use under quietCPU
// of one core over quietWindow, for at most quietMax.
const (
	quietWindow = 250 * time.Millisecond
	quietCPU    = 0.10
	quietMax    = 30 * time.Second
)

// quietWaits adds up the waits for quiet servers, for the report.
type quietWaits struct {
	total, longest time.Duration
	timeouts       int
}

// wait returns once the processes of targets are quiet, or after quietMax
// (counted in the report).
func (q *quietWaits) wait(ctx context.Context, targets []*target) error {
	var pids []int
	for _, t := range targets {
		pids = append(pids, t.pids()...)
	}
	start := time.Now()
	quiet, err := waitQuiet(ctx, pids, quietWindow, quietCPU, quietMax)
	d := time.Since(start)
	q.total += d
	q.longest = max(q.longest, d)
	if !quiet {
		q.timeouts++
	}
	return err
}

// String reports the waits.
func (q *quietWaits) String() string {
	s := fmt.Sprintf("waited %.1f s in all for quiet servers before measurements (longest %.1f s)", q.total.Seconds(), q.longest.Seconds())
	if q.timeouts > 0 {
		s += fmt.Sprintf(", %d time(s) in vain for %s", q.timeouts, quietMax)
	}
	return s
}

// waitQuiet waits until the processes pids (0: unknown, ignored) used less
// than cpu of one core over a window, for at most limit; quiet is false
// when the limit came first.
func waitQuiet(ctx context.Context, pids []int, window time.Duration, cpu float64, limit time.Duration) (quiet bool, err error) {
	pids = slices.DeleteFunc(slices.Clone(pids), func(pid int) bool { return pid == 0 })
	if len(pids) == 0 {
		return true, nil // in-process: nothing apart to wait for
	}
	deadline := time.Now().Add(limit)
	for {
		before := cpuTimes(pids)
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(window):
		}
		if used := cpuTimes(pids) - before; float64(used) < cpu*float64(window) {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
	}
}

// measure makes n requests from clients goroutines.
func measure(ctx context.Context, t *target, clients, n int, req func(context.Context, *target, int) (time.Duration, error)) (result, error) {
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	cpu0 := cpuTimes(t.pids())
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				d, err := req(ctx, t, c)
				if err != nil {
					errs[c] = err
					next.Store(int64(n)) // stop the others
					return
				}
				lat[c] = append(lat[c], d)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTimes(t.pids()) - cpu0
	var all []time.Duration
	for c := range clients {
		if errs[c] != nil {
			return result{}, errs[c]
		}
		all = append(all, lat[c]...)
	}
	if len(all) == 0 {
		return result{}, fmt.Errorf("no requests made: %v", ctx.Err())
	}
	slices.Sort(all)
	res := result{rate: float64(len(all)) / elapsed.Seconds(), p50: all[len(all)/2], p99: all[len(all)*99/100]}
	if t.pid != 0 && cpu > 0 {
		res.cpu = cpu / time.Duration(len(all))
	}
	return res, nil
}

// subResult is the idle-subscriber measurement.
type subResult struct {
	n          int
	connect    time.Duration // to open them all
	base, rss  int64         // server RSS before and with them (0 = unknown)
	rssUnknown bool
}

func (s subResult) String() string {
	if s.rssUnknown {
		return fmt.Sprintf("%d joined in %.1f s (RSS unknown)", s.n, s.connect.Seconds())
	}
	return fmt.Sprintf("%s (%s before; %.1f KiB each)", mib(s.rss), mib(s.base), float64(s.rss-s.base)/1024/float64(s.n))
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// subscribers starts a run that sleeps, joins its stream n times (GET
// /threads/{id}/runs/{run_id}/stream, each on its own connection, counted
// once its response headers arrived), reads the server's RSS, then cancels
// the run.
func subscribers(ctx context.Context, t *target, n int) (subResult, error) {
	tid, err := createThread(ctx, t)
	if err != nil {
		return subResult{}, err
	}
	b, err := t.call(ctx, http.MethodPost, "/threads/"+tid+"/runs", waitInput(600), http.StatusOK)
	if err != nil {
		return subResult{}, err
	}
	var run struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(b, &run); err != nil || run.RunID == "" {
		return subResult{}, fmt.Errorf("create run: %.200s", b)
	}
	defer func() {
		_, _ = t.call(context.WithoutCancel(ctx), http.MethodPost, "/threads/"+tid+"/runs/"+run.RunID+"/cancel", "", http.StatusAccepted)
	}()
	time.Sleep(500 * time.Millisecond) // let the run start
	res := subResult{n: n, base: rss(t.pid)}

	tr := &http.Transport{DialContext: (&net.Dialer{Timeout: 30 * time.Second}).DialContext, MaxIdleConnsPerHost: -1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	bodies := make([]io.Closer, n)
	defer func() {
		for _, b := range bodies {
			if b != nil {
				b.Close()
			}
		}
	}()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	url := t.base + "/threads/" + tid + "/runs/" + run.RunID + "/stream"
	sem := make(chan struct{}, 256) // connections being opened at once
	errs := make(chan error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			req, _ := http.NewRequestWithContext(sctx, http.MethodGet, url, nil)
			resp, err := client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			bodies[i] = resp.Body
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("join stream: %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	res.connect = time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return res, err
	}
	time.Sleep(2 * time.Second) // let the server settle
	res.rss = rss(t.pid)
	res.rssUnknown = res.rss == 0
	return res, nil
}

// header is the table's first row.
func header(targets []*target) []string {
	h := []string{"scenario"}
	for _, t := range targets {
		h = append(h, t.name, "p50", "p99", "CPU/req")
	}
	if len(targets) == 2 {
		h = append(h, fmt.Sprintf("%s ÷ %s", targets[0].name, targets[1].name))
	}
	return h
}

// row renders one scenario's measurements: ranges when repeated, and the
// ratio of the medians of the first target to the second.
func row(name string, res [][]result) []string {
	r := []string{name}
	for _, ms := range res {
		r = append(r, rangeOf(ms, func(x result) float64 { return x.rate }, "%.0f/s"),
			rangeOf(ms, func(x result) float64 { return ms2(x.p50) }, "%.2f ms"),
			rangeOf(ms, func(x result) float64 { return ms2(x.p99) }, "%.2f ms"),
			rangeOf(ms, func(x result) float64 { return float64(x.cpu.Microseconds()) }, "%.0f µs"))
	}
	if len(res) == 2 {
		rate := func(ms []result) float64 { return median(ms, func(x result) float64 { return x.rate }) }
		p50 := func(ms []result) float64 { return median(ms, func(x result) float64 { return ms2(x.p50) }) }
		cpu := func(ms []result) float64 { return median(ms, func(x result) float64 { return float64(x.cpu) }) }
		cell := ratio(rate(res[0]), rate(res[1]), "× rate") + ", " + ratio(p50(res[1]), p50(res[0]), "× faster p50")
		if c0, c1 := cpu(res[0]), cpu(res[1]); c0 > 0 && c1 > 0 {
			cell += ", " + ratio(c1, c0, "× less CPU")
		}
		r = append(r, cell)
	}
	return r
}

func ms2(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentRange renders fractions as the range of their percentages.
func percentRange(fs []float64) string {
	return formatRange(100*slices.Min(fs), 100*slices.Max(fs), "%.1f%%")
}

func rangeOf(ms []result, f func(result) float64, format string) string {
	lo, hi := f(ms[0]), f(ms[0])
	for _, m := range ms[1:] {
		lo, hi = min(lo, f(m)), max(hi, f(m))
	}
	return formatRange(lo, hi, format)
}

// formatRange renders lo–hi, or one value when both print the same.
func formatRange(lo, hi float64, format string) string {
	if l, h := fmt.Sprintf(format, lo), fmt.Sprintf(format, hi); l != h {
		return l + "–" + h
	}
	return fmt.Sprintf(format, lo)
}

func median(ms []result, f func(result) float64) float64 {
	v := make([]float64, len(ms))
	for i, m := range ms {
		v[i] = f(m)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func ratio(a, b float64, unit string) string {
	if a == 0 || b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%s", a/b, unit)
}

// printTable prints rows as a Markdown table.
func printTable(w io.Writer, rows [][]string) {
	for i, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		if i == 0 {
			fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(r)))
		}
	}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times (100 on Linux).
const clockTicks = 100

// cpuTime is the CPU time (user + system) process pid used so far (Linux),
// 0 if unknown.
// cpuTimes is the CPU time of processes pids together.
func cpuTimes(pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		sum += cpuTime(pid)
	}
	return sum
}

func cpuTime(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (in parentheses, may hold spaces):
	// state is field 3, utime 14, stime 15.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// loadAverage is the first three fields of /proc/loadavg ("?" elsewhere).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
