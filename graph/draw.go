package graph

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/graphserver/graphserver"
)

// Drawing returns the graph's nodes and edges. __start__ and __end__ have
// type "schema", nodes type "runnable"; edges out of conditional branches are
// flagged conditional. xray > 0 expands subgraphs that many levels deep
// (their nodes get ids "<node>:<child>").
func (c *Compiled) Drawing(ctx context.Context, config graphserver.Object, xray int) (*graphserver.Drawing, error) {
	d := &graphserver.Drawing{Nodes: []graphserver.DrawingNode{}, Edges: []graphserver.DrawingEdge{}}
	c.draw(d, "", xray)
	return d, nil
}

type drawEdge struct {
	from, to    string
	conditional bool
}

// edgesOut lists the graph's edges (static, then conditional).
func (c *Compiled) edgeList() []drawEdge {
	var out []drawEdge
	for _, from := range append([]string{Start}, c.order...) {
		for _, to := range c.edges[from] {
			out = append(out, drawEdge{from, to, false})
		}
		for _, j := range c.joinsFrom[from] {
			out = append(out, drawEdge{from, j.to, false})
		}
		for _, b := range c.branches[from] {
			ends := b.ends
			if len(ends) == 0 {
				ends = append(slices.Clone(c.order), End)
			}
			for _, to := range ends {
				out = append(out, drawEdge{from, to, true})
			}
		}
	}
	return out
}

// draw adds c's nodes and edges to d with ids prefixed by prefix.
func (c *Compiled) draw(d *graphserver.Drawing, prefix string, xray int) {
	id := func(n string) string { return prefix + n }
	edges := c.edgeList()
	hasEnd := slices.ContainsFunc(edges, func(e drawEdge) bool { return e.to == End })
	if prefix == "" {
		d.Nodes = append(d.Nodes, graphserver.DrawingNode{ID: Start, Type: "schema", Data: Start})
	}
	// entry and exit node ids of each node (expanded subgraphs have several)
	entries := map[string][]string{}
	exits := map[string][]string{}
	for _, n := range c.order {
		nd := c.nodes[n]
		if nd.subgraph != nil && xray > 0 {
			sub := nd.subgraph
			sp := id(n) + ":"
			sub.draw(d, sp, xray-1)
			for _, e := range sub.edgeList() {
				if e.from == Start {
					entries[n] = append(entries[n], sub.entryIDs(sp, e.to)...)
				}
				if e.to == End {
					exits[n] = append(exits[n], sub.exitIDs(sp, e.from)...)
				}
			}
			continue
		}
		d.Nodes = append(d.Nodes, graphserver.DrawingNode{ID: id(n), Type: "runnable", Data: map[string]any{"id": []string{"graphserver", "graph", "Node"}, "name": n}})
		entries[n] = []string{id(n)}
		exits[n] = []string{id(n)}
	}
	if prefix == "" && hasEnd {
		d.Nodes = append(d.Nodes, graphserver.DrawingNode{ID: End, Type: "schema", Data: End})
	}
	for _, e := range edges {
		if prefix != "" && (e.from == Start || e.to == End) {
			continue // wired to the parent's edges
		}
		froms := exits[e.from]
		if e.from == Start {
			froms = []string{Start}
		}
		tos := entries[e.to]
		if e.to == End {
			tos = []string{End}
		}
		for _, f := range froms {
			for _, t := range tos {
				d.Edges = append(d.Edges, graphserver.DrawingEdge{Source: f, Target: t, Conditional: e.conditional})
			}
		}
	}
}

func (c *Compiled) entryIDs(prefix, n string) []string {
	if nd := c.nodes[n]; nd != nil && nd.subgraph != nil {
		return []string{prefix + n}
	}
	return []string{prefix + n}
}

func (c *Compiled) exitIDs(prefix, n string) []string { return c.entryIDs(prefix, n) }

// channelSchema returns the JSON Schema of one channel.
func channelSchema(ch *Channel) map[string]any {
	if len(ch.schema) > 0 {
		var s map[string]any
		if json.Unmarshal(ch.schema, &s) == nil {
			return s
		}
	}
	switch ch.kind {
	case kindMessages:
		return map[string]any{"type": "array", "items": map[string]any{"type": "object"}, "langgraph_type": "messages"}
	case kindAppend, kindTopic:
		return map[string]any{"type": "array", "items": map[string]any{}}
	}
	return map[string]any{}
}

func (c *Compiled) objectSchema(title string, keys []string) json.RawMessage {
	if c.root {
		return json.RawMessage(`{}`)
	}
	props := map[string]any{}
	for _, k := range keys {
		if ch, ok := c.channels[k]; ok {
			props[k] = channelSchema(ch)
		}
	}
	b, _ := json.Marshal(map[string]any{"title": title, "type": "object", "properties": props})
	return b
}

// Schemas returns the graph's JSON Schemas: declared ones (SetSchema) or
// derived from the channels (message channels carry "langgraph_type":
// "messages"). Config and context are null unless declared.
func (c *Compiled) Schemas(ctx context.Context, config graphserver.Object) (*graphserver.GraphSchemas, error) {
	s := &graphserver.GraphSchemas{
		InputSchema:  c.objectSchema(c.name+"Input", c.inputKeys),
		OutputSchema: c.objectSchema(c.name+"Output", c.outputKeys),
		StateSchema:  c.objectSchema(c.name+"State", c.chanNames),
	}
	for kind, raw := range c.schemas {
		switch kind {
		case "input":
			s.InputSchema = raw
		case "output":
			s.OutputSchema = raw
		case "state":
			s.StateSchema = raw
		case "config":
			s.ConfigSchema = raw
		case "context":
			s.ContextSchema = raw
		}
	}
	return s, nil
}

// Subgraphs returns the schemas of subgraphs by namespace ("node", and
// "node|child" when recurse), limited to namespace (and below it) when set.
func (c *Compiled) Subgraphs(ctx context.Context, config graphserver.Object, namespace string, recurse bool) (map[string]*graphserver.GraphSchemas, error) {
	out := map[string]*graphserver.GraphSchemas{}
	var walk func(g *Compiled, prefix string, depth int) error
	walk = func(g *Compiled, prefix string, depth int) error {
		for _, n := range g.order {
			nd := g.nodes[n]
			if nd.subgraph == nil {
				continue
			}
			ns := prefix + n
			s, err := nd.subgraph.Schemas(ctx, config)
			if err != nil {
				return err
			}
			out[ns] = s
			if recurse || (namespace != "" && strings.HasPrefix(namespace, ns+"|")) {
				if err := walk(nd.subgraph, ns+"|", depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(c, "", 0); err != nil {
		return nil, err
	}
	if namespace != "" {
		for k := range out {
			if k != namespace && !(recurse && strings.HasPrefix(k, namespace+"|")) {
				delete(out, k)
			}
		}
	}
	return out, nil
}
