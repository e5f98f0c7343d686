package graphserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

// TestSearchThreadsExtract reproduces the Platform's threads search extract
// (langgraph_api threads.search_threads with utils.extract: a dotted path
// with [index] per alias, evaluated on each thread, at most 10 paths).
func TestSearchThreadsExtract(t *testing.T) {
	t.Parallel()
	b := setupRuns(t, nil)
	tag := "extract"
	th, err := b.srv.CreateThread(b.ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"tag": tag, "owner": map[string]any{"name": "ann"}}})
	require.NoError(t, err)
	_, err = b.srv.WaitRun(b.ctx, th.ThreadID, graphserver.RunCreate{AssistantID: "echo",
		Input: json.RawMessage(`{"messages":[{"content":"hi"},{"content":"last","tags":["a","b"]}],"n":3}`)})
	require.NoError(t, err)
	empty, err := b.srv.CreateThread(b.ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"tag": tag}})
	require.NoError(t, err)

	page, err := b.srv.SearchThreads(b.ctx, graphserver.ThreadSearch{
		Metadata: graphserver.Metadata{"tag": tag}, SortBy: "created_at", SortOrder: "asc",
		Extract: map[string]string{
			"last":    "values.messages[-1].content",
			"first":   "values.messages[0]",
			"tag2":    "values.messages[1].tags[-1]",
			"n":       "values.n",
			"owner":   "metadata.owner.name",
			"missing": "values.messages[9].content",
			"wrong":   "values.n[0]",
			"cfg":     "metadata.graph_id",
			"conf":    "config.recursion_limit",
			"intr":    "interrupts",
		},
	})
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
	require.Equal(t, map[string]any{
		"last": "last", "first": map[string]any{"content": "hi"}, "tag2": "b", "n": float64(3),
		"owner": "ann", "missing": nil, "wrong": nil, "cfg": "echo", "conf": nil, "intr": map[string]any{},
	}, page.Items[0].Extracted)
	require.Nil(t, page.Items[1].Extracted["last"])
	require.Equal(t, "ann", page.Items[0].Extracted["owner"])
	require.Equal(t, empty.ThreadID, page.Items[1].ThreadID)

	// A select keeps extracted.
	page, err = b.srv.SearchThreads(b.ctx, graphserver.ThreadSearch{
		IDs: []string{th.ThreadID}, Select: []string{"thread_id"}, Extract: map[string]string{"last": "values.messages[-1].content"},
	})
	require.NoError(t, err)
	body, err := json.Marshal(page)
	require.NoError(t, err)
	require.JSONEq(t, `[{"thread_id":"`+th.ThreadID+`","extracted":{"last":"last"}}]`, string(body))

	// Without extract, no extracted member.
	page, err = b.srv.SearchThreads(b.ctx, graphserver.ThreadSearch{IDs: []string{th.ThreadID}})
	require.NoError(t, err)
	body, err = json.Marshal(page)
	require.NoError(t, err)
	require.NotContains(t, string(body), "extracted")

	tooMany := map[string]string{}
	for i := range graphserver.ThreadExtractMax + 1 {
		tooMany[strings.Repeat("a", i+1)] = "values.n"
	}
	for _, bad := range []map[string]string{
		tooMany,
		{"x": "status"},
		{"x": ""},
		{"x": "values..n"},
		{"x": "values.messages[-1"},
		{"x": "values.messages[a]"},
		{"x": "values.messages[]"},
		{"x": "values.[0]"},
		{"x": "values.messages[99999999999]"},
		{"x": "values." + strings.Repeat("a.", 40) + "b"},
		{"": "values.n"},
	} {
		_, err := b.srv.SearchThreads(b.ctx, graphserver.ThreadSearch{Extract: bad})
		requireCode(t, err, graphserver.EINVALID)
	}
}
