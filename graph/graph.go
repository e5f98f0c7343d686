// Package graph is graphserver's built-in graph engine: a StateGraph with
// LangGraph's Pregel semantics that implements graphserver.Graph.
//
// A graph is a set of named channels (state keys with reducers) and nodes,
// functions of the state returning an update. Execution proceeds in
// supersteps: every triggered node runs in parallel, their writes are applied
// through the reducers at the end of the step, and a checkpoint is written
// through the run's Checkpointer. Edges (static or conditional), Send
// fan-out, Command, dynamic Interrupt, static breakpoints, subgraphs and the
// LangGraph stream modes behave as in LangGraph, because clients observe them
// through the API.
//
// State values are JSON-native: map[string]any, []any, string, float64, bool
// and nil. Whatever a node returns is converted to that form through
// encoding/json.
//
//	g := graph.New(graph.Channels{"messages": graph.AddMessages()})
//	g.AddNode("agent", agent)
//	g.AddEdge(graph.Start, "agent")
//	g.AddConditionalEdges("agent", route, "tool", graph.End)
//	g.AddEdge("tool", "agent")
//	chat, err := g.Compile(graph.CompileOptions{Name: "chat"})
//
// A compiled graph is a subgraph when added as a node, or when a node's
// function invokes it (Compiled.Invoke): it then runs in the run's
// checkpointer, store and stream, in the task's checkpoint namespace, and
// its interrupts pause the whole run.
//
// The functional API (LangGraph's @entrypoint and @task) builds a graph
// from a plain function: Entrypoint runs it on the run's input, and Tasks
// called from it (or from any node) run in parallel as durable tasks of the
// step, their Futures' results saved so that the function, run again after
// an interrupt, does not run the finished ones again.
//
//	draft := graph.NewTask("draft", writeDraft)
//	essay := graph.Entrypoint("essay", func(ctx context.Context, topic any) (any, error) {
//		text, err := draft.Call(ctx, topic.(string)).Result()
//		...
//	})
//
// A node standing for a graph served elsewhere (a remote graph) uses the
// same machinery through Namespace, Config, ThreadID, StreamModes, EmitPart
// (its parts under the task's namespace) and InterruptWith (its interrupts,
// ids kept, pausing the run; the resume value handed back when it runs
// again).
//
// Limits: nodes must not modify the State they receive; a node calling
// Interrupt, InterruptWith, a subgraph's Invoke or a Future's Result must
// return the ErrInterrupt error it gets.
package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/graphserver/graphserver"
)

// Pseudo-node names.
const (
	Start = "__start__"
	End   = "__end__"
	// Input, given as UpdateStateRequest.AsNode, writes values as a new run
	// input would (source "input").
	Input = "__input__"
	// Copy, given as UpdateStateRequest.AsNode, copies the checkpoint (source
	// "fork").
	Copy = "__copy__"
)

// Special channel names used in pending writes.
const (
	chInterrupt = "__interrupt__"
	chResume    = "__resume__"
	chError     = "__error__"
	chTasks     = "__pregel_tasks"
	chNoWrites  = "__no_writes__"
	chRoot      = "__root__"
	nullTaskID  = "00000000-0000-0000-0000-000000000000"
)

// State is a snapshot of a graph's channel values handed to a node. Nodes
// must not modify it.
type State map[string]any

// Messages returns the messages held in key (see the package Messages).
func (s State) Messages(key string) []Message { return Messages(s[key]) }

// String returns the string held in key, or "".
func (s State) String(key string) string { v, _ := s[key].(string); return v }

// Number returns the number held in key, or 0.
func (s State) Number(key string) float64 { v, _ := s[key].(float64); return v }

// Bool returns the bool held in key, or false.
func (s State) Bool(key string) bool { v, _ := s[key].(bool); return v }

// Update is a node's update: channel name to the value written to it.
type Update map[string]any

// NodeFunc is a node: it reads the state and returns an update (an Update or
// any value encoding as a JSON object, a *Command, nil for none, or a list
// holding Commands and updates, each applied in order as LangGraph applies
// a node's list of Commands: []Command, []*Command or []any). A node
// started by Send receives the Send's argument as its state (a non-object
// argument is available through TaskInput).
type NodeFunc func(ctx context.Context, state State) (any, error)

// RouterFunc chooses where to go after a node: it returns a node name, End,
// a Send, or a list of these ([]string, []Send or []any). It may call
// Interrupt to ask before choosing, as a LangGraph router may call
// interrupt(): it then returns the error Interrupt gave it, and the task
// (node and router) runs again when the run is resumed, Interrupt
// returning the resume value. Any other error it returns fails the task.
type RouterFunc func(ctx context.Context, state State) any

// Send starts a task of Node receiving Arg as its input instead of the state
// (map-reduce fan-out). Return it from a router or in Command.Goto.
type Send struct {
	Node string `json:"node"`
	Arg  any    `json:"arg"`
}

// Command is what a node may return to update the state and choose where to
// go at once. Goto holds a node name, a Send, or a list of either. Resume is
// only meaningful as run input (see graphserver.RunCommand).
//
// Graph, when Parent, sends the Command to the graph above the node's graph
// (a supervisor handing off between agents run as subgraphs): the task of
// the parent graph running the node's graph ends as if it had returned the
// Command, its Update applied to the parent's channels and its Goto naming
// the parent's nodes; the node's own graph stops there. Sent from the root
// graph it fails with InvalidUpdateError "There is no parent graph".
type Command struct {
	Update any
	Goto   any
	Resume any
	Graph  string
}

// Parent is the Command.Graph that sends a Command to the parent graph
// (LangGraph's Command.PARENT).
const Parent = "__parent__"

// NodeError is an error with a name, reported by a run as
// {"error": Name, "message": Message}. Any error with an ErrorName() string
// method is reported the same way.
type NodeError struct {
	Name    string
	Message string
}

func (e *NodeError) Error() string { return e.Message }

// ErrorName returns e.Name.
func (e *NodeError) ErrorName() string { return e.Name }

// RecursionError is returned when a run exceeds its recursion_limit.
type RecursionError struct{ Limit int }

func (e *RecursionError) Error() string {
	return fmt.Sprintf("Recursion limit of %d reached without hitting a stop condition. You can increase the limit by setting the `recursion_limit` config key.", e.Limit)
}

// ErrorName returns "GraphRecursionError".
func (e *RecursionError) ErrorName() string { return "GraphRecursionError" }

type node struct {
	name string
	fn   NodeFunc
	// subgraph is the graph the node runs (a *Compiled added as the node),
	// or the one its function invokes, declared with WithSubgraph.
	subgraph *Compiled
	// found is the graph the node's function was seen invoking (Invoke
	// from the node) when none is declared.
	found atomic.Pointer[Compiled]
	retry []RetryPolicy
	// deferred: the node runs only once nothing else is left to run
	deferred bool
	// input lists the keys the node reads (nil: the whole state), and
	// inputChans their channels, added to the graph's when missing
	input      []string
	inputChans Channels
	cache      *CachePolicy
}

// sub returns the subgraph of the node (declared or found), nil if none.
func (n *node) sub() *Compiled {
	if n.subgraph != nil {
		return n.subgraph
	}
	return n.found.Load()
}

// NodeOption configures a node added with AddNode.
type NodeOption func(*node)

// WithSubgraph declares the compiled graph a node function invokes (with
// Invoke) as its subgraph, as LangGraph finds the graphs a node's function
// refers to. The thread state then points at the subgraph's namespace from
// the node's tasks (and expands it with subgraphs=true), the subgraph's
// namespace can be read and updated before the node has run in this
// process, and drawings and Subgraphs introspect it. Without it, a graph
// invoked from a node still runs as a subgraph; the state knows it once
// the node has invoked it in this process.
func WithSubgraph(sub *Compiled) NodeOption {
	return func(n *node) {
		if n.fn != nil {
			n.subgraph = sub
		}
	}
}

// WithDefer makes a node deferred (LangGraph's add_node(defer=True)): once
// triggered, it waits until no other node is scheduled, then runs. A fan-in
// whose branches have different lengths uses it to run once after all of
// them, wherever its edges come from. Precisely, as LangGraph's
// LastValueAfterFinish channel: it runs in the step after one whose writes
// trigger no node (Sends aside).
func WithDefer() NodeOption {
	return func(n *node) { n.deferred = true }
}

// WithInput gives a node its own input schema (LangGraph's
// add_node(input_schema=...)): the node reads only these keys of the state.
// A key the graph's state lacks becomes a channel of the graph, private:
// nodes may read and write it, and the thread's state shows it, but it is
// not part of the graph's input or output (LangGraph's private state). A
// managed value (RemainingSteps, IsLastStep) may be among the keys.
func WithInput(channels Channels) NodeOption {
	return func(n *node) {
		n.inputChans = channels
		n.input = slices.Sorted(maps.Keys(channels))
		if n.input == nil {
			n.input = []string{}
		}
	}
}

type branch struct {
	router  RouterFunc
	pathMap map[string]string // router result -> node; nil = identity
	ends    []string          // possible destinations, for drawing
}

// StateGraph builds a graph. Its methods record the first error, returned by
// Compile; they return the builder for chaining.
type StateGraph struct {
	channels   Channels
	managed    Channels // managed values: computed per task, never stored
	nodes      map[string]*node
	order      []string
	edges      map[string][]string
	joins      []join
	branches   map[string][]branch
	inputKeys  []string
	outputKeys []string
	schemas    map[string]json.RawMessage
	root       bool
	err        error
	// private holds the channels only node input schemas declare
	private map[string]bool
}

// join is a waiting edge: to runs once every node of from has run since it
// last ran (LangGraph's NamedBarrierValue channel "join:<a>+<b>:<to>").
type join struct {
	ch   string
	from []string
	to   string
}

// New returns a builder for a graph whose state has the given channels.
func New(channels Channels) *StateGraph {
	g := &StateGraph{channels: Channels{}, managed: Channels{}, nodes: map[string]*node{}, edges: map[string][]string{}, branches: map[string][]branch{}, schemas: map[string]json.RawMessage{}}
	for k, c := range channels {
		switch {
		case c == nil:
			g.channels[k] = LastValue()
		case c.kind == kindManaged:
			g.managed[k] = c
		default:
			g.channels[k] = c
		}
	}
	return g
}

func (g *StateGraph) fail(format string, args ...any) *StateGraph {
	if g.err == nil {
		g.err = graphserver.Errorf(graphserver.EINVALID, format, args...)
	}
	return g
}

// AddNode adds a node: a NodeFunc (or a func with its signature), or a
// *Compiled graph run as a subgraph with its own checkpoint namespace.
// Options refine it (WithSubgraph, WithRetry).
func (g *StateGraph) AddNode(name string, n any, opts ...NodeOption) *StateGraph {
	if name == "" || name == Start || name == End || strings.ContainsAny(name, "|:") {
		return g.fail("node name %q is reserved or contains | or :", name)
	}
	if _, ok := g.nodes[name]; ok {
		return g.fail("node %q already exists", name)
	}
	nd := &node{name: name}
	switch f := n.(type) {
	case NodeFunc:
		nd.fn = f
	case func(context.Context, State) (any, error):
		nd.fn = f
	case *Compiled:
		nd.subgraph = f
	default:
		return g.fail("node %q: %T is not a NodeFunc or a *graph.Compiled", name, n)
	}
	for _, o := range opts {
		o(nd)
	}
	for _, k := range nd.input {
		if _, ok := g.channels[k]; ok {
			continue
		}
		if _, ok := g.managed[k]; ok {
			continue
		}
		switch c := nd.inputChans[k]; {
		case c == nil:
			g.channels[k] = LastValue()
		case c.kind == kindManaged:
			g.managed[k] = c
			continue
		default:
			g.channels[k] = c
		}
		if g.private == nil {
			g.private = map[string]bool{}
		}
		g.private[k] = true
	}
	g.nodes[name] = nd
	g.order = append(g.order, name)
	return g
}

// SequenceNode is one node of AddSequence: its name, its function or
// *Compiled graph, and its options, as AddNode takes them.
type SequenceNode struct {
	Name    string
	Node    any
	Options []NodeOption
}

// AddSequence adds nodes that run one after the other, in the order
// given: each node, and an edge from each to the next (LangGraph's
// add_sequence). It adds no edge into the first node nor out of the last.
func (g *StateGraph) AddSequence(nodes ...SequenceNode) *StateGraph {
	if len(nodes) == 0 {
		return g.fail("Sequence requires at least one node.")
	}
	for i, n := range nodes {
		g.AddNode(n.Name, n.Node, n.Options...)
		if i > 0 {
			g.AddEdge(nodes[i-1].Name, n.Name)
		}
	}
	return g
}

// AddEdge makes to run in the superstep after from.
func (g *StateGraph) AddEdge(from, to string) *StateGraph {
	if from == End || to == Start {
		return g.fail("edge %s -> %s: cannot leave %s or enter %s", from, to, End, Start)
	}
	g.edges[from] = append(g.edges[from], to)
	return g
}

// AddJoinEdge makes to run once after every node of from has run, in the
// same superstep or not (LangGraph's add_edge([a, b], c), a waiting edge):
// a fan-in whose branches may have different lengths. Each node of from
// marks itself done when it finishes; to runs in the superstep after the
// last one, and the marks are cleared when it does. A join to End does
// nothing.
func (g *StateGraph) AddJoinEdge(from []string, to string) *StateGraph {
	if len(from) == 0 {
		return g.fail("join edge to %s: no nodes to wait for", to)
	}
	if to == Start || slices.Contains(from, End) {
		return g.fail("join edge %v -> %s: cannot leave %s or enter %s", from, to, End, Start)
	}
	if to == End {
		return g
	}
	names := slices.Clone(from)
	slices.Sort(names)
	names = slices.Compact(names)
	g.joins = append(g.joins, join{ch: "join:" + strings.Join(from, "+") + ":" + to, from: names, to: to})
	return g
}

// AddConditionalEdges runs router after from and goes where it says. ends
// lists the possible destinations (for drawing; optional).
func (g *StateGraph) AddConditionalEdges(from string, router RouterFunc, ends ...string) *StateGraph {
	g.branches[from] = append(g.branches[from], branch{router: router, ends: ends})
	return g
}

// AddConditionalEdgesMap runs router after from and goes to pathMap[result].
func (g *StateGraph) AddConditionalEdgesMap(from string, router RouterFunc, pathMap map[string]string) *StateGraph {
	ends := make([]string, 0, len(pathMap))
	for _, v := range pathMap {
		if !slices.Contains(ends, v) {
			ends = append(ends, v)
		}
	}
	slices.Sort(ends)
	g.branches[from] = append(g.branches[from], branch{router: router, pathMap: pathMap, ends: ends})
	return g
}

// SetEntryPoint is AddEdge(Start, name).
func (g *StateGraph) SetEntryPoint(name string) *StateGraph { return g.AddEdge(Start, name) }

// SetFinishPoint is AddEdge(name, End).
func (g *StateGraph) SetFinishPoint(name string) *StateGraph { return g.AddEdge(name, End) }

// SetInput limits the keys read from run input (default: all channels).
func (g *StateGraph) SetInput(keys ...string) *StateGraph { g.inputKeys = keys; return g }

// SetOutput limits the keys of the values stream and run output (default:
// all channels).
func (g *StateGraph) SetOutput(keys ...string) *StateGraph { g.outputKeys = keys; return g }

// SetSchema declares a JSON Schema reported by Schemas: kind is "input",
// "output", "state", "config" or "context".
func (g *StateGraph) SetSchema(kind, schema string) *StateGraph {
	switch kind {
	case "input", "output", "state", "config", "context":
		g.schemas[kind] = json.RawMessage(schema)
	default:
		return g.fail("schema kind %q is not one of input, output, state, config, context", kind)
	}
	return g
}

// CompileOptions configure a compiled graph.
type CompileOptions struct {
	// Name is the graph's name in events and drawings; default "LangGraph".
	Name string
	// InterruptBefore and InterruptAfter are static breakpoints: the graph
	// pauses before/after these nodes run ("*" = every node).
	InterruptBefore []string
	InterruptAfter  []string
	// Persistent gives the graph, run as a subgraph, its own memory on the
	// thread (LangGraph's compile(checkpointer=True)): its checkpoints live
	// in a namespace named after the nodes that run it, without task ids
	// ("<node>", "<parent node>|<node>"), so each call on the same thread
	// continues from the state the last call left, its input applied on
	// top, where a subgraph otherwise starts afresh in each task's
	// namespace. Its stream parts carry that namespace. A call made while
	// the run resumes continues the subgraph where it paused. It has no
	// effect on a root graph.
	Persistent bool
}

// Compiled is a compiled graph. It implements graphserver.Graph and is safe
// for concurrent use; add it to another graph with AddNode to use it as a
// subgraph.
type Compiled struct {
	name      string
	channels  Channels
	managed   Channels
	chanNames []string
	nodes     map[string]*node
	order     []string // node names, sorted
	edges     map[string][]string
	joins     []join
	joinsTo   map[string][]join // by target node
	joinsFrom map[string][]join // by waited-for node
	// deferred maps the trigger channels of deferred nodes to the join
	// they are (nil for a node's own branch:to channel)
	deferred   map[string]*join
	branches   map[string][]branch
	inputKeys  []string
	outputKeys []string
	outputSet  map[string]struct{}
	schemas    map[string]json.RawMessage
	root       bool
	before     []string
	after      []string
	persistent bool
	// entry is the node of an Entrypoint graph: triggered by the input
	// itself, which it receives as its task argument (LangGraph's
	// entrypoint node subscribes to START)
	entry string
}

var _ graphserver.Graph = (*Compiled)(nil)

// Compile checks the graph and returns it compiled. It returns an EINVALID
// error naming the problem (unknown node in an edge, no entry point, ...).
func (g *StateGraph) Compile(opts CompileOptions) (*Compiled, error) {
	if g.err != nil {
		return nil, g.err
	}
	known := func(n string) bool { _, ok := g.nodes[n]; return ok || n == End }
	for from, tos := range g.edges {
		if _, ok := g.nodes[from]; !ok && from != Start {
			return nil, graphserver.Errorf(graphserver.EINVALID, "edge from unknown node %q", from)
		}
		for _, to := range tos {
			if !known(to) {
				return nil, graphserver.Errorf(graphserver.EINVALID, "edge to unknown node %q", to)
			}
		}
	}
	for from, bs := range g.branches {
		if _, ok := g.nodes[from]; !ok && from != Start {
			return nil, graphserver.Errorf(graphserver.EINVALID, "conditional edge from unknown node %q", from)
		}
		for _, b := range bs {
			for _, to := range b.ends {
				if !known(to) {
					return nil, graphserver.Errorf(graphserver.EINVALID, "conditional edge to unknown node %q", to)
				}
			}
		}
	}
	for _, j := range g.joins {
		for _, from := range j.from {
			if _, ok := g.nodes[from]; !ok && from != Start {
				return nil, graphserver.Errorf(graphserver.EINVALID, "join edge from unknown node %q", from)
			}
		}
		if _, ok := g.nodes[j.to]; !ok {
			return nil, graphserver.Errorf(graphserver.EINVALID, "join edge to unknown node %q", j.to)
		}
	}
	if len(g.edges[Start]) == 0 && len(g.branches[Start]) == 0 && !slices.ContainsFunc(g.joins, func(j join) bool { return slices.Contains(j.from, Start) }) {
		return nil, graphserver.Errorf(graphserver.EINVALID, "graph must have an entrypoint: add at least one edge from %s", Start)
	}
	for _, bp := range append(slices.Clone(opts.InterruptBefore), opts.InterruptAfter...) {
		if _, ok := g.nodes[bp]; !ok && bp != "*" {
			return nil, graphserver.Errorf(graphserver.EINVALID, "breakpoint on unknown node %q", bp)
		}
	}
	c := &Compiled{
		name: opts.Name, channels: g.channels, managed: g.managed, nodes: g.nodes, edges: g.edges, branches: g.branches,
		inputKeys: g.inputKeys, outputKeys: g.outputKeys, schemas: g.schemas, root: g.root,
		before: opts.InterruptBefore, after: opts.InterruptAfter, persistent: opts.Persistent,
	}
	if c.name == "" {
		c.name = "LangGraph"
	}
	for k := range g.channels {
		c.chanNames = append(c.chanNames, k)
	}
	slices.Sort(c.chanNames)
	c.order = slices.Sorted(func(yield func(string) bool) {
		for n := range g.nodes {
			if !yield(n) {
				return
			}
		}
	})
	public := slices.DeleteFunc(slices.Clone(c.chanNames), func(k string) bool { return g.private[k] })
	if c.inputKeys == nil {
		c.inputKeys = public
	}
	if c.outputKeys == nil {
		c.outputKeys = public
	}
	c.joins = g.joins
	c.joinsTo, c.joinsFrom = map[string][]join{}, map[string][]join{}
	for _, j := range g.joins {
		c.joinsTo[j.to] = append(c.joinsTo[j.to], j)
		for _, from := range j.from {
			c.joinsFrom[from] = append(c.joinsFrom[from], j)
		}
	}
	c.deferred = map[string]*join{}
	for _, n := range g.nodes {
		if n.deferred {
			c.deferred[branchPrefix+n.name] = nil
		}
	}
	for i, j := range c.joins {
		if n := g.nodes[j.to]; n != nil && n.deferred {
			c.deferred[j.ch] = &c.joins[i]
		}
	}
	c.outputSet = make(map[string]struct{}, len(c.outputKeys))
	for _, k := range c.outputKeys {
		c.outputSet[k] = struct{}{}
	}
	return c, nil
}

// Name returns the graph's name.
func (c *Compiled) Name() string { return c.name }
