package graph

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver"
	"github.com/graphserver/graphserver/driver"
	"github.com/graphserver/graphserver/internal/jsoncol"
	"github.com/graphserver/graphserver/record"
)

// A list channel (Append, AddMessages) is stored as deltas: each version
// holds the elements appended since the previous persisted one, so a long
// chat thread stores each message once and its storage grows with its
// content, not with turns. It is written in full only on its first write
// and when it was changed other than by appending (a message replaced or
// removed by id). Storage drivers keep successive deltas together so that
// reading a version costs a range scan, not a walk (see sqlite).

// ckpt is a checkpoint in memory.
type ckpt struct {
	id, parentID string
	ns           string
	createdAt    time.Time
	metadata     graphserver.Object
	step         int
	values       map[string]any    // data channels with a stored value
	versions     map[string]string // data channel -> version
	triggers     map[string]string // trigger channel -> version
	seen         map[string]map[string]string
	sends        []Send
	joins        map[string][]string // join channel -> nodes done, sorted
	// finished holds the trigger channels of deferred nodes made available
	// by the end of the run's work (LangGraph's LastValueAfterFinish and
	// NamedBarrierValueAfterFinish after finish())
	finished map[string]bool
	start    any
	hasStart bool
	pending  []driver.PendingWrite
	runID    string // the run that wrote it (stored checkpoints)
}

// body is the engine-owned JSON of a checkpoint (CheckpointRecord.Body),
// kept small because every checkpoint stores one:
//
//	{"t": {trigger: n}, "s": {node: n | {channel: n}}, "sends": [...], "start": input, "j": {join: [node]}}
//
// t holds the trigger channels' versions and s the versions each node has
// seen (LangGraph's versions_seen). Those versions are only compared with
// other versions of the same checkpoint, where a version's counter
// identifies it (every step's versions come from a greater counter than all
// before it), so only counters are stored, as n = top - counter where top
// is the greatest counter of the checkpoint's channel versions (small
// numbers however long the thread). Trigger names are shortened by
// shortTrigger, and a node that saw only its own trigger channel stores one
// number.
type body struct {
	T     map[string]int             `json:"t,omitempty"`
	S     map[string]json.RawMessage `json:"s,omitempty"`
	Sends []Send                     `json:"sends,omitempty"`
	Start json.RawMessage            `json:"start,omitempty"`
	J     map[string][]string        `json:"j,omitempty"` // join channel -> nodes done
	F     []string                   `json:"f,omitempty"` // finished deferred triggers
}

const branchPrefix = "branch:to:"

// shortTrigger shortens a trigger channel name for the body: branch:to:X
// becomes X (node names contain no ':'), __start__ stays, and any other name
// without ':' or starting with ':' gets a ':' in front. longTrigger reverses it.
func shortTrigger(ch string) string {
	if rest, ok := strings.CutPrefix(ch, branchPrefix); ok && rest != "" && rest != Start && !strings.Contains(rest, ":") {
		return rest
	}
	if ch == Start || (strings.Contains(ch, ":") && ch[0] != ':') {
		return ch
	}
	return ":" + ch
}

// longTrigger is the inverse of shortTrigger.
func longTrigger(s string) string {
	switch {
	case strings.HasPrefix(s, ":"):
		return s[1:]
	case s == Start || strings.Contains(s, ":"):
		return s
	}
	return branchPrefix + s
}

// ownTrigger is the trigger channel of node n.
func ownTrigger(n string) string {
	if n == Start {
		return Start
	}
	return branchPrefix + n
}

// topCounter is the greatest counter of c's channel versions (0 if none).
func topCounter(c *ckpt) int {
	top := 0
	for _, v := range c.versions {
		top = max(top, vcounter(v))
	}
	return top
}

// encodeBody renders the body of c.
func encodeBody(c *ckpt) (json.RawMessage, error) {
	b := body{Sends: c.sends, J: c.joins}
	for ch := range c.finished {
		b.F = append(b.F, ch)
	}
	slices.Sort(b.F)
	top := topCounter(c)
	if len(c.triggers) > 0 {
		b.T = make(map[string]int, len(c.triggers))
		for ch, v := range c.triggers {
			b.T[shortTrigger(ch)] = top - vcounter(v)
		}
	}
	if len(c.seen) > 0 {
		b.S = make(map[string]json.RawMessage, len(c.seen))
		for n, m := range c.seen {
			if v, ok := m[ownTrigger(n)]; ok && len(m) == 1 {
				b.S[n] = strconv.AppendInt(nil, int64(top-vcounter(v)), 10)
				continue
			}
			counters := make(map[string]int, len(m))
			for ch, v := range m {
				counters[ch] = top - vcounter(v)
			}
			raw, err := record.MarshalJSON(counters)
			if err != nil {
				return nil, err
			}
			b.S[n] = raw
		}
	}
	if c.hasStart {
		raw, err := record.MarshalJSON(c.start)
		if err != nil {
			return nil, fmt.Errorf("encode checkpoint input: %w", err)
		}
		b.Start = raw
	}
	return b.marshal()
}

// marshal encodes b as json.Marshal does, each field with
// record.AppendJSON: a checkpoint's body is encoded at every step.
func (b *body) marshal() (json.RawMessage, error) {
	out := make([]byte, 0, 128)
	var err error
	field := func(name string, v any) {
		if err == nil {
			out, err = record.AppendJSON(record.AppendJSONKey(out, name), v)
		}
	}
	if len(b.T) > 0 {
		field("t", b.T)
	}
	if len(b.S) > 0 {
		field("s", b.S)
	}
	if len(b.Sends) > 0 {
		field("sends", b.Sends)
	}
	if len(b.Start) > 0 {
		field("start", b.Start)
	}
	if len(b.J) > 0 {
		field("j", b.J)
	}
	if len(b.F) > 0 {
		field("f", b.F)
	}
	return record.EndJSONObject(out), err
}

// decodeBody fills c, whose versions are set, from a body written by
// encodeBody.
func decodeBody(c *ckpt, raw json.RawMessage) error {
	var b body
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return err
	}
	top := topCounter(c)
	for s, n := range b.T {
		c.triggers[longTrigger(s)] = strconv.Itoa(top - n)
	}
	for node, raw := range b.S {
		var n int
		if err := json.Unmarshal(raw, &n); err == nil {
			c.seen[node] = map[string]string{ownTrigger(node): strconv.Itoa(top - n)}
			continue
		}
		var counters map[string]int
		if err := json.Unmarshal(raw, &counters); err != nil {
			return fmt.Errorf("versions seen by %s: %w", node, err)
		}
		m := make(map[string]string, len(counters))
		for ch, n := range counters {
			m[ch] = strconv.Itoa(top - n)
		}
		c.seen[node] = m
	}
	c.sends = b.Sends
	c.joins = b.J
	for _, ch := range b.F {
		if c.finished == nil {
			c.finished = map[string]bool{}
		}
		c.finished[ch] = true
	}
	if len(b.Start) > 0 {
		c.hasStart = true
		if err := json.Unmarshal(b.Start, &c.start); err != nil {
			return err
		}
	}
	return nil
}

func emptyCkpt(ns string) *ckpt {
	return &ckpt{ns: ns, step: -2, values: map[string]any{}, versions: map[string]string{}, triggers: map[string]string{}, seen: map[string]map[string]string{}}
}

// next returns a copy of c as the start of a new checkpoint (new id, parent c).
func (c *ckpt) next(step int, source string) *ckpt {
	id, at := newCheckpointID()
	n := &ckpt{
		id: id, parentID: c.id, ns: c.ns, createdAt: at, step: step,
		metadata: graphserver.Object{"source": source, "step": step},
		values:   maps.Clone(c.values), versions: maps.Clone(c.versions), triggers: maps.Clone(c.triggers),
		seen: make(map[string]map[string]string, len(c.seen)), sends: c.sends, start: c.start, hasStart: c.hasStart,
		joins: maps.Clone(c.joins), finished: maps.Clone(c.finished),
	}
	for k, v := range c.seen {
		n.seen[k] = maps.Clone(v)
	}
	return n
}

// newCheckpointID returns a new time-ordered checkpoint id (a UUIDv7) and
// its creation time, the millisecond time the id holds, so storage need not
// keep the time apart from the id.
func newCheckpointID() (string, time.Time) {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString(), time.Now().UTC()
	}
	return id.String(), time.UnixMilli(int64(binary.BigEndian.Uint64(id[:8]) >> 16)).UTC()
}

// nextVersion returns a version greater than cur: a counter and a random
// suffix, so versions written on different forks never collide.
func nextVersion(cur string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strconv.Itoa(vcounter(cur)+1) + "." + hex.EncodeToString(b[:])
}

// vcmp compares versions by counter; "" is the smallest. Two versions met in
// one checkpoint with the same counter are the same version (see body).
func vcmp(a, b string) int {
	if a == b {
		return 0
	}
	if a == "" {
		return -1
	}
	if b == "" {
		return 1
	}
	return cmp.Compare(vcounter(a), vcounter(b))
}

func vcounter(v string) int {
	i := strings.IndexByte(v, '.')
	if i < 0 {
		i = len(v)
	}
	n, _ := strconv.Atoi(v[:i])
	return n
}

func taskID(checkpointID, ns, pathKey string) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(checkpointID+"\x00"+ns+"\x00"+pathKey)).String()
}

func interruptID(taskNS string) string {
	return strings.ReplaceAll(uuid.NewSHA1(uuid.NameSpaceURL, []byte(taskNS)).String(), "-", "")
}

// fromRecord decodes a stored checkpoint.
func fromRecord(rec *driver.CheckpointRecord) (*ckpt, error) {
	c := emptyCkpt(rec.NS)
	c.id, c.parentID, c.createdAt = rec.CheckpointID, rec.ParentCheckpointID, rec.CreatedAt
	c.metadata = rec.Metadata
	c.runID = rec.RunID
	if id, ok := rec.Metadata["run_id"].(string); ok && c.runID == "" {
		c.runID = id
	}
	if s, ok := rec.Metadata["step"].(float64); ok {
		c.step = int(s)
	} else if s, ok := rec.Metadata["step"].(int); ok {
		c.step = s
	}
	for k, v := range rec.ChannelVersions {
		c.versions[k] = v
		raw, ok := rec.Values[k]
		if !ok {
			continue
		}
		val, err := jsoncol.DecodeValue(raw)
		if err != nil {
			return nil, fmt.Errorf("decode checkpoint %s channel %s: %w", rec.CheckpointID, k, err)
		}
		c.values[k] = val
	}
	if err := decodeBody(c, rec.Body); err != nil {
		return nil, fmt.Errorf("decode checkpoint %s body: %w", rec.CheckpointID, err)
	}
	c.pending = rec.PendingWrites
	return c, nil
}

// persisted tracks, per channel, what storage holds so that blobs can be
// written as deltas against it.
type persisted struct {
	version    string
	length     int
	appendOnly bool
}

// tracker remembers the last persisted version of each channel.
type tracker map[string]*persisted

func (t tracker) loaded(c *ckpt) {
	for k, v := range c.versions {
		l, _ := c.values[k].([]any)
		t[k] = &persisted{version: v, length: len(l), appendOnly: true}
	}
}

// changed notes that channel k was updated in memory.
func (t tracker) changed(k string, appendOnly bool) {
	if p, ok := t[k]; ok && !appendOnly {
		p.appendOnly = false
	}
}

// record builds the CheckpointRecord of c, with blobs for the channels that
// changed since the last persisted checkpoint.
func (t tracker) record(c *ckpt, g *Compiled, threadID, runID, parentID string) (*driver.CheckpointRecord, error) {
	rec := &driver.CheckpointRecord{
		ThreadID: threadID, NS: c.ns, CheckpointID: c.id, ParentCheckpointID: parentID, RunID: runID,
		CreatedAt: c.createdAt, Metadata: c.metadata, ChannelVersions: maps.Clone(c.versions),
	}
	for k, v := range c.versions {
		ch := g.channels[k]
		if ch != nil && ch.kind == kindUntracked {
			// never checkpointed (UntrackedValue.checkpoint is MISSING)
			delete(rec.ChannelVersions, k)
			continue
		}
		p := t[k]
		if p != nil && p.version == v {
			continue
		}
		val := c.values[k]
		l, isList := val.([]any)
		blob := driver.ChannelBlob{Channel: k, Version: v}
		if ch != nil && ch.appendable() && isList && p != nil && p.appendOnly && p.version != "" &&
			len(l) >= p.length {
			data, err := record.MarshalJSON(l[p.length:])
			if err != nil {
				return nil, fmt.Errorf("encode channel %s: %w", k, err)
			}
			blob.Base, blob.Data = p.version, data
		} else {
			data, err := record.MarshalJSON(val)
			if err != nil {
				return nil, fmt.Errorf("encode channel %s: %w", k, err)
			}
			blob.Data = data
		}
		rec.NewBlobs = append(rec.NewBlobs, blob)
		t[k] = &persisted{version: v, length: len(l), appendOnly: true}
	}
	raw, err := encodeBody(c)
	if err != nil {
		return nil, err
	}
	rec.Body = raw
	return rec, nil
}

// load reads a checkpoint (the latest when id is ""); nil when there is none.
func load(ctx context.Context, cp driver.Checkpointer, threadID, ns, id string) (*ckpt, error) {
	rec, err := cp.GetCheckpoint(ctx, threadID, ns, id)
	if graphserver.ErrorCode(err) == graphserver.ENOTFOUND {
		if id != "" {
			return nil, err
		}
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return fromRecord(rec)
}
