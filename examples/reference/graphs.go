package main

import (
	"fmt"
	"log/slog"

	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/graph"
)

// defaultConfig is the reference set's start-up seeding of system
// assistants (LangGraph's LANGGRAPH_CONFIG for its test graphs).
const defaultConfig = `{"agent":{"configurable":{"model_name":"openai"}},"simple_runtime":{"context":{"model":"unknown"}}}`

// referenceGraphs builds the eleven graphs of reference-graphs.md by graph id.
// logger receives what graphs log (agent_simple's warning).
func referenceGraphs(logger *slog.Logger) (map[string]graphserver.Graph, error) {
	builders := map[string]func() (*graph.Compiled, error){
		"agent":              agentGraph,
		"agent_simple":       func() (*graph.Compiled, error) { return agentSimpleGraph(logger) },
		"weather":            weatherGraph,
		"nested":             nestedGraph,
		"error":              errorGraph,
		"delay":              delayGraph,
		"simple_runtime":     simpleRuntimeGraph,
		"state_schema_graph": stateSchemaGraph,
		"zod_registry_graph": zodRegistryGraph,
		"plain_zod_graph":    plainZodGraph,
	}
	graphs := map[string]graphserver.Graph{"dynamic": dynamicGraph{}}
	for id, build := range builders {
		g, err := build()
		if err != nil {
			return nil, fmt.Errorf("graph %s: %w", id, err)
		}
		graphs[id] = g
	}
	return graphs, nil
}
