package graphserver

import (
	"context"
)

// Why the server builds a graph from a GraphFactory: the access contexts of
// the LangGraph server's make_graph(config, runtime) (ServerRuntime's
// access_context).
const (
	AccessCreateRun      = "threads.create_run" // to execute a run
	AccessUpdate         = "threads.update"     // to update a thread's state
	AccessRead           = "threads.read"       // to read a thread's state or history
	AccessAssistantsRead = "assistants.read"    // to draw the graph or give its schemas
)

// GraphFactoryRequest tells a GraphFactory what the graph is built for.
type GraphFactoryRequest struct {
	// Access is why the graph is needed: AccessCreateRun, AccessUpdate,
	// AccessRead or AccessAssistantsRead.
	Access string
	// Config is the config of the call: the run's merged config, or the
	// thread's or assistant's.
	Config Object
	// Context is the run's context object (execution only).
	Context Object
	// Store is the item store the graph's nodes get (runs and state
	// updates); nil for reads.
	Store Store
}

// ForExecution reports whether the graph is built to execute a run (the
// LangGraph server's runtime.execution_runtime is not None).
func (r GraphFactoryRequest) ForExecution() bool { return r.Access == AccessCreateRun }

// GraphFactory builds a graph for one call. It may build a different graph
// per config, caller or purpose; it must be safe for concurrent use.
type GraphFactory func(ctx context.Context, req GraphFactoryRequest) (Graph, error)

// NewGraphFactory returns a Graph that builds its graph with f for every
// call the server makes, telling f why (GraphFactoryRequest.Access), as
// the LangGraph server calls a registered make_graph(config, runtime)
// factory whenever it needs the graph. Register it in Options.Graphs like
// any graph.
func NewGraphFactory(f GraphFactory) Graph { return factoryGraph{f} }

// factoryGraph is a Graph built per call by a GraphFactory.
type factoryGraph struct{ f GraphFactory }

func (g factoryGraph) build(ctx context.Context, req GraphFactoryRequest) (Graph, error) {
	if req.Config == nil {
		req.Config = Object{}
	}
	built, err := g.f(ctx, req)
	if err != nil {
		return nil, err
	}
	if built == nil {
		return nil, Errorf(EINTERNAL, "The graph factory built no graph for %s.", req.Access)
	}
	return built, nil
}

func (g factoryGraph) Run(ctx context.Context, req *GraphRun, emit func(StreamPart)) error {
	built, err := g.build(ctx, GraphFactoryRequest{Access: AccessCreateRun, Config: req.Config, Context: req.Context, Store: req.Store})
	if err != nil {
		return err
	}
	return built.Run(ctx, req, emit)
}

// RunState runs the built graph through its StateRunner when it has one.
func (g factoryGraph) RunState(ctx context.Context, req *GraphRun, emit func(StreamPart)) (*ThreadState, error) {
	built, err := g.build(ctx, GraphFactoryRequest{Access: AccessCreateRun, Config: req.Config, Context: req.Context, Store: req.Store})
	if err != nil {
		return nil, err
	}
	if sr, ok := built.(StateRunner); ok {
		return sr.RunState(ctx, req, emit)
	}
	return nil, built.Run(ctx, req, emit)
}

func (g factoryGraph) State(ctx context.Context, req *StateRequest) (*ThreadState, error) {
	built, err := g.build(ctx, GraphFactoryRequest{Access: AccessRead, Config: req.Config})
	if err != nil {
		return nil, err
	}
	return built.State(ctx, req)
}

func (g factoryGraph) History(ctx context.Context, req *HistoryRequest) ([]*ThreadState, error) {
	built, err := g.build(ctx, GraphFactoryRequest{Access: AccessRead, Config: req.Config})
	if err != nil {
		return nil, err
	}
	return built.History(ctx, req)
}

func (g factoryGraph) UpdateState(ctx context.Context, req *UpdateStateRequest) (*Checkpoint, error) {
	built, err := g.build(ctx, GraphFactoryRequest{Access: AccessUpdate, Config: req.Config, Store: req.Store})
	if err != nil {
		return nil, err
	}
	return built.UpdateState(ctx, req)
}

func (g factoryGraph) Drawing(ctx context.Context, config Object, xray int) (*Drawing, error) {
	built, err := g.build(ctx, GraphFactoryRequest{Access: AccessAssistantsRead, Config: config})
	if err != nil {
		return nil, err
	}
	return built.Drawing(ctx, config, xray)
}

func (g factoryGraph) Schemas(ctx context.Context, config Object) (*GraphSchemas, error) {
	built, err := g.build(ctx, GraphFactoryRequest{Access: AccessAssistantsRead, Config: config})
	if err != nil {
		return nil, err
	}
	return built.Schemas(ctx, config)
}

func (g factoryGraph) Subgraphs(ctx context.Context, config Object, namespace string, recurse bool) (map[string]*GraphSchemas, error) {
	built, err := g.build(ctx, GraphFactoryRequest{Access: AccessAssistantsRead, Config: config})
	if err != nil {
		return nil, err
	}
	return built.Subgraphs(ctx, config, namespace, recurse)
}
