package httpapi

// route is one line of the route table: a Go 1.22 ServeMux pattern and its
// handler. Static segments win over parameters by ServeMux's precedence
// (POST /threads/search is more specific than POST /threads/{thread_id}).
type route struct {
	pattern string
	handle  handlerFunc
}

// routes lists every route the API serves, in the order of the wire
// contract's route catalogue. Add one line per route, and its
// description for /openapi.json in routes_doc.go (a test fails until you do).
func (h *handler) routes() []route {
	rts := []route{
		// System
		{"GET /{$}", h.landing},
		{"GET /ok", h.ok},
		{"GET /info", h.info},

		// Assistants
		{"POST /assistants", h.createAssistant},
		{"POST /assistants/search", h.searchAssistants},
		{"POST /assistants/count", h.countAssistants},
		{"GET /assistants/{assistant_id}", h.getAssistant},
		{"PATCH /assistants/{assistant_id}", h.updateAssistant},
		{"DELETE /assistants/{assistant_id}", h.deleteAssistant},
		{"POST /assistants/{assistant_id}/versions", h.listAssistantVersions},
		{"POST /assistants/{assistant_id}/latest", h.setLatestAssistantVersion},
		{"GET /assistants/{assistant_id}/graph", h.getAssistantGraph},
		{"GET /assistants/{assistant_id}/schemas", h.getAssistantSchemas},
		{"GET /assistants/{assistant_id}/subgraphs", h.getAssistantSubgraphs},
		{"GET /assistants/{assistant_id}/subgraphs/{namespace}", h.getAssistantSubgraphs},

		// Threads
		{"POST /threads", h.createThread},
		{"POST /threads/search", h.searchThreads},
		{"POST /threads/count", h.countThreads},
		{"POST /threads/prune", h.pruneThreads},
		{"GET /threads/{thread_id}", h.getThread},
		{"PATCH /threads/{thread_id}", h.updateThread},
		{"DELETE /threads/{thread_id}", h.deleteThread},
		{"POST /threads/{thread_id}/copy", h.copyThread},

		// Thread state and history
		{"GET /threads/{thread_id}/state", h.getThreadState},
		{"GET /threads/{thread_id}/state/{checkpoint_id}", h.getThreadState},
		{"POST /threads/{thread_id}/state/checkpoint", h.getThreadStateAtCheckpoint},
		{"POST /threads/{thread_id}/state", h.updateThreadState},
		{"PATCH /threads/{thread_id}/state", h.patchThreadState},
		{"GET /threads/{thread_id}/history", h.getThreadHistory},
		{"POST /threads/{thread_id}/history", h.postThreadHistory},

		// Runs on a thread
		{"POST /threads/{thread_id}/runs", h.createRun},
		{"POST /threads/{thread_id}/runs/stream", h.streamRun},
		{"POST /threads/{thread_id}/runs/wait", h.waitRun},
		{"GET /threads/{thread_id}/runs", h.listRuns},
		{"GET /threads/{thread_id}/runs/{run_id}", h.getRun},
		{"DELETE /threads/{thread_id}/runs/{run_id}", h.deleteRun},
		{"POST /threads/{thread_id}/runs/{run_id}/cancel", h.cancelRun},
		{"GET /threads/{thread_id}/runs/{run_id}/join", h.joinRun},
		{"GET /threads/{thread_id}/runs/{run_id}/stream", h.joinRunStream},

		// Stateless runs, batch, bulk cancel
		{"POST /runs", h.createStatelessRun},
		{"POST /runs/stream", h.streamStatelessRun},
		{"POST /runs/wait", h.waitStatelessRun},
		{"POST /runs/batch", h.createRunBatch},
		{"POST /runs/cancel", h.cancelRuns},
		{"GET /runs/{run_id}/stream", h.joinRunStream},

		// Crons
		{"POST /threads/{thread_id}/runs/crons", h.createThreadCron},
		{"POST /runs/crons", h.createCron},
		{"POST /runs/crons/search", h.searchCrons},
		{"POST /runs/crons/count", h.countCrons},
		{"PATCH /runs/crons/{cron_id}", h.updateCron},
		{"DELETE /runs/crons/{cron_id}", h.deleteCron},

		// Store
		{"PUT /store/items", h.putItem},
		{"GET /store/items", h.getItem},
		{"DELETE /store/items", h.deleteItem},
		{"POST /store/items/search", h.searchItems},
		{"POST /store/namespaces", h.listNamespaces},

		// Thread stream
		{"GET /threads/{thread_id}/stream", h.joinThreadStream},

		// Protocol v2 (thread-centric streaming)
		{"POST /threads/{thread_id}/commands", h.threadCommand},
		{"POST /threads/{thread_id}/stream/events", h.threadEvents},
		{"GET /threads/{thread_id}/stream/events", h.threadEventsSocket},
	}
	rts = append(rts,
		route{"GET /openapi.json", h.serveOpenAPI}, // openapi.go; describe routes in routes_doc.go
		route{"GET /docs", h.serveDocs},
	)
	if h.metrics != nil {
		rts = append(rts, route{"GET /metrics", h.serveMetrics}) // Options.Metrics
	}
	if h.opts.Truncate != nil {
		rts = append(rts, route{"POST /internal/truncate", h.truncate}) // test helper
	}
	return rts
}
