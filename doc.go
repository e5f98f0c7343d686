/*
Package graphserver hosts executable agent graphs and serves them over the
LangGraph Platform HTTP API, wire-compatible with the official LangGraph SDKs
(JS and Python), on one SQLite file.

It is a library: a Go program embeds it, registers its graphs, and mounts the
HTTP handler wherever it likes. Every operation of the API is first a method
on *Server, so the same program can also use the server in-process, without
HTTP, in tests, CLIs and workers.

# Quick start

Open a storage driver, create a Server with the graphs it hosts, start it,
and mount package httpapi's handler:

	db, err := sqlite.Open("graphserver.db") // one file; created and migrated on open
	if err != nil { ... }
	defer db.Close()

	srv, err := graphserver.New(graphserver.Options{
		Storage: db,
		Graphs:  map[string]graphserver.Graph{"chat": chat}, // graph_id -> graph
	})
	if err != nil { ... }
	if err := srv.Start(ctx); err != nil { ... } // checks storage, creates system assistants
	defer srv.Close(shutdownCtx)

	mux.Handle("/", httpapi.New(srv, httpapi.Options{}))

The runnable version is examples/quickstart (go run ./examples/quickstart).

# Graphs and assistants

A Graph is anything implementing the Graph interface; package graph holds the
built-in StateGraph engine. Each registered graph gets a system assistant
whose id is SystemAssistantID(graph_id), named after the graph, with metadata
{"created_by": "system"}. Wherever an assistant id is accepted, a registered
graph id may be given instead.

# In-process use

The Server's methods are the API:

	th, err := srv.CreateThread(ctx, graphserver.ThreadCreate{Metadata: graphserver.Metadata{"user": "ann"}})
	page, err := srv.SearchThreads(ctx, graphserver.ThreadSearch{Metadata: graphserver.Metadata{"user": "ann"}})
	for _, t := range page.Items { ... }

Searches return a Page: its Items, the offset of the Next page (nil on the
last one) and a Total, the values httpapi sends as X-Pagination-Next and
X-Pagination-Total. Runs are created with CreateRun, WaitRun and StreamRun;
see Example for a complete program.

# Runs and streaming

Runs live in storage: CreateRun queues one (on a thread, or stateless with
threadID ""), and Start's workers claim it with a lease they renew while the
graph runs; a run whose process died is recovered by a sweep and resumed
from its last checkpoint. WaitRun blocks for the final output; StreamRun
returns a RunStream whose Events iterate over the run's event log (metadata
first, then the requested stream modes). Any number of subscribers can read
one log, each from any event id (JoinRunStream with LastEventID), so a client
that reconnects replays what it missed. CancelRun interrupts or rolls back a
run; multitask strategies decide what a new run does to runs in flight.
JoinThreadStream follows a whole thread instead: the events of every run on
it, a metadata {"status": "run_done"} marker as each run ends, and
state_update events after state updates, filtered by mode (run_modes,
lifecycle, state_update); it never ends on its own.

# Thread state

GetThreadState, GetThreadHistory and UpdateThreadState read and write a
thread's checkpoints through its graph (the thread's metadata.graph_id):
state at any checkpoint and subgraph namespace, history newest first, and
updates attributed to a node (as_node), forking from an old checkpoint when
one is named. CreateThread applies supersteps in order. PatchThreadState
merges metadata into the latest checkpoint's.

# Crons

CreateCron schedules runs: on a thread (each firing creates a run on it,
with the payload's multitask strategy) or stateless (each firing creates a
run on a new thread, deleted after the run unless OnRunCompleted is keep).
Schedules are standard 5-field cron expressions or descriptors (@hourly,
@daily, @every 90s, ...), parsed by github.com/robfig/cron/v3 and read in the
cron's IANA time zone (UTC by default). Start's scheduler fires due crons
every Options.CronInterval (FireDueCrons does it on demand): each firing
happens once however many Servers share the storage, a cron that missed
firings while no server ran fires once and then follows its schedule, and a
cron stops at its end time. UpdateCron, DeleteCron, SearchCrons and
CountCrons manage them; see Example_crons.

# Store

PutItem, GetItem, SearchItems, ListNamespaces and DeleteItem manage JSON
items under namespace paths, with TTLs and ranked search (by an Embedder
when configured, else SQLite full-text search). Store returns the same store
as the graphserver.Store that graphs reach from their nodes, so graphs share
memory across threads.

# Access control

Options.Auth (see Auth, NewAuth) names the caller of each request through
an Authenticator (packages jwtauth and apikey hold two) and decides every
event with the most specific handler registered for it (resource:action,
resource, *:action, *). A handler allows, refuses (Forbidden, AuthError), or
returns a Filter the storage applies inside its queries; what a filter
hides behaves as missing. Runs, state, streams and crons are checked
through their thread. httpapi authenticates each request and puts the User
in its context; in-process callers do so with NewContextWithUser. See
ExampleAuth.

# Errors

Methods return *Error values with a Code: EINVALID (bad input, HTTP 422),
EBADREQUEST (400), ENOTFOUND (404; also what a caller may not see), ECONFLICT
and EBUSY (409), EUNAUTHORIZED (401), EFORBIDDEN (403), EUNAVAILABLE (503),
ETOOLARGE (413), EINTERNAL (500). Use ErrorCode and ErrorMessage to read
them; any other error reads as EINTERNAL with the message "Internal error.".
Input is validated before the first write, so a rejected call changes
nothing.

A run that fails is not an error of the call that created it: WaitRun and
JoinRun return a *RunFailedError (read it with errors.As) naming the run's
error and message, while httpapi answers /wait and /join with 200
{"__error__": {"error": name, "message": message}}, as the LangGraph server
does.

# Storage drivers

Options.Storage takes a storage driver: package sqlite (the default, one
file) or package postgres (several processes on one database). The contract
a driver implements is package driver (Storage, Tx, Checkpointer and their
records); applications never need it beyond passing a driver's value. The
resource types (Assistant, Thread, Run, Cron, Item, Filter, Error, ...) are
declared in package record, which both sides share, and named here by
aliases: graphserver.Thread is record.Thread, and go doc record.Thread
lists its fields.

# Lifecycle

New validates its Options and does no I/O: CRUD methods work at once. Start
checks the storage, creates the system assistants and starts the background
work (run workers, sweeps, the cron scheduler). Close stops taking work, waits for what is in
flight until its context ends, then cancels the rest; it does not close the
Storage, which its opener closes afterwards. Shut down with one deadline:
http.Server.Shutdown (in a goroutine) and Server.Close together, then the
storage. A run cancelled by Close is handed back to the queue, not failed:
the next Start resumes it.

# Observing

The Server logs to Options.Logger (httpapi uses the same logger by
default): one line per run state change and per webhook delivery attempt,
with the keys run_id, thread_id, run_status, attempt, duration and err,
which httpapi's request lines share (with method, route, path, status,
duration and request_id). AddObserver registers an Observer that receives
the same changes as values (RunEvent, WebhookEvent, and the storage's
StorageWriteEvent); Stats reads the queue depth, the runs executing and the
stream subscribers. httpapi.Options.Metrics builds Prometheus metrics on
both and serves them at GET /metrics.

# Compatibility

The HTTP API follows the LangGraph Platform API
(https://langchain-ai.github.io/langgraph/cloud/reference/api/api_ref.html): JSON in
snake_case, {"detail": "..."} error bodies, the Platform's status codes, and
lenient decoding of what either SDK sends. Differences between the Python
Platform and the JS dev server are resolved the way both SDKs accept.
*/
package graphserver
