package httpapi_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
)

func TestThreads(t *testing.T) {
	t.Parallel()
	for _, s := range []scenario{
		// POST /threads
		{name: "Create", method: "POST", url: "/threads", body: `{}`, status: 200,
			expectedContent: []string{`"status":"idle"`, `"values":null`, `"interrupts":{}`, `"metadata":{}`}, notExpectedContent: []string{`"ttl"`}},
		{name: "CreateEmptyBody", method: "POST", url: "/threads", status: 200, expectedContent: []string{`"status":"idle"`}},
		{name: "CreateFull", method: "POST", url: "/threads",
			body: `{"thread_id":"` + threadID + `","metadata":{"a":1},"graph_id":"agent","ttl":5,"if_exists":"raise"}`, status: 200,
			expectedContent: []string{`"thread_id":"` + threadID + `"`, `"metadata":{"a":1,"graph_id":"agent"}`}},
		{name: "CreateBadID", method: "POST", url: "/threads", body: `{"thread_id":"nope"}`, status: 422,
			expectedContent: []string{`{"detail":"Invalid thread ID: must be a UUID"}`}},
		{name: "CreateExists", method: "POST", url: "/threads", before: createThread, body: `{"thread_id":"` + threadID + `","if_exists":"raise"}`, status: 409,
			expectedContent: []string{`{"detail":`}},
		{name: "CreateExistsDoNothing", method: "POST", url: "/threads", before: createThread, body: `{"thread_id":"` + threadID + `","if_exists":"do_nothing"}`, status: 200,
			expectedContent: []string{`"owner":"ann"`}},
		{name: "CreateBadIfExists", method: "POST", url: "/threads", body: `{"if_exists":"update"}`, status: 422},
		{name: "CreateBadTTL", method: "POST", url: "/threads", body: `{"ttl":{"ttl":5,"strategy":"forever"}}`, status: 422},
		{name: "CreateSupersteps", method: "POST", url: "/threads", body: `{"supersteps":[{"updates":[{"values":{"a":1},"as_node":"x"}]}]}`, status: 400,
			expectedContent: []string{`requires a graph_id`}},
		{name: "CreateBadJSON", method: "POST", url: "/threads", body: `nope`, status: 422, expectedContent: []string{`{"detail":"Invalid JSON in request body"}`}},

		// POST /threads/search, /count, /prune (static segments beat {thread_id})
		{name: "Search", method: "POST", url: "/threads/search", before: createThread, body: `{"metadata":{"owner":"ann"},"status":"idle"}`, status: 200,
			expectedContent: []string{`"thread_id":"` + threadID + `"`}, notExpectedContent: []string{`"ttl"`},
			expectedHeaders: map[string]string{"X-Pagination-Total": "1", "X-Pagination-Next": ""}},
		{name: "SearchIDsSelect", method: "POST", url: "/threads/search", before: createThread,
			body: `{"ids":["` + threadID + `"],"select":["thread_id","status"],"sort_by":"state_updated_at","limit":1}`, status: 200,
			expectedContent: []string{`[{"status":"idle","thread_id":"` + threadID + `"}]`}},
		{name: "SearchEmptyBody", method: "POST", url: "/threads/search", status: 200, expectedContent: []string{"[]"},
			expectedHeaders: map[string]string{"X-Pagination-Total": "0"}},
		{name: "SearchBadStatus", method: "POST", url: "/threads/search", body: `{"status":"sleeping"}`, status: 422, expectedContent: []string{`"detail":"Invalid status`}},
		{name: "SearchBadIDs", method: "POST", url: "/threads/search", body: `{"ids":["x"]}`, status: 422},
		{name: "SearchBadSort", method: "POST", url: "/threads/search", body: `{"sort_by":"metadata"}`, status: 422},
		{name: "SearchBadLimit", method: "POST", url: "/threads/search", body: `{"limit":0.5}`, status: 422},
		{name: "Count", method: "POST", url: "/threads/count", before: createThread, body: `{"metadata":{"owner":"ann"}}`, status: 200, expectedContent: []string{"1\n"}},
		{name: "CountNone", method: "POST", url: "/threads/count", before: createThread, body: `{"status":"busy"}`, status: 200, expectedContent: []string{"0\n"}},
		{name: "CountBadStatus", method: "POST", url: "/threads/count", body: `{"status":"x"}`, status: 422},
		{name: "Prune", method: "POST", url: "/threads/prune", before: createThread, body: `{"thread_ids":["` + threadID + `","` + missingID + `"]}`, status: 200,
			expectedContent: []string{`{"pruned_count":1}`},
			after: func(t *testing.T, srv *graphserver.Server) {
				_, err := srv.GetThread(t.Context(), threadID)
				require.Equal(t, graphserver.ENOTFOUND, graphserver.ErrorCode(err))
			}},
		{name: "PruneNoIDs", method: "POST", url: "/threads/prune", body: `{}`, status: 422, expectedContent: []string{`{"detail":"thread_ids is required"}`}},
		{name: "PruneBadStrategy", method: "POST", url: "/threads/prune", body: `{"thread_ids":[],"strategy":"all"}`, status: 422},

		// GET /threads/{thread_id}
		{name: "Get", method: "GET", url: "/threads/" + threadID, before: createThread, status: 200,
			expectedContent: []string{`"thread_id":"` + threadID + `"`}, notExpectedContent: []string{`"ttl"`}},
		{name: "GetIncludeTTL", method: "GET", url: "/threads/" + threadID + "?include=ttl", before: createThread, status: 200,
			expectedContent: []string{`"ttl":{"strategy":"delete","ttl_minutes":60,"expires_at":"`}},
		{name: "GetNotUUID", method: "GET", url: "/threads/not-a-uuid", status: 422, expectedContent: []string{`{"detail":"Invalid thread ID: must be a UUID"}`}},
		{name: "GetMissing", method: "GET", url: "/threads/" + missingID, status: 404, expectedContent: []string{`{"detail":`}},

		// PATCH /threads/{thread_id}
		{name: "Patch", method: "PATCH", url: "/threads/" + threadID, before: createThread, body: `{"metadata":{"tag":"x"}}`, status: 200,
			expectedContent: []string{`"metadata":{"owner":"ann","tag":"x"}`}, notExpectedContent: []string{`"ttl"`}},
		{name: "PatchMissing", method: "PATCH", url: "/threads/" + missingID, body: `{}`, status: 404},
		{name: "PatchNotUUID", method: "PATCH", url: "/threads/x", body: `{}`, status: 422},
		{name: "PatchBadTTL", method: "PATCH", url: "/threads/" + threadID, before: createThread, body: `{"ttl":-3}`, status: 422},

		// DELETE /threads/{thread_id}
		{name: "Delete", method: "DELETE", url: "/threads/" + threadID, before: createThread, status: 204,
			after: func(t *testing.T, srv *graphserver.Server) {
				_, err := srv.GetThread(t.Context(), threadID)
				require.Equal(t, graphserver.ENOTFOUND, graphserver.ErrorCode(err))
			}},
		{name: "DeleteMissing", method: "DELETE", url: "/threads/" + missingID, status: 404},
		{name: "DeleteNotUUID", method: "DELETE", url: "/threads/x", status: 422},

		// POST /threads/{thread_id}/copy
		{name: "Copy", method: "POST", url: "/threads/" + threadID + "/copy", before: createThread, status: 200,
			expectedContent: []string{`"owner":"ann"`, `"status":"idle"`}, notExpectedContent: []string{`"thread_id":"` + threadID + `"`}},
		{name: "CopyMissing", method: "POST", url: "/threads/" + missingID + "/copy", status: 409, expectedContent: []string{`{"detail":`}},
		{name: "CopyNotUUID", method: "POST", url: "/threads/x/copy", status: 422},
	} {
		s.run(t)
	}
}

// TestThreadIDIsUUID: the server names a thread (a stateless run's
// temporary one too) with a UUIDv7, as the LangGraph JS server does (the
// Python one mints v4; wire-contract.md, IDs), so that an id minted later
// sorts after the earlier ones.
func TestThreadIDIsUUID(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	uuidv7 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	first, err := srv.CreateThread(t.Context(), graphserver.ThreadCreate{})
	require.NoError(t, err)
	require.Regexp(t, uuidv7, first.ThreadID)
	copied, err := srv.CopyThread(t.Context(), first.ThreadID)
	require.NoError(t, err)
	require.Regexp(t, uuidv7, copied.ThreadID)
	require.Less(t, first.ThreadID, copied.ThreadID)
	stateless, err := srv.CreateRun(t.Context(), "", graphserver.RunCreate{AssistantID: "agent"})
	require.NoError(t, err)
	require.Regexp(t, uuidv7, stateless.ThreadID, "a stateless run's temporary thread")
}
