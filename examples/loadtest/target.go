package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// target is one server under test.
type target struct {
	name string
	base string // http://host:port
	pid  int    // the server's process, for its RSS and CPU time; 0 = unknown

	// more are the other processes of a server started with -processes:
	// requests go to base and these in turn, as a round-robin load
	// balancer would send them, and their CPU times add up.
	more   []process
	next   atomic.Uint64
	port   int // of an external server, whose pid is looked up once it answers
	client *http.Client
	stop   func() error

	threads []string     // one per client (wait-thread)
	seq     atomic.Int64 // unique store keys across measurements
}

func newTarget(name, base string, clients int) *target {
	tr := &http.Transport{MaxIdleConnsPerHost: clients * 2, MaxConnsPerHost: clients * 2}
	return &target{name: name, base: strings.TrimRight(base, "/"), client: &http.Client{Transport: tr},
		stop: func() error { return nil }}
}

// externalTarget is a server already running at base; its process is the
// one listening on its port, when this user may see it.
func externalTarget(name, base string, clients int) (*target, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("bad URL %q", base)
	}
	t := newTarget(name, base, clients)
	t.port, _ = strconv.Atoi(u.Port())
	return t, nil
}

// process is one server process of a target.
type process struct {
	base string
	pid  int
}

// baseURL returns the base URL of the next request: base, or with
// -processes each process in turn.
func (t *target) baseURL() string {
	if len(t.more) == 0 {
		return t.base
	}
	i := int(t.next.Add(1) % uint64(len(t.more)+1))
	if i == 0 {
		return t.base
	}
	return t.more[i-1].base
}

// pids returns the target's processes.
func (t *target) pids() []int {
	out := []int{t.pid}
	for _, p := range t.more {
		out = append(out, p.pid)
	}
	return out
}

// startTarget starts the graphserver to measure: this program with -serve
// in a new process (or, with -inprocess, in this one), unless -url names
// one already running.
func startTarget(ctx context.Context, o *options, stderr io.Writer) (*target, error) {
	if o.url != "" {
		return externalTarget("graphserver", o.url, o.clients)
	}
	if o.inProcess {
		ctx, cancel := context.WithCancel(ctx)
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			err := serve(ctx, o.server, pw, stderr)
			pw.CloseWithError(errors.Join(err, io.EOF))
			done <- err
		}()
		base, err := readAddress(pr)
		go io.Copy(io.Discard, pr)
		if err != nil {
			cancel()
			return nil, errors.Join(err, <-done)
		}
		t := newTarget("graphserver", base, o.clients)
		t.stop = func() error { cancel(); return <-done }
		return t, nil
	}
	if o.processes > 1 {
		if !isPostgres(o.server.db) {
			return nil, errors.New("-processes above 1 needs -db postgres://...: processes share a PostgreSQL database")
		}
		var ts []*target
		for range o.processes {
			t, err := startProcess(ctx, o, stderr)
			if err != nil {
				for _, t := range ts {
					_ = t.stop()
				}
				return nil, err
			}
			ts = append(ts, t)
		}
		t := ts[0]
		for _, o := range ts[1:] {
			t.more = append(t.more, process{base: o.base, pid: o.pid})
		}
		t.stop = func() error {
			var errs []error
			for _, o := range ts {
				errs = append(errs, o.stop())
			}
			return errors.Join(errs...)
		}
		return t, nil
	}
	return startProcess(ctx, o, stderr)
}

// startProcess starts one server process: this program with -serve.
func startProcess(ctx context.Context, o *options, stderr io.Writer) (*target, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"-serve", "-log-level", o.server.logLevel.String()}
	if o.server.bare {
		args = append(args, "-bare")
	}
	for flag, v := range map[string]string{"-db": o.server.db, "-cpuprofile": o.server.cpu,
		"-mutexprofile": o.server.mutex, "-blockprofile": o.server.block} {
		if v != "" {
			if flag != "-db" {
				v, _ = filepath.Abs(v)
			}
			args = append(args, flag, v)
		}
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	base, err := readAddress(stdout)
	if err != nil {
		stdin.Close()
		return nil, errors.Join(err, cmd.Wait())
	}
	t := newTarget("graphserver", base, o.clients)
	t.pid = cmd.Process.Pid
	t.stop = func() error {
		stdin.Close() // the server stops when its stdin closes
		return cmd.Wait()
	}
	return t, nil
}

// readAddress reads the "listening on URL" line a server prints.
func readAddress(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		return "", fmt.Errorf("server did not start: %q %v", line, err)
	}
	return base, nil
}

// rss returns the resident set size of process pid (Linux), 0 if unknown.
func rss(pid int) int64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// listenerPID finds the process listening on a local TCP port (Linux: the
// socket's inode in /proc/net/tcp, then the process holding it); 0 when
// not found or not visible to this user.
func listenerPID(port int) int {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			fields := strings.Fields(line)
			// local_address is HEX_IP:HEX_PORT, st 0A is LISTEN, field 9 the inode.
			if len(fields) < 10 || fields[3] != "0A" {
				continue
			}
			if _, p, ok := strings.Cut(fields[1], ":"); ok {
				if n, err := strconv.ParseInt(p, 16, 32); err == nil && int(n) == port {
					inodes["socket:["+fields[9]+"]"] = true
				}
			}
		}
	}
	if len(inodes) == 0 {
		return 0
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil && inodes[link] {
				return pid
			}
		}
	}
	return 0
}

// post sends a JSON body.
func (t *target) post(ctx context.Context, path, body string) (*http.Response, error) {
	return t.do(ctx, http.MethodPost, path, body)
}

func (t *target) do(ctx context.Context, method, path, body string) (*http.Response, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.baseURL()+path, r)
	if err != nil {
		return nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return t.client.Do(req)
}

// call sends a request and returns its body; a status other than want is
// an error.
func (t *target) call(ctx context.Context, method, path, body string, want int) ([]byte, error) {
	resp, err := t.do(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return b, nil
}

// waitReady polls GET /ok until the server answers (a JS dev server may
// still be compiling its graphs).
func (t *target) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := t.call(ctx, http.MethodGet, "/ok", "", http.StatusOK)
		if err == nil && t.pid == 0 && t.port != 0 {
			t.pid = listenerPID(t.port)
		}
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
