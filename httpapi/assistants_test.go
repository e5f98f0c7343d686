package httpapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/httpapi"
)

func TestAssistants(t *testing.T) {
	t.Parallel()
	for _, s := range []scenario{
		// POST /assistants
		{name: "Create", method: "POST", url: "/assistants", body: `{"graph_id":"agent","metadata":{"a":1},"unknown_field":true}`, status: 200,
			expectedContent: []string{`"graph_id":"agent"`, `"name":"Untitled"`, `"version":1`, `"metadata":{"a":1}`, `"config":{}`, `"description":null`}},
		{name: "CreateTextPlain", method: "POST", url: "/assistants", body: `{"graph_id":"agent","name":"t"}`,
			headers: map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, status: 200, expectedContent: []string{`"name":"t"`}},
		{name: "CreateGivenID", method: "POST", url: "/assistants", body: `{"graph_id":"agent","assistant_id":"` + asstID + `"}`, status: 200,
			expectedContent: []string{`"assistant_id":"` + asstID + `"`}},
		{name: "CreateNoGraph", method: "POST", url: "/assistants", body: ``, status: 422, expectedContent: []string{`{"detail":"graph_id is required"}`}},
		{name: "CreateUnknownGraph", method: "POST", url: "/assistants", body: `{"graph_id":"nope"}`, status: 404, expectedContent: []string{`{"detail":"Graph \"nope\" not found"}`}},
		{name: "CreateBadID", method: "POST", url: "/assistants", body: `{"graph_id":"agent","assistant_id":"abc"}`, status: 422,
			expectedContent: []string{`{"detail":"Invalid assistant ID: must be a UUID"}`}},
		{name: "CreateBadJSON", method: "POST", url: "/assistants", body: `{"graph_id":`, status: 422, expectedContent: []string{`{"detail":"Invalid JSON in request body"}`}},
		{name: "CreateWrongType", method: "POST", url: "/assistants", body: `{"graph_id":5}`, status: 422,
			expectedContent: []string{`"detail":"Invalid request body: graph_id must be a string, not number"`}},
		{name: "CreateConfigAndContext", method: "POST", url: "/assistants", body: `{"graph_id":"agent","config":{"configurable":{"a":1}},"context":{"b":2}}`, status: 400,
			expectedContent: []string{`"detail":"Cannot specify both configurable and context`}},
		{name: "CreateExists", method: "POST", url: "/assistants", before: createAssistant, body: `{"graph_id":"agent","assistant_id":"` + asstID + `"}`, status: 409,
			expectedContent: []string{`{"detail":`}},
		{name: "CreateExistsDoNothing", method: "POST", url: "/assistants", before: createAssistant,
			body: `{"graph_id":"agent","assistant_id":"` + asstID + `","if_exists":"do_nothing","name":"new"}`, status: 200,
			expectedContent: []string{`"name":"mine"`}},
		{name: "CreateTooLarge", method: "POST", url: "/assistants", opts: httpapi.Options{MaxBodyBytes: 64},
			body: `{"graph_id":"agent","metadata":{"pad":"` + strings.Repeat("x", 100) + `"}}`, status: 413,
			expectedContent: []string{`{"detail":"Request body exceeds 64 bytes"}`},
			after: func(t *testing.T, srv *graphserver.Server) {
				n, err := srv.CountAssistants(t.Context(), graphserver.AssistantSearch{})
				require.NoError(t, err)
				require.Equal(t, 2, n, "only the system assistants")
			}},

		// POST /assistants/search and /count
		{name: "Search", method: "POST", url: "/assistants/search", before: createAssistant, body: `{"metadata":{"team":"a"}}`, status: 200,
			expectedContent: []string{`"assistant_id":"` + asstID + `"`}, notExpectedContent: []string{agentID},
			expectedHeaders: map[string]string{"X-Pagination-Total": "1", "X-Pagination-Next": ""}},
		{name: "SearchEmptyBodyPaged", method: "POST", url: "/assistants/search", before: createAssistant, body: `{"limit":2,"sort_by":"name","sort_order":"asc"}`, status: 200,
			expectedContent: []string{`"name":"agent"`, `"name":"mine"`}, notExpectedContent: []string{`"name":"other"`},
			expectedHeaders: map[string]string{"X-Pagination-Total": "3", "X-Pagination-Next": "2"}},
		{name: "SearchSelect", method: "POST", url: "/assistants/search", body: `{"graph_id":"agent","select":["assistant_id","name"]}`, status: 200,
			expectedContent: []string{`[{"assistant_id":"` + agentID + `","name":"agent"}]`}},
		{name: "SearchBadLimit", method: "POST", url: "/assistants/search", body: `{"limit":1001}`, status: 422, expectedContent: []string{`"detail":"Invalid limit 1001`}},
		{name: "SearchBadOffset", method: "POST", url: "/assistants/search", body: `{"offset":-1}`, status: 422, expectedContent: []string{`"detail":"Invalid offset`}},
		{name: "SearchBadSort", method: "POST", url: "/assistants/search", body: `{"sort_by":"color"}`, status: 422, expectedContent: []string{`"detail":"Invalid sort_by`}},
		{name: "SearchBadOrder", method: "POST", url: "/assistants/search", body: `{"sort_order":"up"}`, status: 422, expectedContent: []string{`"detail":"Invalid sort_order`}},
		{name: "SearchBadSelect", method: "POST", url: "/assistants/search", body: `{"select":["secret"]}`, status: 422, expectedContent: []string{`"detail":"Invalid select field`}},
		{name: "Count", method: "POST", url: "/assistants/count", before: createAssistant, body: `{"graph_id":"agent"}`, status: 200, expectedContent: []string{"2\n"}},
		{name: "CountEmptyBody", method: "POST", url: "/assistants/count", status: 200, expectedContent: []string{"2\n"}},
		{name: "CountBadBody", method: "POST", url: "/assistants/count", body: `{"metadata":3}`, status: 422, expectedContent: []string{`"detail":"Invalid request body: metadata must be an object`}},

		// GET /assistants/{id}
		{name: "Get", method: "GET", url: "/assistants/" + asstID, before: createAssistant, status: 200, expectedContent: []string{`"name":"mine"`}},
		{name: "GetByGraphID", method: "GET", url: "/assistants/agent", status: 200,
			expectedContent: []string{`"assistant_id":"` + agentID + `"`, `"metadata":{"created_by":"system"}`}},
		{name: "GetNotUUID", method: "GET", url: "/assistants/not-a-uuid", status: 422, expectedContent: []string{`{"detail":"Invalid assistant ID: must be a UUID or a registered graph ID"}`}},
		{name: "GetMissing", method: "GET", url: "/assistants/" + missingID, status: 404, expectedContent: []string{`{"detail":`}},

		// PATCH /assistants/{id}
		{name: "Patch", method: "PATCH", url: "/assistants/" + asstID, before: createAssistant, body: `{"metadata":{"b":2},"name":"renamed"}`, status: 200,
			expectedContent: []string{`"version":2`, `"name":"renamed"`, `"metadata":{"b":2,"team":"a"}`}},
		{name: "PatchEmpty", method: "PATCH", url: "/assistants/" + asstID, before: createAssistant, status: 200, expectedContent: []string{`"version":2`}},
		{name: "PatchUnknownGraph", method: "PATCH", url: "/assistants/" + asstID, before: createAssistant, body: `{"graph_id":"nope"}`, status: 404},
		{name: "PatchConfigAndContext", method: "PATCH", url: "/assistants/" + asstID, before: createAssistant,
			body: `{"config":{"configurable":{"a":1}},"context":{"b":2}}`, status: 400, expectedContent: []string{`"detail":"Cannot specify both`}},
		{name: "PatchMissing", method: "PATCH", url: "/assistants/" + missingID, body: `{}`, status: 404},
		{name: "PatchNotUUID", method: "PATCH", url: "/assistants/xyz", body: `{}`, status: 422},
		{name: "PatchBadJSON", method: "PATCH", url: "/assistants/" + asstID, body: `[`, status: 422, expectedContent: []string{"Invalid JSON in request body"}},

		// DELETE /assistants/{id}
		{name: "Delete", method: "DELETE", url: "/assistants/" + asstID + "?delete_threads=true", before: createAssistant, status: 204,
			after: func(t *testing.T, srv *graphserver.Server) {
				_, err := srv.GetAssistant(t.Context(), asstID)
				require.Equal(t, graphserver.ENOTFOUND, graphserver.ErrorCode(err))
			}},
		{name: "DeleteBadBool", method: "DELETE", url: "/assistants/" + asstID + "?delete_threads=maybe", before: createAssistant, status: 422},
		{name: "DeleteMissing", method: "DELETE", url: "/assistants/" + missingID, status: 404},
		{name: "DeleteNotUUID", method: "DELETE", url: "/assistants/xyz", status: 422},

		// POST /assistants/{id}/versions
		{name: "Versions", method: "POST", url: "/assistants/" + asstID + "/versions", before: patchTwice, body: `{"limit":2}`, status: 200,
			expectedContent: []string{`"version":3`, `"version":2`}, notExpectedContent: []string{`"version":1`}},
		{name: "VersionsMetadata", method: "POST", url: "/assistants/" + asstID + "/versions", before: patchTwice, body: `{"metadata":{"step":"2"}}`, status: 200,
			expectedContent: []string{`"version":2`}, notExpectedContent: []string{`"version":3`, `"version":1`}},
		{name: "VersionsMissing", method: "POST", url: "/assistants/" + missingID + "/versions", status: 404},
		{name: "VersionsBadLimit", method: "POST", url: "/assistants/" + asstID + "/versions", body: `{"limit":-1}`, status: 422},

		// POST /assistants/{id}/latest
		{name: "LatestBody", method: "POST", url: "/assistants/" + asstID + "/latest", before: patchTwice, body: `{"version":1}`, status: 200,
			expectedContent: []string{`"version":1`, `"name":"mine"`}},
		{name: "LatestQuery", method: "POST", url: "/assistants/" + asstID + "/latest?version=2", before: patchTwice, status: 200,
			expectedContent: []string{`"version":2`}},
		{name: "LatestMissingVersion", method: "POST", url: "/assistants/" + asstID + "/latest", before: patchTwice, body: `{"version":9}`, status: 404},
		{name: "LatestNoVersion", method: "POST", url: "/assistants/" + asstID + "/latest", before: patchTwice, status: 422, expectedContent: []string{`{"detail":"version is required"}`}},
		{name: "LatestBadQuery", method: "POST", url: "/assistants/" + asstID + "/latest?version=x", status: 422},
		{name: "LatestMissingAssistant", method: "POST", url: "/assistants/" + missingID + "/latest", body: `{"version":1}`, status: 404},
	} {
		s.run(t)
	}
}

// patchTwice creates assistant asstID and patches it twice (versions 1-3;
// version 2 has metadata step=2).
func patchTwice(t *testing.T, srv *graphserver.Server) {
	t.Helper()
	createAssistant(t, srv)
	for _, step := range []string{"2", "3"} {
		_, err := srv.UpdateAssistant(t.Context(), asstID, graphserver.AssistantPatch{Metadata: graphserver.Metadata{"step": step}})
		require.NoError(t, err)
	}
}
