package graph

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/graphserver/graphserver"
)

// snapshotEvery is the shortest chain of delta blobs before a channel is
// written in full again. A full snapshot is written only once the list has
// also grown fourfold since the previous one, so snapshots cost about a
// third of the final size of the list in total (storage grows with content, not turns).
const snapshotEvery = 32

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
	start        any
	hasStart     bool
	depth        map[string]int
	snap         map[string]int // list length at the last full blob
	pending      []graphserver.PendingWrite
}

// body is the engine-owned JSON of a checkpoint (CheckpointRecord.Body).
type body struct {
	V        int                          `json:"v,omitempty"`
	Triggers map[string]string            `json:"triggers,omitempty"`
	Seen     map[string]map[string]string `json:"seen,omitempty"`
	Sends    []Send                       `json:"sends,omitempty"`
	Start    json.RawMessage              `json:"start,omitempty"`
	Depth    map[string]int               `json:"depth,omitempty"`
	Snap     map[string]int               `json:"snap,omitempty"`
}

func emptyCkpt(ns string) *ckpt {
	return &ckpt{ns: ns, step: -2, values: map[string]any{}, versions: map[string]string{}, triggers: map[string]string{}, seen: map[string]map[string]string{}, depth: map[string]int{}, snap: map[string]int{}}
}

// next returns a copy of c as the start of a new checkpoint (new id, parent c).
func (c *ckpt) next(step int, source string) *ckpt {
	n := &ckpt{
		id: newCheckpointID(), parentID: c.id, ns: c.ns, createdAt: time.Now().UTC(), step: step,
		metadata: graphserver.Object{"source": source, "step": step},
		values:   maps.Clone(c.values), versions: maps.Clone(c.versions), triggers: maps.Clone(c.triggers),
		seen: make(map[string]map[string]string, len(c.seen)), sends: c.sends, start: c.start, hasStart: c.hasStart,
		depth: maps.Clone(c.depth), snap: maps.Clone(c.snap),
	}
	for k, v := range c.seen {
		n.seen[k] = maps.Clone(v)
	}
	return n
}

func newCheckpointID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// nextVersion returns a version greater than cur: a zero-padded counter and
// a random suffix, so versions written on different forks never collide.
func nextVersion(cur string) string {
	n := 0
	if i := strings.IndexByte(cur, '.'); i > 0 {
		n, _ = strconv.Atoi(cur[:i])
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%d.%s", n+1, hex.EncodeToString(b[:]))
}

// vcmp compares versions by counter, then suffix; "" is the smallest.
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
	na, nb := vcounter(a), vcounter(b)
	if na != nb {
		if na < nb {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
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
func fromRecord(rec *graphserver.CheckpointRecord) (*ckpt, error) {
	c := emptyCkpt(rec.NS)
	c.id, c.parentID, c.createdAt = rec.CheckpointID, rec.ParentCheckpointID, rec.CreatedAt
	c.metadata = rec.Metadata
	if s, ok := rec.Metadata["step"].(float64); ok {
		c.step = int(s)
	} else if s, ok := rec.Metadata["step"].(int); ok {
		c.step = s
	}
	var b body
	if len(rec.Body) > 0 {
		if err := json.Unmarshal(rec.Body, &b); err != nil {
			return nil, fmt.Errorf("decode checkpoint %s body: %w", rec.CheckpointID, err)
		}
	}
	for k, v := range rec.ChannelVersions {
		c.versions[k] = v
		raw, ok := rec.Values[k]
		if !ok {
			continue
		}
		var val any
		if err := json.Unmarshal(raw, &val); err != nil {
			return nil, fmt.Errorf("decode checkpoint %s channel %s: %w", rec.CheckpointID, k, err)
		}
		c.values[k] = val
	}
	if b.Triggers != nil {
		c.triggers = b.Triggers
	}
	if b.Seen != nil {
		c.seen = b.Seen
	}
	if b.Depth != nil {
		c.depth = b.Depth
	}
	if b.Snap != nil {
		c.snap = b.Snap
	}
	c.sends = b.Sends
	if len(b.Start) > 0 {
		c.hasStart = true
		if err := json.Unmarshal(b.Start, &c.start); err != nil {
			return nil, err
		}
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
func (t tracker) record(c *ckpt, g *Compiled, threadID, runID, parentID string) (*graphserver.CheckpointRecord, error) {
	rec := &graphserver.CheckpointRecord{
		ThreadID: threadID, NS: c.ns, CheckpointID: c.id, ParentCheckpointID: parentID, RunID: runID,
		CreatedAt: c.createdAt, Metadata: c.metadata, ChannelVersions: maps.Clone(c.versions),
	}
	type blobPlan struct {
		k string
		p *persisted
	}
	for k, v := range c.versions {
		p := t[k]
		if p != nil && p.version == v {
			continue
		}
		ch := g.channels[k]
		val := c.values[k]
		l, isList := val.([]any)
		blob := graphserver.ChannelBlob{Channel: k, Version: v}
		if ch != nil && ch.appendable() && isList && p != nil && p.appendOnly && p.version != "" && len(l) >= p.length && (c.depth[k]+1 < snapshotEvery || len(l) < 4*c.snap[k]) {
			data, err := json.Marshal(l[p.length:])
			if err != nil {
				return nil, fmt.Errorf("encode channel %s: %w", k, err)
			}
			blob.Base, blob.Data = p.version, data
			c.depth[k]++
		} else {
			data, err := json.Marshal(val)
			if err != nil {
				return nil, fmt.Errorf("encode channel %s: %w", k, err)
			}
			blob.Data = data
			if ch != nil && ch.appendable() {
				c.depth[k] = 0
				c.snap[k] = len(l)
			}
		}
		rec.NewBlobs = append(rec.NewBlobs, blob)
		t[k] = &persisted{version: v, length: len(l), appendOnly: true}
	}
	b := body{Triggers: c.triggers, Seen: c.seen, Sends: c.sends, Depth: c.depth, Snap: c.snap}
	if c.hasStart {
		raw, err := json.Marshal(c.start)
		if err != nil {
			return nil, err
		}
		b.Start = raw
	}
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	rec.Body = raw
	return rec, nil
}

// load reads a checkpoint (the latest when id is ""); nil when there is none.
func load(ctx context.Context, cp graphserver.Checkpointer, threadID, ns, id string) (*ckpt, error) {
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
