package driver

import "context"

// TruncateOptions flags what TruncateStorage.Truncate clears.
type TruncateOptions struct {
	// Runs deletes every run (in-flight ones are cancelled first).
	Runs bool `json:"runs,omitempty"`
	// Threads deletes every thread with its runs and checkpoints.
	Threads bool `json:"threads,omitempty"`
	// Assistants deletes every assistant except the system assistants.
	Assistants bool `json:"assistants,omitempty"`
	// Checkpoints deletes every checkpoint (with its blobs and writes); the
	// threads themselves stay.
	Checkpoints bool `json:"checkpoint,omitempty"`
	// Store deletes every store item.
	Store bool `json:"store,omitempty"`
}

// TruncateStorage is the part of Storage that empties it, for test helpers.
type TruncateStorage interface {
	// Truncate deletes what opts flags, in one transaction. Assistants whose
	// metadata.created_by is "system" are kept.
	Truncate(ctx context.Context, opts TruncateOptions) error
}
