//go:build unix

package client_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
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

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/client"
	"github.com/graphserver/graphserver/graph"
)

// jsDevServer returns the URL of the official JS dev server (langgraph dev:
// @langchain/langgraph-cli with @langchain/langgraph-api, pinned in
// e2e/jsdev/package.json) hosting e2e/jsdev/graphs.mjs: the one
// GRAPHSERVER_JSDEV_URL names, or one it starts from e2e/jsdev/node_modules
// for the test. Without either it skips, unless GRAPHSERVER_JSDEV_REQUIRED
// is set (as .ci/run sets it after installing the server).
func jsDevServer(t *testing.T) string {
	t.Helper()
	if u := os.Getenv("GRAPHSERVER_JSDEV_URL"); u != "" {
		return u
	}
	dir, err := filepath.Abs(filepath.Join("..", "e2e", "jsdev"))
	require.NoError(t, err)
	cli := filepath.Join(dir, "node_modules", ".bin", "langgraphjs")
	node, nodeErr := exec.LookPath("node")
	if _, err := os.Stat(cli); err != nil || nodeErr != nil {
		msg := "the JS dev server is not installed: run `npm install --no-save` in e2e/jsdev (.ci/run does) or set GRAPHSERVER_JSDEV_URL"
		if os.Getenv("GRAPHSERVER_JSDEV_REQUIRED") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())

	var logs bytes.Buffer
	var mu sync.Mutex
	cmd := exec.Command(node, cli, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", fmt.Sprint(port))
	cmd.Dir = dir
	// tsx/esm: langgraph-api 1.4.5 passes tsx's --clear-screen to node
	// when --no-reload drops tsx's watch mode.
	cmd.Env = append(os.Environ(), "LANGGRAPH_NODE_LOADER=tsx/esm", "LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false",
		"LANGGRAPH_API_KEY=", "LANGSMITH_API_KEY=", "LANGCHAIN_API_KEY=")
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) })
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the CLI spawns the server: stop both
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(url + "/ok")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		select {
		case <-exited:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("the JS dev server exited:\n%s", logs.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("the JS dev server did not answer /ok within 90 s:\n%s", logs.String())
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestJSDevServer drives a smoke set of operations against the official JS
// dev server, so the client is not tuned to graphserver: its plain-text
// errors, 400 validation, missing Location header (reconnection falls back
// to Content-Location), [JS] timestamps and quirks (§11 of the wire
// contract). It also runs a local graph whose node is a RemoteGraph to it,
// through an interrupt and its resume.
func TestJSDevServer(t *testing.T) {
	url := jsDevServer(t)
	c, err := client.New(client.Options{URL: url, NoEnvAPIKey: true})
	require.NoError(t, err)
	ctx := t.Context()

	t.Run("system", func(t *testing.T) {
		info, err := c.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, "js", info.Context)
		require.NotEmpty(t, info.Version)
		require.NoError(t, c.Ok(ctx, false))
	})

	t.Run("assistants", func(t *testing.T) {
		sys, err := c.Assistants.Get(ctx, "agent")
		require.NoError(t, err)
		require.Equal(t, graphserver.SystemAssistantID("agent"), sys.AssistantID, "the same UUIDv5 alias as graphserver")
		a, err := c.Assistants.Create(ctx, graphserver.AssistantCreate{GraphID: "agent", Name: "smoke", Metadata: graphserver.Metadata{"suite": "go"}})
		require.NoError(t, err)
		require.Equal(t, "smoke", a.Name)
		up, err := c.Assistants.Update(ctx, a.AssistantID, graphserver.AssistantPatch{Name: ptr("smoke2")})
		require.NoError(t, err)
		require.Equal(t, "smoke2", up.Name)
		vs, err := c.Assistants.GetVersions(ctx, a.AssistantID, graphserver.AssistantVersionSearch{})
		require.NoError(t, err)
		require.Len(t, vs, 2)
		page, err := c.Assistants.Search(ctx, graphserver.AssistantSearch{Metadata: graphserver.Metadata{"suite": "go"}, Limit: 10})
		require.NoError(t, err)
		require.True(t, slices.ContainsFunc(page.Items, func(x *graphserver.Assistant) bool { return x.AssistantID == a.AssistantID }))
		d, err := c.Assistants.GetGraph(ctx, "agent", 0)
		require.NoError(t, err)
		require.NotEmpty(t, d.Nodes)
		// (schemas are left out: the JS server extracts them from TypeScript
		// types, and answers 500 for the plain-JS graphs.mjs)
		require.NoError(t, c.Assistants.Delete(ctx, a.AssistantID, false), "the JS server answers 200 [id]")
		_, err = c.Assistants.Get(ctx, a.AssistantID)
		requireCode(t, err, graphserver.ENOTFOUND)
		var ce *client.Error
		require.ErrorAs(t, err, &ce)
		require.NotEmpty(t, ce.Detail, "the JS server's plain-text message")
	})

	t.Run("threads and state", func(t *testing.T) {
		th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"suite": "go"}})
		require.NoError(t, err)
		require.False(t, th.CreatedAt.IsZero(), "[JS] timestamps decode")
		got, err := c.Threads.Get(ctx, th.ThreadID)
		require.NoError(t, err)
		require.Equal(t, "go", got.Metadata["suite"])
		up, err := c.Threads.Update(ctx, th.ThreadID, graphserver.ThreadPatch{Metadata: graphserver.Metadata{"n": 1.0}})
		require.NoError(t, err)
		require.Equal(t, 1.0, up.Metadata["n"])
		page, err := c.Threads.Search(ctx, graphserver.ThreadSearch{Metadata: graphserver.Metadata{"suite": "go"}, Limit: 100})
		require.NoError(t, err)
		require.True(t, slices.ContainsFunc(page.Items, func(x *graphserver.Thread) bool { return x.ThreadID == th.ThreadID }))

		out, err := c.Runs.Wait(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "agent", Input: raw(t, map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})})
		require.NoError(t, err)
		require.Equal(t, 1.0, object(t, out)["count"])
		st, err := c.Threads.GetState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
		require.NoError(t, err)
		require.Equal(t, 1.0, st.Values.(map[string]any)["count"])
		hist, err := c.Threads.GetHistory(ctx, th.ThreadID, graphserver.ThreadHistoryQuery{Limit: 10})
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(hist), 2)
		_, err = c.Threads.UpdateState(ctx, th.ThreadID, graphserver.ThreadStateUpdate{Values: json.RawMessage(`{"count": 5}`), AsNode: "agent"})
		require.NoError(t, err)
		st, err = c.Threads.GetState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
		require.NoError(t, err)
		require.Equal(t, 5.0, st.Values.(map[string]any)["count"])
		cp, err := c.Threads.Copy(ctx, th.ThreadID)
		require.NoError(t, err)
		require.NotEqual(t, th.ThreadID, cp.ThreadID)

		require.NoError(t, c.Threads.Delete(ctx, th.ThreadID))
		_, err = c.Threads.Get(ctx, th.ThreadID)
		requireCode(t, err, graphserver.ENOTFOUND)
	})

	t.Run("runs", func(t *testing.T) {
		th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		in := raw(t, map[string]any{"messages": []any{map[string]any{"role": "user", "content": "yo"}}})
		var created string
		evs := collect(t, c.Runs.Stream(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "agent", Input: in, StreamMode: []string{"values", "updates"}, StreamResumable: true},
			client.StreamOptions{OnRunCreated: func(runID, threadID string) {
				created = runID
				require.Equal(t, th.ThreadID, threadID)
			}}))
		require.Equal(t, "metadata", evs[0].Event)
		require.Equal(t, created, object(t, evs[0].Data)["run_id"])
		require.Contains(t, names(evs), "updates")
		require.Equal(t, "values", evs[len(evs)-1].Event)

		joined := collect(t, c.Runs.JoinStream(ctx, th.ThreadID, created, graphserver.JoinStreamOptions{LastEventID: "-1"}))
		require.Equal(t, names(evs), names(joined), "a resumable run replays from the start")

		run, err := c.Runs.Create(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "agent", Input: in})
		require.NoError(t, err)
		out, err := c.Runs.Join(ctx, th.ThreadID, run.RunID)
		require.NoError(t, err)
		require.Equal(t, 2.0, object(t, out)["count"])
		got, err := c.Runs.Get(ctx, th.ThreadID, run.RunID)
		require.NoError(t, err)
		require.Equal(t, graphserver.RunSuccess, got.Status)
		runs, err := c.Runs.List(ctx, th.ThreadID, graphserver.RunSearch{})
		require.NoError(t, err)
		require.Len(t, runs, 2)

		out, err = c.Runs.Wait(ctx, "", graphserver.RunCreate{AssistantID: "agent", Input: in})
		require.NoError(t, err)
		require.Equal(t, 1.0, object(t, out)["count"])

		_, err = c.Runs.Wait(ctx, "", graphserver.RunCreate{AssistantID: "fail", Input: raw(t, map[string]any{})})
		var re *client.RunError
		require.ErrorAs(t, err, &re)
		require.Equal(t, "Error", re.Name)
		require.Equal(t, "boom", re.Message)

		_, err = c.Runs.Wait(ctx, uuid.NewString(), graphserver.RunCreate{AssistantID: "agent", Input: in})
		require.Error(t, err, "a missing thread")
		_, err = c.Runs.Create(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "agent", StreamMode: []string{"bogus"}})
		var ce *client.Error
		require.ErrorAs(t, err, &ce)
		require.True(t, ce.Status == 400 || ce.Status == 422, "validation: %d %s", ce.Status, ce.Detail)
	})

	t.Run("interrupt and resume", func(t *testing.T) {
		th, err := c.Threads.Create(ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		out, err := c.Runs.Wait(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "ask", Input: raw(t, map[string]any{"question": "ok?"})})
		require.NoError(t, err)
		require.Contains(t, string(out), "__interrupt__")
		st, err := c.Threads.GetState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
		require.NoError(t, err)
		require.Equal(t, []string{"ask"}, st.Next)
		out, err = c.Runs.Wait(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "ask", Command: &graphserver.RunCommand{Resume: raw(t, "yes")}})
		require.NoError(t, err)
		require.Equal(t, "yes", object(t, out)["answer"])
	})

	t.Run("store", func(t *testing.T) {
		ns := []string{"gosmoke", uuid.NewString()}
		require.NoError(t, c.Store.PutItem(ctx, graphserver.ItemPut{Namespace: ns, Key: "k", Value: graphserver.Object{"v": 1}}))
		it, err := c.Store.GetItem(ctx, ns, "k", nil)
		require.NoError(t, err)
		require.Equal(t, 1.0, it.Value["v"])
		items, err := c.Store.SearchItems(ctx, graphserver.ItemSearchRequest{NamespacePrefix: ns})
		require.NoError(t, err)
		require.Len(t, items, 1)
		nss, err := c.Store.ListNamespaces(ctx, graphserver.NamespaceList{Prefix: ns})
		require.NoError(t, err)
		require.Equal(t, [][]string{ns}, nss)
		require.NoError(t, c.Store.DeleteItem(ctx, ns, "k"))
		it, err = c.Store.GetItem(ctx, ns, "k", nil)
		require.NoError(t, err)
		require.Nil(t, it)
	})

	t.Run("RemoteGraph", func(t *testing.T) {
		agent := newRemote(t, client.RemoteOptions{AssistantID: "agent", URL: url})
		tid := uuid.NewString()
		out, err := agent.Invoke(ctx, map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}, client.RunOptions{ThreadID: tid})
		require.NoError(t, err)
		require.Equal(t, 1.0, object(t, out)["count"])
		st, err := agent.State(ctx, &graphserver.StateRequest{Checkpoint: graphserver.Checkpoint{ThreadID: tid}})
		require.NoError(t, err)
		require.Equal(t, 1.0, st.Values.(map[string]any)["count"])

		// a local graph, hosted by graphserver, whose node is the JS
		// server's "ask": interrupt and resume through both
		askNode := newRemote(t, client.RemoteOptions{AssistantID: "ask", URL: url})
		g := graph.New(graph.Channels{"question": graph.LastValue(), "answer": graph.LastValue()})
		g.AddNode("remote", askNode.Node)
		g.AddEdge(graph.Start, "remote").AddEdge("remote", graph.End)
		parent, err := g.Compile(graph.CompileOptions{Name: "parent"})
		require.NoError(t, err)
		local := newEnv(t, envOptions{graphs: map[string]graphserver.Graph{"parent": parent}})
		th, err := local.c.Threads.Create(ctx, graphserver.ThreadCreate{})
		require.NoError(t, err)
		evs := collect(t, local.c.Runs.Stream(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "parent", Input: raw(t, map[string]any{"question": "ok?"}), StreamMode: []string{"updates"}, StreamSubgraphs: true}, client.StreamOptions{}))
		require.True(t, slices.ContainsFunc(evs, func(ev graphserver.StreamEvent) bool { return strings.HasPrefix(ev.Event, "updates|remote:") }), "the JS graph's parts under the node's namespace: %v", names(evs))
		lst, err := local.c.Threads.GetState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
		require.NoError(t, err)
		require.Equal(t, []string{"remote"}, lst.Next)
		require.Equal(t, map[string]any{"question": "ok?"}, lst.Interrupts[0].Value)
		out, err = local.c.Runs.Wait(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "parent", Command: &graphserver.RunCommand{Resume: raw(t, "sure")}})
		require.NoError(t, err)
		require.Equal(t, "sure", object(t, out)["answer"])
		rt, err := c.Threads.Get(ctx, th.ThreadID)
		require.NoError(t, err)
		require.Equal(t, graphserver.ThreadIdle, rt.Status, "the JS server's thread was resumed, not restarted")
	})
}
