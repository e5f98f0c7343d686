package graph

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/uuid"
)

// Message types, as LangChain names them in JSON.
const (
	HumanMessage  = "human"
	AIMessage     = "ai"
	ToolMessage   = "tool"
	SystemMessage = "system"
	RemoveMessage = "remove"
)

// RemoveAllMessages is the id of a remove message that clears the whole list
// when written to an AddMessages channel (LangChain's REMOVE_ALL_MESSAGES).
const RemoveAllMessages = "__remove_all__"

// ToolCall is a tool call requested by an AI message.
type ToolCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
	ID   string         `json:"id"`
	Type string         `json:"type,omitempty"`
}

// Message is a chat message in LangChain's JSON form, the form chat UIs and
// the LangGraph SDKs read. Type is human, ai, tool, system or remove.
//
// Its JSON has the keys LangChain writes for each type: content,
// additional_kwargs, response_metadata, type, id (and name when set); AI
// messages add tool_calls and invalid_tool_calls (and tool_call_chunks when
// Chunks is set, for messages assembled from streamed chunks); tool messages
// add tool_call_id.
type Message struct {
	Type             string         `json:"type"`
	Content          any            `json:"content"` // a string or a list of content blocks
	ID               string         `json:"id,omitempty"`
	Name             string         `json:"name,omitempty"`
	AdditionalKwargs map[string]any `json:"additional_kwargs,omitempty"`
	ResponseMetadata map[string]any `json:"response_metadata,omitempty"`
	ToolCalls        []ToolCall     `json:"tool_calls,omitempty"`
	InvalidToolCalls []any          `json:"invalid_tool_calls,omitempty"`
	ToolCallChunks   []any          `json:"tool_call_chunks,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
	UsageMetadata    map[string]any `json:"usage_metadata,omitempty"`

	// Chunks marks an AI message assembled from streamed chunks: its JSON
	// carries "tool_call_chunks" (an empty list when ToolCallChunks is nil).
	Chunks bool `json:"-"`
}

// Human returns a human message with the given text content.
func Human(content string) Message { return Message{Type: HumanMessage, Content: content} }

// AI returns an AI message with the given text content.
func AI(content string) Message { return Message{Type: AIMessage, Content: content} }

// System returns a system message with the given text content.
func System(content string) Message { return Message{Type: SystemMessage, Content: content} }

// Tool returns a tool message answering the tool call toolCallID.
func Tool(content, toolCallID string) Message {
	return Message{Type: ToolMessage, Content: content, ToolCallID: toolCallID}
}

// Remove returns LangChain's remove-message form: written to an AddMessages
// channel it deletes the message with that id (RemoveAllMessages: all).
func Remove(id string) Message { return Message{Type: RemoveMessage, ID: id} }

// Text returns the message content as text: the string itself, or the text
// blocks of a list content joined.
func (m Message) Text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case []any:
		s := ""
		for _, b := range c {
			switch b := b.(type) {
			case string:
				s += b
			case map[string]any:
				if t, ok := b["text"].(string); ok {
					s += t
				}
			}
		}
		return s
	case nil:
		return ""
	}
	return fmt.Sprint(m.Content)
}

// MarshalJSON writes the LangChain key set of the message's type.
func (m Message) MarshalJSON() ([]byte, error) {
	o := map[string]any{
		"type":              m.Type,
		"content":           m.Content,
		"additional_kwargs": orEmpty(m.AdditionalKwargs),
		"response_metadata": orEmpty(m.ResponseMetadata),
	}
	if m.Content == nil {
		o["content"] = ""
	}
	if m.ID != "" {
		o["id"] = m.ID
	} else {
		o["id"] = nil
	}
	if m.Name != "" {
		o["name"] = m.Name
	}
	switch m.Type {
	case RemoveMessage:
		return json.Marshal(map[string]any{"type": RemoveMessage, "id": m.ID, "content": "", "additional_kwargs": map[string]any{}, "response_metadata": map[string]any{}})
	case AIMessage, "AIMessageChunk":
		tc := m.ToolCalls
		if tc == nil {
			tc = []ToolCall{}
		}
		o["tool_calls"] = tc
		o["invalid_tool_calls"] = orEmptyList(m.InvalidToolCalls)
		if m.Chunks || m.ToolCallChunks != nil || m.Type == "AIMessageChunk" {
			o["tool_call_chunks"] = orEmptyList(m.ToolCallChunks)
		}
		if m.UsageMetadata != nil {
			o["usage_metadata"] = m.UsageMetadata
		}
	case ToolMessage:
		o["tool_call_id"] = m.ToolCallID
	}
	return json.Marshal(o)
}

// UnmarshalJSON reads a message in LangChain's form or the {role, content}
// form (see ToMessage).
func (m *Message) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	msg, err := ToMessage(v)
	if err != nil {
		return err
	}
	*m = msg
	return nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func orEmptyList(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

var roleTypes = map[string]string{
	"user": HumanMessage, "human": HumanMessage,
	"assistant": AIMessage, "ai": AIMessage, "AIMessageChunk": AIMessage,
	"system": SystemMessage, "developer": SystemMessage,
	"tool": ToolMessage, "remove": RemoveMessage,
	"HumanMessage": HumanMessage, "AIMessage": AIMessage, "SystemMessage": SystemMessage, "ToolMessage": ToolMessage,
}

// ToMessage coerces v into a Message: a Message or *Message, a bare string
// (a human message), an object in LangChain form ({"type": ...}) or in the
// OpenAI form ({"role": "user"|"human"|"assistant"|"ai"|"system"|"tool"}).
func ToMessage(v any) (Message, error) {
	switch v := v.(type) {
	case Message:
		return v, nil
	case *Message:
		return *v, nil
	case string:
		return Human(v), nil
	case map[string]any:
		return messageFromMap(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Message{}, fmt.Errorf("message: %w", err)
	}
	var o map[string]any
	if err := json.Unmarshal(b, &o); err != nil {
		return Message{}, &NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("cannot coerce %s to a message", b)}
	}
	return messageFromMap(o)
}

func messageFromMap(o map[string]any) (Message, error) {
	t, _ := o["type"].(string)
	if t == "" {
		t, _ = o["role"].(string)
	}
	typ, ok := roleTypes[t]
	if !ok {
		return Message{}, &NodeError{Name: "InvalidUpdateError", Message: fmt.Sprintf("message type %q is not one of human, ai, system, tool, remove (or roles user, assistant)", t)}
	}
	m := Message{Type: typ, Content: o["content"]}
	if m.Content == nil {
		m.Content = ""
	}
	m.ID, _ = o["id"].(string)
	m.Name, _ = o["name"].(string)
	m.ToolCallID, _ = o["tool_call_id"].(string)
	m.AdditionalKwargs, _ = o["additional_kwargs"].(map[string]any)
	m.ResponseMetadata, _ = o["response_metadata"].(map[string]any)
	m.UsageMetadata, _ = o["usage_metadata"].(map[string]any)
	if l, ok := o["invalid_tool_calls"].([]any); ok && len(l) > 0 {
		m.InvalidToolCalls = l
	}
	if l, ok := o["tool_call_chunks"].([]any); ok {
		m.Chunks = true
		if len(l) > 0 {
			m.ToolCallChunks = l
		}
	}
	if tcs, ok := o["tool_calls"].([]any); ok {
		for _, tc := range tcs {
			tm, _ := tc.(map[string]any)
			if tm == nil {
				continue
			}
			call := ToolCall{}
			call.Name, _ = tm["name"].(string)
			call.ID, _ = tm["id"].(string)
			call.Type, _ = tm["type"].(string)
			call.Args, _ = tm["args"].(map[string]any)
			if fn, ok := tm["function"].(map[string]any); ok { // OpenAI form
				call.Name, _ = fn["name"].(string)
				if s, ok := fn["arguments"].(string); ok {
					_ = json.Unmarshal([]byte(s), &call.Args)
				}
			}
			if call.Args == nil {
				call.Args = map[string]any{}
			}
			if call.Type == "" {
				call.Type = "tool_call"
			}
			m.ToolCalls = append(m.ToolCalls, call)
		}
	}
	return m, nil
}

// Messages converts a channel value (a list of messages in any accepted
// form) into Messages; elements that are not messages are skipped.
func Messages(v any) []Message {
	var items []any
	switch v := v.(type) {
	case []any:
		items = v
	case []Message:
		return v
	case nil:
		return nil
	default:
		items = []any{v}
	}
	out := make([]Message, 0, len(items))
	for _, it := range items {
		if m, err := ToMessage(it); err == nil {
			out = append(out, m)
		}
	}
	return out
}

// messageValue returns the JSON-native form (map) of m.
func messageValue(m Message) map[string]any {
	b, _ := json.Marshal(m)
	var o map[string]any
	_ = json.Unmarshal(b, &o)
	return o
}

// addMessages is the add-messages reducer on JSON-native values. It returns
// the merged list and whether it only appended to old.
func addMessages(old, upd any) (any, bool, error) {
	left, _ := old.([]any)
	var right []any
	switch u := upd.(type) {
	case []any:
		right = u
	case nil:
		return left, true, nil
	default:
		right = []any{u}
	}
	msgs := make([]map[string]any, 0, len(right))
	for _, r := range right {
		m, err := ToMessage(r)
		if err != nil {
			return nil, false, err
		}
		if m.ID == "" {
			m.ID = uuid.NewString()
		}
		mv := messageValue(m)
		if rm, ok := r.(map[string]any); ok && m.Type != RemoveMessage {
			// keep keys LangChain writes that Message does not model
			for k, v := range rm {
				if _, ok := mv[k]; !ok && k != "role" {
					mv[k] = v
				}
			}
		}
		msgs = append(msgs, mv)
	}
	// remove-all: everything before the last remove-all is dropped
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i]["type"] == RemoveMessage && msgs[i]["id"] == RemoveAllMessages {
			out := make([]any, 0, len(msgs)-i-1)
			for _, m := range msgs[i+1:] {
				out = append(out, m)
			}
			return out, false, nil
		}
	}
	index := make(map[string]int, len(left))
	for i, l := range left {
		if lm, ok := l.(map[string]any); ok {
			if id, ok := lm["id"].(string); ok {
				index[id] = i
			}
		}
	}
	out := left[:len(left):len(left)]
	appendOnly := true
	var removed map[string]bool
	for _, m := range msgs {
		id, _ := m["id"].(string)
		if m["type"] == RemoveMessage {
			if _, ok := index[id]; !ok {
				return nil, false, &NodeError{Name: "ValueError", Message: fmt.Sprintf("Attempting to delete a message with an ID that doesn't exist ('%s')", id)}
			}
			if removed == nil {
				removed = map[string]bool{}
			}
			removed[id] = true
			appendOnly = false
			continue
		}
		if i, ok := index[id]; ok {
			if removed[id] {
				delete(removed, id)
			}
			if reflect.DeepEqual(out[i], any(m)) {
				continue
			}
			if appendOnly && i < len(left) {
				out = append([]any(nil), out...)
			}
			if i < len(left) {
				appendOnly = false
			}
			out[i] = m
			continue
		}
		index[id] = len(out)
		out = append(out, m)
	}
	if len(removed) > 0 {
		kept := make([]any, 0, len(out))
		for _, o := range out {
			id, _ := o.(map[string]any)["id"].(string)
			if !removed[id] {
				kept = append(kept, o)
			}
		}
		out = kept
	}
	return out, appendOnly, nil
}
