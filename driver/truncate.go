package driver

import (
	"context"

	"github.com/graphserver/graphserver/record"
)

// TruncateOptions flags what TruncateStorage.Truncate clears.
type TruncateOptions struct {
	// Runs deletes every run (in-flight ones are cancelled first).
	Runs bool `json:"runs,omitempty"`
	// Threads deletes every thread with its runs and checkpoints.
	Threads bool `json:"threads,omitempty"`
	// Assistants deletes every assistant whose metadata does not match
	// KeepAssistants.
	Assistants bool `json:"assistants,omitempty"`
	// KeepAssistants is a filter on assistants' metadata, applied as the
	// filters of reads are: with Assistants, the assistants it matches stay
	// (the Server keeps its system assistants so). Nil keeps none.
	KeepAssistants record.Filter `json:"keep_assistants,omitempty"`
	// Checkpoints deletes every checkpoint (with its blobs and writes); the
	// threads themselves stay.
	Checkpoints bool `json:"checkpoint,omitempty"`
	// Store deletes every store item.
	Store bool `json:"store,omitempty"`
}

// TruncateStorage is the part of Storage that empties it, for test helpers.
type TruncateStorage interface {
	// Truncate deletes what opts flags, in one transaction.
	Truncate(ctx context.Context, opts TruncateOptions) error
}
