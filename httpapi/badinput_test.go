package httpapi

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/internal/graphtest"
	"github.com/graphserver/graphserver/sqlite"
)

// bodilessRoutes are the routes other than GET that read no request body:
// a malformed body does not make them fail, so body inputs are not sent.
var bodilessRoutes = []string{
	"DELETE /assistants/{assistant_id}",
	"DELETE /threads/{thread_id}",
	"DELETE /threads/{thread_id}/runs/{run_id}",
	"POST /threads/{thread_id}/runs/{run_id}/cancel",
	"POST /threads/{thread_id}/copy",
	"DELETE /runs/crons/{cron_id}",
}

// arrayBodyRoutes take a JSON array as their body.
var arrayBodyRoutes = []string{"POST /runs/batch"}

// badQueries are the query strings a route reads, set to values it must
// refuse.
var badQueries = map[string][]string{
	"GET /ok":                                              {"check_db=maybe"},
	"GET /assistants/{assistant_id}/graph":                 {"xray=abc"},
	"GET /assistants/{assistant_id}/subgraphs":             {"recurse=maybe"},
	"GET /assistants/{assistant_id}/subgraphs/{namespace}": {"recurse=maybe"},
	"DELETE /assistants/{assistant_id}":                    {"delete_threads=maybe"},
	"POST /assistants/{assistant_id}/latest":               {"version=abc"},
	"GET /threads/{thread_id}":                             {"include=[x"},
	"GET /threads/{thread_id}/state":                       {"subgraphs=maybe"},
	"GET /threads/{thread_id}/state/{checkpoint_id}":       {"subgraphs=maybe"},
	"GET /threads/{thread_id}/history":                     {"limit=abc", "limit=-1"},
	"GET /threads/{thread_id}/runs":                        {"limit=abc", "limit=100000", "offset=-1", "status=nope", "select=nope", "select=[x"},
	"POST /threads/{thread_id}/runs/{run_id}/cancel":       {"action=nope", "wait=maybe"},
	"GET /threads/{thread_id}/runs/{run_id}/stream":        {"stream_mode=nope", "cancel_on_disconnect=maybe"},
	"GET /runs/{run_id}/stream":                            {"stream_mode=nope", "cancel_on_disconnect=maybe"},
	"POST /runs/cancel":                                    {"action=nope"},
	"GET /store/items":                                     {"refresh_ttl=maybe", "namespace=a&key=", "namespace=a..b&key=k"},
	"GET /threads/{thread_id}/stream":                      {"stream_mode=nope"},
}

// badFields are bodies with a field of the wrong type, or out of range,
// per route (a body with only unknown fields is valid: they are ignored).
var badFields = map[string][]string{
	"POST /assistants":                           {`{"graph_id":5}`, `{"graph_id":"agent","config":"x"}`, `{"graph_id":"agent","metadata":[1]}`, `{"graph_id":"nope"}`, `{"graph_id":"agent","assistant_id":"not-a-uuid"}`, `{"graph_id":"agent","if_exists":"x"}`},
	"POST /assistants/search":                    {`{"limit":"x"}`, `{"limit":100000}`, `{"sort_by":"nope"}`, `{"metadata":"x"}`},
	"POST /assistants/count":                     {`{"metadata":"x"}`, `{"graph_id":5}`},
	"PATCH /assistants/{assistant_id}":           {`{"config":"x"}`, `{"metadata":5}`, `{"graph_id":"nope"}`},
	"POST /assistants/{assistant_id}/versions":   {`{"limit":"x"}`, `{"metadata":5}`},
	"POST /assistants/{assistant_id}/latest":     {`{"version":"x"}`, `{"version":999}`, `{}`},
	"POST /threads":                              {`{"thread_id":"not-a-uuid"}`, `{"metadata":"x"}`, `{"ttl":"x"}`, `{"ttl":-1}`, `{"ttl":1e12}`, `{"if_exists":"nope"}`, `{"supersteps":"x"}`},
	"POST /threads/search":                       {`{"limit":"x"}`, `{"status":"nope"}`, `{"ids":["x"]}`, `{"values":5}`, `{"sort_by":"nope"}`},
	"POST /threads/count":                        {`{"status":"nope"}`, `{"metadata":"x"}`},
	"POST /threads/prune":                        {`{"thread_ids":"x"}`, `{"thread_ids":["not-a-uuid"]}`, `{"strategy":"nope","thread_ids":[]}`},
	"PATCH /threads/{thread_id}":                 {`{"metadata":"x"}`, `{"ttl":1e12}`, `{"ttl":{"ttl":5,"strategy":"nope"}}`},
	"POST /threads/{thread_id}/copy":             {},
	"POST /threads/{thread_id}/state":            {`{"values":5,"as_node":"nope"}`, `{"as_node":5}`, `{"checkpoint_id":5}`},
	"PATCH /threads/{thread_id}/state":           {`{"metadata":"x"}`, `{"metadata":5}`},
	"POST /threads/{thread_id}/state/checkpoint": {`{"checkpoint":5}`, `{"checkpoint":{"checkpoint_id":5}}`},
	"POST /threads/{thread_id}/history":          {`{"limit":"x"}`, `{"limit":-1}`, `{"metadata":5}`, `{"before":5}`},
	"POST /threads/{thread_id}/runs":             {`{"assistant_id":5}`, `{}`, `{"assistant_id":"echo","stream_mode":5}`, `{"assistant_id":"echo","stream_mode":["nope"]}`, `{"assistant_id":"echo","multitask_strategy":"x"}`, `{"assistant_id":"echo","after_seconds":-1}`, `{"assistant_id":"echo","after_seconds":1e300}`, `{"assistant_id":"echo","metadata":"x"}`, `{"assistant_id":"echo","config":"x"}`, `{"assistant_id":"echo","webhook":"x"}`, `{"assistant_id":"echo","durability":"x"}`, `{"assistant_id":"echo","interrupt_before":5}`},
	"POST /threads/{thread_id}/runs/stream":      {`{"assistant_id":5}`, `{"assistant_id":"echo","stream_mode":["nope"]}`, `{"assistant_id":"echo","on_disconnect":"x"}`},
	"POST /threads/{thread_id}/runs/wait":        {`{"assistant_id":5}`, `{"assistant_id":"nope"}`, `{"assistant_id":"echo","if_not_exists":"x"}`},
	"POST /runs":                                 {`{"assistant_id":5}`, `{"assistant_id":"echo","on_completion":"x"}`, `{"assistant_id":"echo","command":{"resume":1}}`},
	"POST /runs/stream":                          {`{"assistant_id":"echo","stream_mode":"nope"}`},
	"POST /runs/wait":                            {`{"assistant_id":"echo","config":{"configurable":{"a":1}},"context":{"b":2}}`},
	"POST /runs/batch":                           {`[]`, `[{"assistant_id":5}]`, `[{"assistant_id":"echo"},{"assistant_id":"nope"}]`},
	"POST /runs/cancel":                          {`{}`, `{"status":"nope"}`, `{"thread_id":"x","run_ids":["y"]}`, `{"status":"pending","thread_id":"x"}`},
	"POST /threads/{thread_id}/runs/crons":       {`{"assistant_id":"echo"}`, `{"schedule":"@daily"}`, `{"assistant_id":"echo","schedule":"nope"}`, `{"assistant_id":"echo","schedule":"61 * * * *"}`, `{"assistant_id":"echo","schedule":5}`, `{"assistant_id":"echo","schedule":"0 0 30 2 *"}`, `{"assistant_id":"echo","schedule":"@daily","timezone":"Mars/Base"}`, `{"assistant_id":"echo","schedule":"@daily","end_time":"tomorrow"}`, `{"assistant_id":"echo","schedule":"@daily","enabled":"x"}`, `{"assistant_id":"nope","schedule":"@daily"}`, `{"assistant_id":"echo","schedule":"@daily","multitask_strategy":"x"}`, `{"assistant_id":"echo","schedule":"@daily","webhook":"x"}`},
	"POST /runs/crons":                           {`{"assistant_id":"echo"}`, `{"assistant_id":"echo","schedule":"* * *"}`, `{"assistant_id":"echo","schedule":"@daily","on_run_completed":"x"}`, `{"assistant_id":"echo","schedule":"@daily","timezone":"Local"}`, `{"assistant_id":"echo","schedule":"@daily","stream_mode":["nope"]}`, `{"assistant_id":"echo","schedule":"@daily","metadata":"x"}`},
	"POST /runs/crons/search":                    {`{"limit":"x"}`, `{"limit":100000}`, `{"offset":-1}`, `{"sort_by":"nope"}`, `{"sort_order":"up"}`, `{"select":["nope"]}`, `{"thread_id":"x"}`, `{"enabled":"x"}`, `{"assistant_id":5}`, `{"metadata":"x"}`},
	"POST /runs/crons/count":                     {`{"metadata":"x"}`, `{"thread_id":"x"}`, `{"assistant_id":5}`},
	"PATCH /runs/crons/{cron_id}":                {`{"schedule":"nope"}`, `{"schedule":""}`, `{"timezone":"Mars/Base"}`, `{"end_time":"x"}`, `{"enabled":"x"}`, `{"metadata":5}`, `{"webhook":"x"}`, `{"stream_mode":["nope"]}`, `{"durability":"x"}`, `{"on_run_completed":"x"}`},
	"PUT /store/items":                           {`{"namespace":"x","key":"k","value":{}}`, `{"namespace":["a"],"key":"","value":{}}`, `{"namespace":["a"],"key":"k","value":5}`, `{"namespace":["a.b"],"key":"k","value":{}}`, `{"namespace":["a"],"key":"k","value":{},"ttl":1e12}`, `{"namespace":["a"],"key":"k","value":{},"index":5}`},
	"DELETE /store/items":                        {`{"namespace":5,"key":"k"}`, `{"namespace":["a"]}`},
	"POST /store/items/search":                   {`{"namespace_prefix":"x"}`, `{"limit":"x"}`, `{"filter":5}`, `{"filter":{"a":{"$nope":1}}}`, `{"limit":-1}`},
	"POST /store/namespaces":                     {`{"prefix":"x"}`, `{"max_depth":"x"}`, `{"limit":-1}`},
	"POST /threads/{thread_id}/commands":         {`{}`, `{"id":"x","method":"run.start"}`, `{"id":1}`, `{"id":-1,"method":"run.start"}`, `{"id":1,"method":"nope"}`, `{"id":1,"method":"run.start","params":{}}`, `{"id":1,"method":"run.start","params":{"assistant_id":"nope"}}`, `{"id":1,"method":"run.start","params":5}`, `{"id":1,"method":"input.respond","params":{"interrupt_id":"nope","namespace":[],"response":1}}`, `{"id":1,"method":"subscription.subscribe","params":{"channels":["values"]}}`},
	"POST /threads/{thread_id}/stream/events":    {`{}`, `{"channels":[]}`, `{"channels":"values"}`, `{"channels":["nope"]}`, `{"channels":["values"],"depth":-1}`, `{"channels":["values"],"since":-1}`, `{"channels":["values"],"namespaces":"x"}`, `{"channels":["custom:"]}`},
}

// filterRoutes take client filters: field is the body field holding one.
var filterRoutes = map[string][]string{
	"POST /assistants/search":                  {"metadata"},
	"POST /assistants/count":                   {"metadata"},
	"POST /assistants/{assistant_id}/versions": {"metadata"},
	"POST /threads/search":                     {"metadata", "values"},
	"POST /threads/count":                      {"metadata", "values"},
	"POST /threads/{thread_id}/history":        {"metadata"},
	"POST /runs/crons/search":                  {"metadata"},
	"POST /runs/crons/count":                   {"metadata"},
	"POST /store/items/search":                 {"filter"},
}

// badFilters are filters every filter field refuses: keys that cannot
// name a JSON path, too many terms, too deep (they used to answer 500).
func badFilters() []string {
	many := map[string]int{}
	for i := range graphserver.MaxFilterTerms + 1 {
		many[fmt.Sprintf("k%d", i)] = i
	}
	manyJSON, _ := json.Marshal(many)
	deep := strings.Repeat("[", 25) + "1" + strings.Repeat("]", 25)
	return []string{
		`{"a\\b":1}`, `{"a\"b":1}`, `{"a\u0000b":1}`, `{"a\nb":1}`,
		string(manyJSON), `{"a":` + deep + `}`,
		`{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":{"j":1}}}}}}}}}}`,
	}
}

// badBodies are bodies every route reading a JSON object refuses.
func badBodies(limit int) map[string]string {
	deep := strings.Repeat(`{"a":`, graphserver.MaxJSONDepth+1) + "1" + strings.Repeat("}", graphserver.MaxJSONDepth+1)
	deepArray := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	return map[string]string{
		"Malformed":      `{"assistant_id":`,
		"Truncated":      `{"metadata":{"a":1}`,
		"Garbage":        "\x01\x02\x03not json",
		"String":         `"x"`,
		"Number":         `12`,
		"Bool":           `true`,
		"Deep":           deep,
		"DeepArray":      deepArray,
		"Huge":           `{"metadata":{"a":"` + strings.Repeat("x", limit) + `"}}`,
		"InvalidUTF8":    "{\"metadata\":{\"a\":\"\xff\xfe\"},\"graph_id\":\"agent\",\"assistant_id\":\"echo\"}",
		"InvalidUTF8Key": "{\"\xc3\x28\":1}",
		"RawNUL":         "{\"metadata\":{\"a\":\"x\x00y\"},\"graph_id\":\"agent\"}",
		"TrailingJunk":   `{} {}`,
	}
}

// badPathValues replace one path parameter at a time.
var badPathValues = []string{"not-a-uuid", "%00", "%FF%FE", strings.Repeat("a", 5000), "00000000-0000-4000-8000-00000000dead"}

// dbSnapshot returns every row of every table of the SQLite file, as text:
// two equal snapshots mean nothing stored changed. The store's full-text
// entries count as one table, whether indexed (store_fts) or still waiting
// (store_fts_pending): the DB moves them from one to the other at any time.
func dbSnapshot(t *testing.T, raw *sql.DB) string {
	t.Helper()
	var queries []string
	rows, err := raw.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'store_fts%' ORDER BY name`)
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		queries = append(queries, `SELECT * FROM "`+n+`"`)
	}
	require.NoError(t, rows.Close())
	queries = append(queries, `SELECT rowid, text FROM store_fts UNION ALL SELECT item_id, text FROM store_fts_pending`)
	var b strings.Builder
	for _, query := range queries {
		rows, err := raw.Query(query)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		var lines []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			lines = append(lines, fmt.Sprintf("%q", vals))
		}
		require.NoError(t, rows.Close())
		sort.Strings(lines)
		fmt.Fprintf(&b, "%s:\n%s\n", query, strings.Join(lines, "\n"))
	}
	return b.String()
}

var routeParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// TestBadInputEveryRoute sends malformed, mistyped, huge, deep, invalid
// UTF-8 and NUL-laden input to every route the handler serves (read from
// the route table, so a new route is covered at once): path parameters,
// query parameters, bodies, fields and filters. Every answer is a 4xx
// (never a 5xx) with a {"detail"} body, except that reads (GET) may answer
// 200; and nothing stored changes (the whole database is compared after
// each request).
func TestBadInputEveryRoute(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "gs.db")
	db, err := sqlite.Open(dbPath)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	srv, err := graphserver.New(graphserver.Options{
		Storage:  db,
		Graphs:   map[string]graphserver.Graph{"agent": graphtest.Nop{}, "echo": graphtest.Echo{}},
		Webhooks: graphserver.WebhookOptions{Sender: senderNop{}},
	})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.WithoutCancel(ctx))) })
	const limit = 64 << 10
	opts := Options{MaxBodyBytes: limit}
	ts := httptest.NewServer(New(srv, opts))
	t.Cleanup(ts.Close)

	// Fixtures the valid path parameters name.
	asst, err := srv.CreateAssistant(ctx, graphserver.AssistantCreate{GraphID: "echo", Metadata: graphserver.Metadata{"k": "v"}})
	require.NoError(t, err)
	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"k": "v"}})
	require.NoError(t, err)
	st, err := srv.StreamRun(ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "echo", Input: json.RawMessage(`{"x":1}`)})
	require.NoError(t, err)
	_, err = st.Wait(ctx)
	require.NoError(t, err)
	state, err := srv.GetThreadState(ctx, th.ThreadID, graphserver.ThreadStateQuery{})
	require.NoError(t, err)
	require.NotNil(t, state.Checkpoint)
	require.NoError(t, srv.PutItem(ctx, graphserver.ItemPut{Namespace: []string{"a"}, Key: "k", Value: graphserver.Object{"v": 1}}))
	// A disabled stateless cron: it never fires during the test, and its
	// on_run_completed can be patched (to a bad value).
	cr, err := srv.CreateCron(ctx, "", graphserver.CronCreate{RunCreate: graphserver.RunCreate{AssistantID: "echo"}, Schedule: "@yearly", Enabled: ptr(false)})
	require.NoError(t, err)
	valid := map[string]string{
		"assistant_id":  asst.AssistantID,
		"thread_id":     th.ThreadID,
		"run_id":        st.Run.RunID,
		"checkpoint_id": *state.Checkpoint.CheckpointID,
		"namespace":     "nope",
		"cron_id":       cr.CronID,
	}
	// Let the run's end settle everywhere before the first snapshot.
	require.Eventually(t, func() bool {
		got, err := srv.GetThread(ctx, th.ThreadID)
		return err == nil && got.Status == graphserver.ThreadIdle
	}, 10*time.Second, 5*time.Millisecond)

	raw, err := sql.Open("sqlite", dbPath+"?_pragma=query_only(1)")
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })
	before := dbSnapshot(t, raw)

	client := &http.Client{Timeout: 30 * time.Second}
	requests := 0
	check := func(t *testing.T, route, method, url, body string) {
		t.Helper()
		requests++
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second) // a read may be a live stream
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, method, url, strings.NewReader(body))
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		what := fmt.Sprintf("%s %s body %.80q", method, url[len(ts.URL):], body)
		require.Less(t, resp.StatusCode, 500, "%s: %s", what, b)
		if resp.StatusCode >= 400 {
			var detail struct {
				Detail string `json:"detail"`
			}
			require.NoError(t, json.Unmarshal(b, &detail), "%s: %s", what, b)
			require.NotEmpty(t, detail.Detail, what)
		} else {
			require.Equal(t, http.MethodGet, method, "%s must be refused (%d): %s", what, resp.StatusCode, b)
		}
		require.Equal(t, before, dbSnapshot(t, raw), "%s changed what is stored", what)
	}

	routes := (&handler{opts: opts.withDefaults(srv)}).routes()
	require.NotEmpty(t, routes)
	for _, rt := range routes {
		method, pattern, _ := strings.Cut(rt.pattern, " ")
		params := routeParam.FindAllStringSubmatch(pattern, -1)
		fill := func(bad map[string]string) string {
			return ts.URL + routeParam.ReplaceAllStringFunc(pattern, func(m string) string {
				name := m[1 : len(m)-1]
				if v, ok := bad[name]; ok {
					return v
				}
				return valid[name]
			})
		}
		takesBody := method != http.MethodGet && !slices.Contains(bodilessRoutes, rt.pattern)
		goodBody := ""
		if takesBody {
			goodBody = "{}"
			if slices.Contains(arrayBodyRoutes, rt.pattern) {
				goodBody = "[]"
			}
		}
		// Mutating routes with bad path values get an invalid body too,
		// so that a route ignoring a bad id still changes nothing.
		t.Run(rt.pattern, func(t *testing.T) {
			for _, p := range params {
				for _, v := range badPathValues {
					if p[1] == "namespace" && method == http.MethodGet {
						continue // any namespace is a valid (empty) read
					}
					check(t, rt.pattern, method, fill(map[string]string{p[1]: v}), goodBody)
				}
			}
			for _, q := range badQueries[rt.pattern] {
				check(t, rt.pattern, method, fill(nil)+"?"+q, "")
			}
			if !takesBody {
				return
			}
			for name, body := range badBodies(limit) {
				if slices.Contains(arrayBodyRoutes, rt.pattern) && name == "String" {
					continue
				}
				check(t, rt.pattern, method, fill(nil), body)
			}
			if slices.Contains(arrayBodyRoutes, rt.pattern) {
				check(t, rt.pattern, method, fill(nil), `{"assistant_id":"echo"}`)
			} else {
				check(t, rt.pattern, method, fill(nil), `[{"assistant_id":"echo"}]`)
			}
			for _, body := range badFields[rt.pattern] {
				check(t, rt.pattern, method, fill(nil), body)
			}
			for _, field := range filterRoutes[rt.pattern] {
				for _, f := range badFilters() {
					check(t, rt.pattern, method, fill(nil), `{"`+field+`":`+f+`}`)
				}
			}
		})
	}
	// Routes that take a body must name their bad fields.
	for _, rt := range routes {
		method, _, _ := strings.Cut(rt.pattern, " ")
		if method == http.MethodGet || slices.Contains(bodilessRoutes, rt.pattern) {
			continue
		}
		if _, ok := badFields[rt.pattern]; !ok {
			t.Errorf("route %s takes a body: add its mistyped fields to badFields", rt.pattern)
		}
	}
	t.Logf("%d bad requests over %d routes: no 5xx, nothing stored changed", requests, len(routes))
}

// senderNop accepts webhooks (so that runs may ask for one) and sends none.
type senderNop struct{}

func (senderNop) Send(context.Context, string, []byte, map[string]string) (int, error) {
	return 200, nil
}

func ptr[T any](v T) *T { return &v }
