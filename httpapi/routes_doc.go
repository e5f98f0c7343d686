package httpapi

import "github.com/graphserver/graphserver"

// routeDocs describes every route of routes.go for GET /openapi.json, keyed
// by the same pattern. Adding a route? Add its entry here, beside the line
// in routes.go: a summary, the query parameters and headers its handler
// reads, and a value of the Go type of its request body (body) and of its
// JSON response (resp), which are reflected into JSON Schemas; path
// parameters come from the pattern. TestOpenAPIDescribesEveryRoute fails
// until every served route has an entry and every entry a route.
var routeDocs = map[string]opDoc{
	// System
	"GET /{$}": {summary: "Landing: the server's name, version, documentation links and graphs (an HTML page when the client prefers text/html)", resp: landingResponse{},
		description: "Answers a small HTML page instead of JSON when the Accept header ranks text/html above application/json, as a browser's does."},
	"GET /ok": {summary: "Health check", resp: okResponse{},
		query: []paramDoc{q("check_db", "boolean", "Also check that the storage answers (500 if not).")}},
	"GET /info":               {summary: "Server information and capabilities", resp: graphserver.Info{}},
	"GET /metrics":            {summary: "Prometheus metrics (httpapi.Options.Metrics)", kind: respText},
	"GET /openapi.json":       {summary: "This OpenAPI document"},
	"GET /docs":               {summary: "API reference page rendering /openapi.json", kind: respHTML},
	"POST /internal/truncate": {summary: "Empty the storage (test helper, httpapi.Options.Truncate)", body: truncateRequest{}, resp: okResponse{}},

	// Assistants
	"POST /assistants":                 {summary: "Create an assistant", body: graphserver.AssistantCreate{}, resp: graphserver.Assistant{}},
	"POST /assistants/search":          {summary: "Search assistants", body: graphserver.AssistantSearch{}, resp: []graphserver.Assistant{}, paged: true},
	"POST /assistants/count":           {summary: "Count assistants", body: graphserver.AssistantSearch{}, resp: 0},
	"GET /assistants/{assistant_id}":   {summary: "Get an assistant", resp: graphserver.Assistant{}},
	"PATCH /assistants/{assistant_id}": {summary: "Update an assistant (a new version)", body: graphserver.AssistantPatch{}, resp: graphserver.Assistant{}},
	"DELETE /assistants/{assistant_id}": {summary: "Delete an assistant", kind: respNoContent,
		query: []paramDoc{q("delete_threads", "boolean", "Also delete the threads whose metadata.assistant_id is this assistant.")}},
	"POST /assistants/{assistant_id}/versions": {summary: "List an assistant's versions", body: graphserver.AssistantVersionSearch{}, resp: []graphserver.AssistantVersion{}},
	"POST /assistants/{assistant_id}/latest": {summary: "Make a version the assistant's current one", body: latestVersionBody{}, resp: graphserver.Assistant{},
		query: []paramDoc{q("version", "integer", "The version, when the body does not give it.")}},
	"GET /assistants/{assistant_id}/graph": {summary: "Draw the assistant's graph", resp: graphserver.Drawing{},
		query: []paramDoc{q("xray", "string", "true, false or a depth: include subgraphs down to that depth.")}},
	"GET /assistants/{assistant_id}/schemas": {summary: "The JSON Schemas of the assistant's graph (input, output, state, config, context)", resp: graphserver.GraphSchemas{}},
	"GET /assistants/{assistant_id}/subgraphs": {summary: "The schemas of the graph's subgraphs, by namespace", resp: map[string]graphserver.GraphSchemas{},
		query: []paramDoc{q("recurse", "boolean", "Include nested subgraphs.")}},
	"GET /assistants/{assistant_id}/subgraphs/{namespace}": {summary: "The schemas of the subgraphs under a namespace", resp: map[string]graphserver.GraphSchemas{},
		query: []paramDoc{q("recurse", "boolean", "Include nested subgraphs.")}},

	// Threads
	"POST /threads":        {summary: "Create a thread", body: graphserver.ThreadCreate{}, resp: graphserver.Thread{}},
	"POST /threads/search": {summary: "Search threads", body: graphserver.ThreadSearch{}, resp: []graphserver.Thread{}, paged: true},
	"POST /threads/count":  {summary: "Count threads", body: graphserver.ThreadSearch{}, resp: 0},
	"POST /threads/prune":  {summary: "Delete threads, or keep only their latest checkpoint", body: graphserver.ThreadPrune{}, resp: prunedResponse{}},
	"GET /threads/{thread_id}": {summary: "Get a thread", resp: graphserver.Thread{},
		query: []paramDoc{q("include", "array", "Extra fields to include: ttl.")}},
	"PATCH /threads/{thread_id}":     {summary: "Update a thread's metadata or TTL", body: graphserver.ThreadPatch{}, resp: graphserver.Thread{}},
	"DELETE /threads/{thread_id}":    {summary: "Delete a thread, its checkpoints and runs (running ones are cancelled)", kind: respNoContent},
	"POST /threads/{thread_id}/copy": {summary: "Copy a thread with its checkpoints", resp: graphserver.Thread{}},
	"GET /threads/{thread_id}/stream": {summary: "Follow every run of a thread (Server-Sent Events)", kind: respSSE,
		query: []paramDoc{
			q("stream_modes", "array", "Stream modes to follow (default: every mode the runs stream)."),
			q("stream_mode", "array", "Same as stream_modes."),
		},
		headers: []paramDoc{q("Last-Event-ID", "string", "Resume after this event id (\"-\" replays what is kept).")}},

	// Thread state and history
	"GET /threads/{thread_id}/state": {summary: "Get a thread's current state", resp: graphserver.ThreadState{},
		query: []paramDoc{q("subgraphs", "boolean", "Include the state of subgraphs in tasks.")}},
	"GET /threads/{thread_id}/state/{checkpoint_id}": {summary: "Get a thread's state at a checkpoint", resp: graphserver.ThreadState{},
		query: []paramDoc{q("subgraphs", "boolean", "Include the state of subgraphs in tasks.")}},
	"POST /threads/{thread_id}/state/checkpoint": {summary: "Get a thread's state at a checkpoint (given in the body)", body: stateCheckpointBody{}, resp: graphserver.ThreadState{}},
	"POST /threads/{thread_id}/state":            {summary: "Update a thread's state (as a node, optionally from a checkpoint: a fork)", body: stateUpdateBody{}, resp: graphserver.ThreadStateUpdateResult{}},
	"PATCH /threads/{thread_id}/state":           {summary: "Merge metadata into the latest checkpoint's", body: graphserver.ThreadStatePatch{}, kind: respNoContent},
	"GET /threads/{thread_id}/history": {summary: "List a thread's past states, newest first", resp: []graphserver.ThreadState{},
		query: []paramDoc{q("limit", "integer", "At most this many states (default 10)."), q("before", "string", "Only states before this checkpoint id.")}},
	"POST /threads/{thread_id}/history": {summary: "List a thread's past states, filtered", body: historyBody{}, resp: []graphserver.ThreadState{}},

	// Runs on a thread
	"POST /threads/{thread_id}/runs":        {summary: "Create a background run", body: graphserver.RunCreate{}, resp: graphserver.Run{}},
	"POST /threads/{thread_id}/runs/stream": {summary: "Create a run and stream its output (Server-Sent Events)", body: graphserver.RunCreate{}, kind: respSSE},
	"POST /threads/{thread_id}/runs/wait": {summary: "Create a run and wait for its final output", body: graphserver.RunCreate{},
		description: "The response starts at once and sends a newline every 5 s while the run goes on; the body is the run's final values, its interrupt, or {\"__error__\": {...}}."},
	"GET /threads/{thread_id}/runs": {summary: "List a thread's runs, newest first", resp: []graphserver.Run{},
		query: []paramDoc{
			q("limit", "integer", "At most this many runs (default 10)."), q("offset", "integer", "Skip this many runs."),
			q("status", "string", "Only runs with this status: pending, running, success, error, timeout, interrupted."),
			q("select", "array", "Only these fields of each run."),
		}},
	"GET /threads/{thread_id}/runs/{run_id}":    {summary: "Get a run", resp: graphserver.Run{}},
	"DELETE /threads/{thread_id}/runs/{run_id}": {summary: "Delete a finished run with the checkpoints it wrote", kind: respNoContent},
	"POST /threads/{thread_id}/runs/{run_id}/cancel": {summary: "Cancel a run", kind: respNoContent,
		query: []paramDoc{
			q("wait", "boolean", "Wait for the run to end and answer its final output (200)."),
			q("action", "string", "interrupt (default: keep what it wrote) or rollback (delete the run and what it wrote)."),
		},
		also: map[int]string{200: "With wait: the run's final output.", 202: "Cancellation recorded; the run stops at its next opportunity."}},
	"GET /threads/{thread_id}/runs/{run_id}/join": {summary: "Wait for a run's final output"},
	"GET /threads/{thread_id}/runs/{run_id}/stream": {summary: "Join a run's stream (Server-Sent Events)", kind: respSSE,
		query: []paramDoc{
			q("stream_mode", "array", "Only these stream modes."),
			q("cancel_on_disconnect", "boolean", "Cancel the run when this connection drops."),
		},
		headers: []paramDoc{q("Last-Event-ID", "string", "Resume after this event id.")}},

	// Stateless runs, batch, bulk cancel
	"POST /runs":        {summary: "Create a stateless background run (on a temporary thread)", body: graphserver.RunCreate{}, resp: graphserver.Run{}},
	"POST /runs/stream": {summary: "Create a stateless run and stream its output (Server-Sent Events)", body: graphserver.RunCreate{}, kind: respSSE},
	"POST /runs/wait":   {summary: "Create a stateless run and wait for its final output", body: graphserver.RunCreate{}},
	"POST /runs/batch":  {summary: "Create several stateless background runs", body: []graphserver.RunCreate{}, resp: []graphserver.Run{}},
	"POST /runs/cancel": {summary: "Cancel runs by thread and ids, or by status", body: graphserver.RunCancelSelect{}, kind: respNoContent,
		query: []paramDoc{q("action", "string", "interrupt (default) or rollback.")}},
	"GET /runs/{run_id}/stream": {summary: "Join a stateless run's stream (Server-Sent Events)", kind: respSSE,
		query: []paramDoc{
			q("stream_mode", "array", "Only these stream modes."),
			q("cancel_on_disconnect", "boolean", "Cancel the run when this connection drops."),
		},
		headers: []paramDoc{q("Last-Event-ID", "string", "Resume after this event id.")}},

	// Protocol v2 (thread-centric streaming: the SDKs' client.threads.stream)
	"POST /threads/{thread_id}/commands": {summary: "Run a protocol-v2 command (run.start, input.respond, state.get, ...)", body: graphserver.ThreadCommand{}, resp: commandReply{},
		description: "run.start creates the thread when it is missing; on a thread waiting at an interrupt its input is the resume value. A failed command answers {type: \"error\", id, error, message, detail} with the status of its error."},
	"POST /threads/{thread_id}/stream/events": {summary: "Follow a thread's protocol-v2 events (Server-Sent Events)", body: graphserver.ThreadEventsRequest{}, kind: respSSE,
		description: "The thread need not exist yet. Each frame's data is an event {type: \"event\", event_id, seq, method, params: {namespace, timestamp, data}}; the stream stays open across runs."},

	"GET /threads/{thread_id}/stream/events": {summary: "Protocol v2 over a WebSocket (upgrade): commands as frames, subscription.subscribe for events",
		description: "Send {id, method, params} text frames: subscription.subscribe {channels, namespaces?, depth?} answers {subscription_id} and sends the matching events (the latest run's from its start, then live) as frames; other commands run as POST /threads/{thread_id}/commands. Without an upgrade: 426."},

	// Crons
	"POST /threads/{thread_id}/runs/crons": {summary: "Schedule runs on a thread (a cron)", body: graphserver.CronCreate{}, resp: graphserver.Cron{},
		description: "schedule is a 5-field cron expression or a descriptor (@hourly, @daily, @every 1h30m, ...), read in timezone (IANA, default UTC). Each firing creates a run on the thread with the cron's multitask_strategy."},
	"POST /runs/crons": {summary: "Schedule stateless runs (a cron)", body: graphserver.CronCreate{}, resp: graphserver.Cron{},
		description: "Each firing creates a run on a new thread, deleted after the run unless on_run_completed is keep."},
	"POST /runs/crons/search": {summary: "Search crons", body: graphserver.CronSearch{}, resp: []graphserver.Cron{}, paged: true},
	"POST /runs/crons/count":  {summary: "Count crons", body: graphserver.CronSearch{}, resp: 0},
	"PATCH /runs/crons/{cron_id}": {summary: "Update a cron", body: graphserver.CronPatch{}, resp: graphserver.Cron{},
		description: "Omitted fields are unchanged; an explicit \"end_time\": null clears the end time; metadata is merged. Changing the schedule or time zone, or re-enabling, schedules the next firing from now."},
	"DELETE /runs/crons/{cron_id}": {summary: "Delete a cron (the runs it created stay)", kind: respNoContent},

	// Store
	"PUT /store/items": {summary: "Put an item", body: graphserver.ItemPut{}, kind: respNoContent},
	"GET /store/items": {summary: "Get an item (null when missing)", resp: graphserver.Item{},
		query: []paramDoc{
			q("namespace", "array", "The namespace: its labels as repeated keys (namespace=users&namespace=alice), or joined by dots in one value (namespace=users.alice, what the SDKs send)."),
			q("key", "string", "The item's key."),
			q("refresh_ttl", "boolean", "Refresh the item's TTL (default true)."),
		}},
	"DELETE /store/items":      {summary: "Delete an item", body: graphserver.ItemDelete{}, kind: respNoContent},
	"POST /store/items/search": {summary: "Search items by namespace prefix, filter or query", body: graphserver.ItemSearchRequest{}, resp: itemsResponse{}},
	"POST /store/namespaces":   {summary: "List namespaces", body: graphserver.NamespaceList{}, resp: namespacesResponse{}},
}
