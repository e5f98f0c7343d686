package graphserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// Protocol-v2 commands (POST /threads/{thread_id}/commands, and the
// frames a WebSocket client sends).
const (
	CommandRunStart              = "run.start"
	CommandInputRespond          = "input.respond"
	CommandStateGet              = "state.get"
	CommandStateListCheckpoints  = "state.listCheckpoints"
	CommandStateFork             = "state.fork"
	CommandAgentGetTree          = "agent.getTree"
	CommandSubscriptionSubscribe = "subscription.subscribe"
	CommandSubscriptionUnsub     = "subscription.unsubscribe"
	CommandSubscriptionReconnect = "subscription.reconnect"
	CommandInputInject           = "input.inject"
)

// threadCommands are the commands ThreadCommand serves. (The subscription
// commands are served by the WebSocket transport itself.)
var threadCommands = []string{CommandRunStart, CommandInputRespond, CommandInputInject, CommandStateGet, CommandStateListCheckpoints, CommandStateFork, CommandAgentGetTree}

// Protocol-v2 error codes (the "error" of an error reply).
const (
	CodeInvalidArgument    = "invalid_argument"
	CodeUnknownCommand     = "unknown_command"
	CodeUnknownError       = "unknown_error"
	CodeNoSuchRun          = "no_such_run"
	CodeNoSuchSubscription = "no_such_subscription"
	CodeNoSuchInterrupt    = "no_such_interrupt"
	CodeNoSuchCheckpoint   = "no_such_checkpoint"
	CodePermissionDenied   = "permission_denied"
	CodeNotSupported       = "not_supported"
)

// Bounds on command params.
const (
	maxInterruptIDBytes     = 512  // an interrupt or checkpoint id
	maxRespondEntries       = 256  // responses of one input.respond
	maxListCheckpointsLimit = 1000 // state.listCheckpoints limit
	maxInjectNameBytes      = 512  // input.inject message name
)

// ThreadCommand is one protocol-v2 command: {"id", "method", "params"}.
type ThreadCommand struct {
	ID     *int64          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// ThreadCommandResult is the outcome of a command.
type ThreadCommandResult struct {
	// Result is the command's result object.
	Result any
	// AppliedThroughSeq is the seq of the thread's events the command is
	// applied after: a stream opened with since = AppliedThroughSeq misses
	// none of the events the command causes (the run run.start started).
	AppliedThroughSeq int64
}

// commandError is a command failure with its protocol error code; it
// unwraps to the *Error that says the HTTP status.
type commandError struct {
	code string
	err  *Error
}

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// invalidArg gives a validation error the code invalid_argument.
func invalidArg(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return &commandError{code: CodeInvalidArgument, err: e}
	}
	return err
}

func cmdErr(code, errCode, format string, args ...any) error {
	return &commandError{code: code, err: Errorf(errCode, format, args...)}
}

// CommandErrorCode returns the protocol-v2 error code of a command's error:
// the code it was raised with, else one derived from its Error code.
func CommandErrorCode(err error) string {
	var ce *commandError
	if errors.As(err, &ce) {
		return ce.code
	}
	switch ErrorCode(err) {
	case EINVALID, EBADREQUEST, ECONFLICT, EBUSY, ETOOLARGE:
		return CodeInvalidArgument
	case ENOTFOUND:
		return CodeNoSuchRun
	case EFORBIDDEN, EUNAUTHORIZED:
		return CodePermissionDenied
	}
	return CodeUnknownError
}

// ThreadCommand executes a protocol-v2 command on a thread:
//
//   - run.start {assistant_id, input?, config?, metadata?,
//     multitaskStrategy?} starts a run on the thread, creating the thread
//     when it is missing (committed before it returns); when the thread
//     waits at an interrupt, input is the resume value (Command{resume:
//     input}). On a busy thread the multitask strategy (default the
//     server's, enqueue) applies, as the JS SDK's submit sends it. Result
//     {run_id}.
//   - input.respond {interrupt_id, namespace, response} (or {responses:
//     [{interrupt_id, namespace, response}, ...]}) resumes the thread's
//     interrupted run with the responses, by interrupt id. Result {run_id}.
//   - input.inject {namespace: [], message: {role: "user"|"system",
//     content, name?}} adds a message to the thread's messages while its
//     agent runs: a run with input {messages: [message]} queued after the
//     active run (multitask enqueue; at once when none is active). Only
//     the root namespace takes input. Result {run_id}.
//   - state.get {namespace?} returns {values, checkpoint: {id, ns}}.
//   - state.listCheckpoints {namespace?, limit?, before?} returns
//     {checkpoints: [{id, timestamp, step, node_name?, metadata}]}.
//   - state.fork {checkpoint_id, input?, config?} starts a run from that
//     checkpoint. Result {run_id, thread_id}.
//   - agent.getTree returns {tree: {namespace: [], status, graph_name}}.
//
// Runs started here are ordinary runs (cancel, join and list them as any)
// that stream what the thread's events are made of. Errors carry a
// protocol code (CommandErrorCode): unknown_command, invalid_argument,
// no_such_interrupt, ...
func (s *Server) ThreadCommand(ctx context.Context, threadID string, cmd ThreadCommand) (*ThreadCommandResult, error) {
	id, err := parseUUID("thread", threadID)
	if err != nil {
		return nil, invalidArg(err)
	}
	params := cmd.Params
	if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
		params = json.RawMessage("{}")
	}
	switch cmd.Method {
	case CommandRunStart:
		var p struct {
			AssistantID string          `json:"assistant_id"`
			Input       json.RawMessage `json:"input"`
			Config      Object          `json:"config"`
			Metadata    Metadata        `json:"metadata"`
			// The JS SDK's submit sends multitaskStrategy (camel case, as
			// LangGraph's servers read it); multitask_strategy as the run
			// endpoints spell it.
			MultitaskStrategy  string `json:"multitaskStrategy"`
			MultitaskStrategy2 string `json:"multitask_strategy"`
		}
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if p.AssistantID == "" {
			return nil, cmdErr(CodeInvalidArgument, EINVALID, "run.start needs params.assistant_id.")
		}
		return s.v2StartRun(ctx, id, RunCreate{AssistantID: p.AssistantID, Input: p.Input, Config: p.Config, Metadata: p.Metadata,
			MultitaskStrategy: cmp.Or(p.MultitaskStrategy, p.MultitaskStrategy2)}, true)
	case CommandInputRespond:
		return s.v2Respond(ctx, id, params)
	case CommandInputInject:
		return s.v2Inject(ctx, id, params)
	case CommandStateGet:
		var p struct {
			Namespace []string `json:"namespace"`
		}
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if err := checkNamespace(p.Namespace); err != nil {
			return nil, invalidArg(err)
		}
		st, err := s.GetThreadState(ctx, id, ThreadStateQuery{Checkpoint: Checkpoint{CheckpointNS: strings.Join(p.Namespace, "|")}})
		if err != nil {
			return nil, err
		}
		res := map[string]any{"values": st.Values}
		if st.Checkpoint != nil && st.Checkpoint.CheckpointID != nil {
			res["checkpoint"] = map[string]any{"id": *st.Checkpoint.CheckpointID, "ns": st.Checkpoint.CheckpointNS}
		}
		return s.applied(ctx, id, res)
	case CommandStateListCheckpoints:
		var p struct {
			Namespace []string `json:"namespace"`
			Limit     int      `json:"limit"`
			Before    string   `json:"before"`
		}
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if err := checkNamespace(p.Namespace); err != nil {
			return nil, invalidArg(err)
		}
		if p.Limit < 0 || p.Limit > maxListCheckpointsLimit {
			return nil, cmdErr(CodeInvalidArgument, EINVALID, "limit must be between 1 and %d.", maxListCheckpointsLimit)
		}
		hist, err := s.GetThreadHistory(ctx, id, ThreadHistoryQuery{Limit: p.Limit, Before: p.Before, Checkpoint: Checkpoint{CheckpointNS: strings.Join(p.Namespace, "|")}})
		if err != nil {
			return nil, err
		}
		list := make([]map[string]any, 0, len(hist))
		for _, h := range hist {
			if h.Checkpoint == nil || h.Checkpoint.CheckpointID == nil {
				continue
			}
			e := map[string]any{"id": *h.Checkpoint.CheckpointID, "step": h.Metadata["step"], "metadata": h.Metadata}
			if h.CreatedAt != nil {
				e["timestamp"] = h.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
			}
			list = append(list, e)
		}
		return s.applied(ctx, id, map[string]any{"checkpoints": list})
	case CommandStateFork:
		var p struct {
			CheckpointID string          `json:"checkpoint_id"`
			Input        json.RawMessage `json:"input"`
			Config       Object          `json:"config"`
		}
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if p.CheckpointID == "" || len(p.CheckpointID) > maxInterruptIDBytes {
			return nil, cmdErr(CodeInvalidArgument, EINVALID, "state.fork needs params.checkpoint_id.")
		}
		t, err := s.stateThread(ctx, id, "create_run")
		if err != nil {
			return nil, err
		}
		res, err := s.v2StartRun(ctx, id, RunCreate{AssistantID: threadAssistant(t), Input: p.Input, Config: p.Config, CheckpointID: p.CheckpointID}, false)
		if err != nil {
			return nil, err
		}
		res.Result.(map[string]any)["thread_id"] = id
		return res, nil
	case CommandAgentGetTree:
		t, err := s.stateThread(ctx, id, "read")
		if err != nil {
			return nil, err
		}
		status := "completed"
		switch t.Status {
		case ThreadBusy:
			status = "running"
		case ThreadInterrupted:
			status = "interrupted"
		case ThreadError:
			status = "failed"
		}
		graphID, _ := t.Metadata["graph_id"].(string)
		return s.applied(ctx, id, map[string]any{"tree": map[string]any{"namespace": []string{}, "status": status, "graph_name": graphID}})
	case CommandSubscriptionSubscribe, CommandSubscriptionUnsub, CommandSubscriptionReconnect:
		return nil, cmdErr(CodeNotSupported, EBADREQUEST, "%s is a WebSocket command: over HTTP, subscribe with POST /threads/{thread_id}/stream/events.", cmd.Method)
	case "":
		return nil, cmdErr(CodeInvalidArgument, EINVALID, "A command needs a method.")
	}
	return nil, cmdErr(CodeUnknownCommand, EINVALID, "Unknown command %.100q: commands are %s.", cmd.Method, strings.Join(threadCommands, ", "))
}

// decodeParams decodes a command's params object.
func decodeParams(params json.RawMessage, v any) error {
	if err := json.Unmarshal(params, v); err != nil {
		return cmdErr(CodeInvalidArgument, EINVALID, "Invalid params: %s", jsonErrorText(err))
	}
	return nil
}

// jsonErrorText describes a decoding error without echoing input at length.
func jsonErrorText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return te.Field + " must be " + te.Type.String()
		}
		return "must be " + te.Type.String()
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}

// threadAssistant is the assistant (or graph) a thread last ran.
func threadAssistant(t *Thread) string {
	if a, _ := t.Metadata["assistant_id"].(string); a != "" {
		return a
	}
	g, _ := t.Metadata["graph_id"].(string)
	return g
}

// applied is the result of a command that caused no event.
func (s *Server) applied(ctx context.Context, threadID string, result any) (*ThreadCommandResult, error) {
	seq, err := s.ThreadEventsSeq(ctx, threadID)
	if err != nil {
		return nil, err
	}
	return &ThreadCommandResult{Result: result, AppliedThroughSeq: seq}, nil
}

// v2StartRun creates a run streaming what the thread events need. With
// resume set, a thread waiting at an interrupt takes the input as the
// resume value.
func (s *Server) v2StartRun(ctx context.Context, threadID string, rc RunCreate, resume bool) (*ThreadCommandResult, error) {
	if resume {
		t, err := s.storage.GetThread(ctx, threadID, nil)
		if err != nil && ErrorCode(err) != ENOTFOUND {
			return nil, err
		}
		if t != nil && len(t.Interrupts) > 0 && len(rc.Input) > 0 && string(rc.Input) != "null" {
			rc.Command, rc.Input = &RunCommand{Resume: rc.Input}, nil
		}
	}
	rc.StreamMode = slices.Clone(v2RunModes)
	rc.StreamSubgraphs = true
	rc.StreamResumable = true
	rc.IfNotExists = IfNotExistsCreate
	// Events of the run get a greater seq than this: a stream from here
	// misses none of them.
	s.rq.logs.hub.enableV2(threadID, s.v2Keep())
	seq, err := s.ThreadEventsSeq(ctx, threadID)
	if err != nil {
		return nil, err
	}
	run, err := s.CreateRun(ctx, threadID, rc)
	if err != nil {
		return nil, err
	}
	return &ThreadCommandResult{Result: map[string]any{"run_id": run.RunID}, AppliedThroughSeq: seq}, nil
}

// v2Respond answers interrupts: a run resuming the thread with the
// responses by interrupt id.
func (s *Server) v2Respond(ctx context.Context, threadID string, params json.RawMessage) (*ThreadCommandResult, error) {
	type entry struct {
		InterruptID string          `json:"interrupt_id"`
		Namespace   []string        `json:"namespace"`
		Response    json.RawMessage `json:"response"`
	}
	var p struct {
		entry
		Responses []entry  `json:"responses"`
		Config    Object   `json:"config"`
		Metadata  Metadata `json:"metadata"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	entries := p.Responses
	if len(entries) == 0 {
		entries = []entry{p.entry}
	}
	if len(entries) > maxRespondEntries {
		return nil, cmdErr(CodeInvalidArgument, EINVALID, "responses lists at most %d responses.", maxRespondEntries)
	}
	t, err := s.stateThread(ctx, threadID, "create_run")
	if err != nil {
		if ErrorCode(err) == ENOTFOUND {
			return nil, cmdErr(CodeNoSuchRun, ENOTFOUND, "Thread %s not found: nothing waits for input.", threadID)
		}
		return nil, err
	}
	pending := map[string]bool{}
	for _, list := range t.Interrupts {
		for _, in := range list {
			pending[in.ID] = true
		}
	}
	if t.Status == ThreadBusy {
		// The run that interrupted is still ending (its input.requested
		// event goes out before the thread records the interrupt): its
		// checkpoint already holds the interrupt, as LangGraph's does, and
		// the resuming run is queued behind it.
		if st, err := s.GetThreadState(ctx, threadID, ThreadStateQuery{}); err == nil {
			for _, in := range st.Interrupts {
				pending[in.ID] = true
			}
		}
	}
	resume := map[string]json.RawMessage{}
	for _, e := range entries {
		if e.InterruptID == "" || len(e.InterruptID) > maxInterruptIDBytes {
			return nil, cmdErr(CodeInvalidArgument, EINVALID, "input.respond needs params.interrupt_id.")
		}
		if err := checkNamespace(e.Namespace); err != nil {
			return nil, invalidArg(err)
		}
		if !pending[e.InterruptID] {
			return nil, cmdErr(CodeNoSuchInterrupt, ENOTFOUND, "No pending interrupt %.100q on thread %s.", e.InterruptID, threadID)
		}
		r := e.Response
		if len(r) == 0 {
			r = json.RawMessage("null")
		}
		resume[e.InterruptID] = r
	}
	b, err := json.Marshal(resume)
	if err != nil {
		return nil, err
	}
	return s.v2StartRun(ctx, threadID, RunCreate{AssistantID: threadAssistant(t), Command: &RunCommand{Resume: b}, Config: p.Config, Metadata: p.Metadata, MultitaskStrategy: MultitaskEnqueue}, false)
}

// v2Inject adds a message to a thread's messages while its agent runs: a
// run with input {messages: [message]} queued behind the active run. A
// graph cannot take input in the middle of a step, so the message is
// applied where LangGraph applies input sent to a busy thread with the
// enqueue strategy: after the active run, before anything sent later.
func (s *Server) v2Inject(ctx context.Context, threadID string, params json.RawMessage) (*ThreadCommandResult, error) {
	var p struct {
		Namespace []string `json:"namespace"`
		Message   *struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
			Name    string  `json:"name"`
		} `json:"message"`
		Config   Object   `json:"config"`
		Metadata Metadata `json:"metadata"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := checkNamespace(p.Namespace); err != nil {
		return nil, invalidArg(err)
	}
	if len(p.Namespace) > 0 {
		return nil, cmdErr(CodeNotSupported, EBADREQUEST, "input.inject takes input at the root namespace [] only: a subgraph's input comes from its parent graph.")
	}
	if p.Message == nil || p.Message.Content == nil {
		return nil, cmdErr(CodeInvalidArgument, EINVALID, "input.inject needs params.message {role, content}.")
	}
	if p.Message.Role != "user" && p.Message.Role != "system" {
		return nil, cmdErr(CodeInvalidArgument, EINVALID, "message.role must be user or system.")
	}
	if len(p.Message.Name) > maxInjectNameBytes {
		return nil, cmdErr(CodeInvalidArgument, EINVALID, "message.name has at most %d bytes.", maxInjectNameBytes)
	}
	t, err := s.stateThread(ctx, threadID, "create_run")
	if err != nil {
		if ErrorCode(err) == ENOTFOUND {
			return nil, cmdErr(CodeNoSuchRun, ENOTFOUND, "Thread %s not found: start a run with run.start first.", threadID)
		}
		return nil, err
	}
	if t.Status == ThreadInterrupted {
		return nil, cmdErr(CodeInvalidArgument, ECONFLICT, "Thread %s waits at an interrupt: answer it with input.respond.", threadID)
	}
	msg := map[string]any{"role": p.Message.Role, "content": *p.Message.Content}
	if p.Message.Name != "" {
		msg["name"] = p.Message.Name
	}
	in, err := json.Marshal(map[string]any{"messages": []any{msg}})
	if err != nil {
		return nil, err
	}
	return s.v2StartRun(ctx, threadID, RunCreate{AssistantID: threadAssistant(t), Input: in, Config: p.Config, Metadata: p.Metadata, MultitaskStrategy: MultitaskEnqueue}, false)
}
