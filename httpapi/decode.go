package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/graphserver/graphserver"
)

// decode reads the JSON request body into v. The body is limited to
// Options.MaxBodyBytes (ETOOLARGE beyond); its Content-Type is not checked,
// so text/plain bodies are parsed as JSON; an empty body leaves v as is
// (the {} of a body whose fields are all optional); unknown fields are
// ignored. Malformed JSON, text that is not UTF-8, or JSON nested deeper than
// graphserver.MaxJSONDepth, is EINVALID "Invalid JSON in request body"; a
// value of the wrong type is EINVALID naming the field.
func (h *handler) decode(w http.ResponseWriter, r *http.Request, v any) error {
	body := r.Body
	if h.opts.MaxBodyBytes > 0 {
		body = http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return graphserver.Errorf(graphserver.ETOOLARGE, "Request body exceeds %d bytes", h.opts.MaxBodyBytes)
		}
		return graphserver.Errorf(graphserver.EBADREQUEST, "Could not read request body")
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if !utf8.Valid(b) {
		return graphserver.Errorf(graphserver.EINVALID, "Invalid JSON in request body: not valid UTF-8")
	}
	if jsonDepth(b) > graphserver.MaxJSONDepth {
		return graphserver.Errorf(graphserver.EINVALID, "Invalid JSON in request body: nested deeper than %d levels", graphserver.MaxJSONDepth)
	}
	if err := json.Unmarshal(b, v); err != nil {
		var gerr *graphserver.Error
		if errors.As(err, &gerr) {
			return gerr
		}
		var e *json.UnmarshalTypeError
		if errors.As(err, &e) && e.Field != "" {
			return graphserver.Errorf(graphserver.EINVALID, "Invalid request body: %s must be %s, not %s", e.Field, jsonType(e.Type.Kind().String()), e.Value)
		}
		return graphserver.Errorf(graphserver.EINVALID, "Invalid JSON in request body")
	}
	return nil
}

// jsonDepth returns the deepest nesting of objects and arrays in the JSON
// text b (0 for a scalar), in one pass that skips strings. It does not
// validate b: json.Unmarshal does, once the depth is known to be bounded.
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// jsonType names a Go kind the way an API user knows it.
func jsonType(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "a boolean"
	case kind == "slice", kind == "array":
		return "an array"
	case kind == "map", kind == "struct":
		return "an object"
	}
	return "of another type"
}

// queryBool reads a boolean query parameter: true/false/1/0/yes/no, any
// case. Absent or empty gives def; anything else is EINVALID.
func queryBool(r *http.Request, name string, def bool) (bool, error) {
	return queryValuesBool(r.URL.Query(), name, def)
}

// queryValuesBool is queryBool on query values parsed already.
func queryValuesBool(q url.Values, name string, def bool) (bool, error) {
	v := q.Get(name)
	switch strings.ToLower(v) {
	case "":
		return def, nil
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no":
		return false, nil
	}
	return false, graphserver.Errorf(graphserver.EINVALID, "Invalid %s %q: must be true or false", name, v)
}

// queryInt reads an integer query parameter; ok is false when it is absent.
// A non-integer is EINVALID.
func queryInt(r *http.Request, name string) (n int, ok bool, err error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, false, nil
	}
	n, err = strconv.Atoi(v)
	if err != nil {
		return 0, false, graphserver.Errorf(graphserver.EINVALID, "Invalid %s %q: must be an integer", name, v)
	}
	return n, true, nil
}

// queryStrings reads an array query parameter given as repeated keys
// (a=x&a=y), comma lists (a=x,y) or JSON arrays (a=["x","y"]), or any mix.
// Empty elements are dropped; a malformed JSON array is EINVALID.
func queryStrings(r *http.Request, name string) ([]string, error) {
	var out []string
	for _, v := range r.URL.Query()[name] {
		if strings.HasPrefix(strings.TrimSpace(v), "[") {
			var l []string
			if err := json.Unmarshal([]byte(v), &l); err != nil {
				return nil, graphserver.Errorf(graphserver.EINVALID, "Invalid %s: must be a JSON array of strings", name)
			}
			out = append(out, l...)
			continue
		}
		for s := range strings.SplitSeq(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out, nil
}
