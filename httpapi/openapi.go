package httpapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/invopop/jsonschema"

	"github.com/graphserver/graphserver"
)

// The OpenAPI document. Every route of routes.go is described by its entry
// in routeDocs (routes_doc.go): a summary, the query parameters and headers
// it reads, and the Go types of its request and response bodies, which are
// reflected into JSON Schemas (components.schemas). Path parameters come
// from the pattern. TestOpenAPIDescribesEveryRoute fails when a served
// route has no entry, or an entry no route.

// opDoc describes one route in /openapi.json.
type opDoc struct {
	summary     string
	description string
	query       []paramDoc // query parameters the handler reads
	headers     []paramDoc // request headers the handler reads
	// body is a value of the request body's Go type; nil means no body.
	body any
	// resp is a value of the JSON response body's Go type (kind respJSON);
	// nil means any JSON value.
	resp any
	kind respKind
	// paged responses carry X-Pagination-Next and X-Pagination-Total.
	paged bool
	// also lists other success responses (status: description).
	also map[int]string
}

// respKind is the kind of a route's success response.
type respKind int

const (
	respJSON      respKind = iota // 200 application/json
	respNoContent                 // 204, no body
	respSSE                       // 200 text/event-stream
	respText                      // 200 text/plain (Prometheus exposition)
	respHTML                      // 200 text/html
)

// paramDoc describes a query parameter or header.
type paramDoc struct {
	name, typ, description string // typ: string, integer, boolean, number or array (of strings)
}

// q is a paramDoc literal, for a compact routeDocs.
func q(name, typ, description string) paramDoc { return paramDoc{name, typ, description} }

// openAPIVersion is the version of the API the document describes.
const openAPIVersion = "0.1.0"

// Errors every operation may answer, described once.
var errorResponses = map[string]string{
	"404": "Not found (or hidden by access control).",
	"409": "Conflict: the resource exists, or is busy.",
	"413": "Request body too large.",
	"422": "Invalid request: the detail names the field.",
	"500": "Internal error (details are logged, never returned).",
}

// openAPISpec builds the document of the routes h serves.
func (h *handler) openAPISpec() ([]byte, error) {
	b := h.newSpecBuilder()
	paths := map[string]map[string]any{}
	for _, rt := range h.routes() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		docPath := strings.TrimSuffix(path, "{$}") // ServeMux's "exactly /"
		if paths[docPath] == nil {
			paths[docPath] = map[string]any{}
		}
		paths[docPath][strings.ToLower(method)] = b.operation(method, path)
	}
	schemas := map[string]any{
		"Error": map[string]any{
			"type":       "object",
			"properties": map[string]any{"detail": map[string]any{"type": "string"}},
			"required":   []string{"detail"},
		},
	}
	for name, s := range b.defs {
		schemas[name] = s
	}
	responses := map[string]any{}
	for code, desc := range errorResponses {
		responses["Error"+code] = map[string]any{"description": desc, "content": jsonContent(map[string]any{"$ref": "#/components/schemas/Error"})}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "graphserver: LangGraph Platform API",
			"version":     openAPIVersion,
			"description": "The LangGraph Platform HTTP API as graphserver serves it. Errors are {\"detail\": \"...\"}. Every response carries X-Request-Id (the client's, or a new one).",
		},
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"paths":             paths,
		"components":        map[string]any{"schemas": schemas, "responses": responses},
		"tags":              tagList(paths),
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	// The reflector refers to definitions as JSON Schema does; they live
	// under components.schemas here.
	out = bytes.ReplaceAll(out, []byte(`"#/$defs/`), []byte(`"#/components/schemas/`))
	// It also writes "any value" as the schema true, which OpenAPI 3.1
	// allows but many tools do not read: write {} instead.
	var tree any
	if err := json.Unmarshal(out, &tree); err != nil {
		return nil, err
	}
	return json.MarshalIndent(anyAsEmpty(tree, ""), "", "  ")
}

// anyAsEmpty replaces the boolean schema true by {} under the keys that
// hold schemas.
func anyAsEmpty(v any, key string) any {
	switch v := v.(type) {
	case bool:
		if v && (key == "items" || key == "schema" || key == "property") {
			return map[string]any{}
		}
	case map[string]any:
		for k, x := range v {
			if key == "properties" {
				v[k] = anyAsEmpty(x, "property") // k names a property
			} else {
				v[k] = anyAsEmpty(x, k)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = anyAsEmpty(x, key+"[]")
		}
	}
	return v
}

// specBuilder collects the schemas the operations refer to.
type specBuilder struct {
	r    *jsonschema.Reflector
	defs map[string]*jsonschema.Schema
}

func (h *handler) newSpecBuilder() *specBuilder {
	return &specBuilder{
		defs: map[string]*jsonschema.Schema{},
		r: &jsonschema.Reflector{
			Anonymous:                  true,
			AllowAdditionalProperties:  true, // the SDKs send extra keys; they are ignored
			RequiredFromJSONSchemaTags: true, // bodies are lenient: fields default
			Namer:                      schemaName,
			Mapper:                     mapType,
			CommentMap:                 goComments, // the root package's doc comments (openapi_comments.go)
		},
	}
}

// schema reflects v's type, keeps its definitions and returns its schema.
func (b *specBuilder) schema(v any) *jsonschema.Schema {
	s := b.r.ReflectFromType(reflect.TypeOf(v))
	for name, d := range s.Definitions {
		b.defs[name] = d
	}
	s.Definitions, s.Version, s.ID = nil, "", ""
	return s
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// operation builds the operation object of a route from its routeDocs entry.
func (b *specBuilder) operation(method, path string) map[string]any {
	doc, ok := routeDocs[method+" "+path]
	if !ok {
		doc = opDoc{summary: method + " " + path + " (not described: add it to routes_doc.go)"}
	}
	op := map[string]any{
		"summary":     doc.summary,
		"operationId": operationID(method, path),
		"tags":        []string{routeTag(path)},
	}
	if doc.description != "" {
		op["description"] = doc.description
	}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true,
			"description": pathParamDescription(m[1]), "schema": map[string]any{"type": "string"}})
	}
	for _, p := range doc.query {
		params = append(params, param(p, "query"))
	}
	for _, p := range doc.headers {
		params = append(params, param(p, "header"))
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if doc.body != nil {
		op["requestBody"] = map[string]any{"required": false, "content": jsonContent(b.schema(doc.body))}
	}
	responses := map[string]any{}
	switch doc.kind {
	case respNoContent:
		responses["204"] = map[string]any{"description": "Done; no body."}
	case respSSE:
		responses["200"] = map[string]any{
			"description": "Server-Sent Events: each frame has an id, an event name (metadata first, then the stream modes, error on failure) and JSON data; a ': heartbeat' comment every 5 s. Resume with the Last-Event-ID header.",
			"content":     map[string]any{"text/event-stream": map[string]any{"schema": map[string]any{"type": "string"}}},
		}
	case respText:
		responses["200"] = map[string]any{"description": "Prometheus text exposition format.",
			"content": map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string"}}}}
	case respHTML:
		responses["200"] = map[string]any{"description": "An HTML page.",
			"content": map[string]any{"text/html": map[string]any{"schema": map[string]any{"type": "string"}}}}
	default:
		var s any = map[string]any{} // any JSON value
		if doc.resp != nil {
			s = b.schema(doc.resp)
		}
		r := map[string]any{"description": "OK", "content": jsonContent(s)}
		if doc.paged {
			r["headers"] = map[string]any{
				"X-Pagination-Next":  map[string]any{"description": "Offset of the next page; absent on the last page.", "schema": map[string]any{"type": "integer"}},
				"X-Pagination-Total": map[string]any{"description": "Offset + items, plus one when more exist.", "schema": map[string]any{"type": "integer"}},
			}
		}
		responses["200"] = r
	}
	for status, desc := range doc.also {
		responses[strconv.Itoa(status)] = map[string]any{"description": desc}
	}
	for code := range errorResponses {
		responses[code] = map[string]any{"$ref": "#/components/responses/Error" + code}
	}
	op["responses"] = responses
	return op
}

// param is the parameter object of a query parameter or header.
func param(p paramDoc, in string) map[string]any {
	var s map[string]any
	if p.typ == "array" {
		s = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	} else {
		s = map[string]any{"type": p.typ}
	}
	out := map[string]any{"name": p.name, "in": in, "description": p.description, "schema": s}
	if p.typ == "array" {
		out["explode"] = true
	}
	return out
}

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

// operationID names an operation after its method and path:
// post_threads_thread_id_runs.
func operationID(method, path string) string {
	id := strings.ToLower(method)
	fields := strings.FieldsFunc(path, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
	if len(fields) == 0 {
		return id + "_root"
	}
	for _, f := range fields {
		id += "_" + f
	}
	return id
}

// routeTag groups operations as LangGraph's own API reference does.
func routeTag(path string) string {
	switch {
	case strings.Contains(path, "/crons"):
		return "Crons"
	case strings.HasPrefix(path, "/assistants"):
		return "Assistants"
	case strings.HasPrefix(path, "/threads/{thread_id}/runs"):
		return "Thread Runs"
	case strings.HasPrefix(path, "/threads"):
		return "Threads"
	case strings.HasPrefix(path, "/runs"):
		return "Stateless Runs"
	case strings.HasPrefix(path, "/store"):
		return "Store"
	}
	return "System"
}

// tagList lists the tags in use, in a stable order.
func tagList(paths map[string]map[string]any) []map[string]string {
	order := []string{"Assistants", "Threads", "Thread Runs", "Stateless Runs", "Crons", "Store", "System"}
	used := map[string]bool{}
	for path := range paths {
		used[routeTag(path)] = true
	}
	var out []map[string]string
	for _, t := range order {
		if used[t] {
			out = append(out, map[string]string{"name": t})
		}
	}
	return out
}

// pathParamDescription explains a path parameter.
func pathParamDescription(name string) string {
	switch name {
	case "assistant_id":
		return "An assistant id (UUID), or a registered graph id for its system assistant."
	case "namespace":
		return "A subgraph namespace (node names separated by '|')."
	}
	return "The " + strings.ReplaceAll(strings.TrimSuffix(name, "_id"), "_", " ") + " id (UUID)."
}

// schemaName names a Go type's schema: its name, capitalized (unexported
// request types of this package read as the others).
func schemaName(t reflect.Type) string {
	n := t.Name()
	if n == "" {
		return ""
	}
	return strings.ToUpper(n[:1]) + n[1:]
}

// mapType gives the schemas of types whose JSON accepts more than their Go
// type shows.
func mapType(t reflect.Type) *jsonschema.Schema {
	list := &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}}
	switch t {
	case reflect.TypeFor[graphserver.StreamModes]():
		return &jsonschema.Schema{OneOf: []*jsonschema.Schema{{Type: "string"}, list},
			Description: "A stream mode or a list of them: values, updates, messages, messages-tuple, custom, events, debug, tasks, checkpoints."}
	case reflect.TypeFor[graphserver.Breakpoints]():
		return &jsonschema.Schema{OneOf: []*jsonschema.Schema{{Type: "string", Enum: []any{"*"}}, list},
			Description: "Node names, or \"*\" for every node."}
	case reflect.TypeFor[checkpointRef]():
		return &jsonschema.Schema{OneOf: []*jsonschema.Schema{{Type: "string", Description: "a checkpoint id"}, {Type: "object"}},
			Description: "A checkpoint: its id, {checkpoint_id, checkpoint_ns, checkpoint_map}, or a config {\"configurable\": {...}}."}
	}
	return nil
}

// specCache holds a handler's document, built at the first request.
type specCache struct {
	once sync.Once
	doc  []byte
	err  error
}

// serveOpenAPI handles GET /openapi.json.
func (h *handler) serveOpenAPI(w http.ResponseWriter, r *http.Request) error {
	h.spec.once.Do(func() { h.spec.doc, h.spec.err = h.openAPISpec() })
	if h.spec.err != nil {
		return h.spec.err
	}
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(h.spec.doc)
	return err
}

//go:embed docs.html
var docsPage []byte

// serveDocs handles GET /docs: a self-contained page (no external script or
// style) that renders ./openapi.json.
func (h *handler) serveDocs(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	_, err := w.Write(docsPage)
	return err
}
