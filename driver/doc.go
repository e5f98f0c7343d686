// Package driver is the contract a storage backend implements for package
// graphserver, as river keeps riverdriver apart from its client: Storage
// (split by concern into AssistantStorage, ThreadStorage, RunStorage, ...),
// the write transaction Tx the Server's rules run over, the optional
// capabilities detected with a type assertion (Optimizer, RunRecoverer,
// EventStorage, Notifier, ObservableStorage, RunQueueCounter), the
// Checkpointer a Graph persists its checkpoints through, and the records
// they exchange (CheckpointRecord, QueuedRun, RunRef, ItemWrite, ...).
//
// Package sqlite and package postgres implement Storage; internal/storagetest
// holds the behaviour every driver must show. An application only passes a
// driver's value as graphserver.Options.Storage. Errors are *record.Error
// values (graphserver.Error): ENOTFOUND for a missing resource or one hidden
// by the given Filter, ECONFLICT for an id already taken, EINVALID for input
// the driver cannot store.
//
// The resources and searches a driver stores and queries are package
// record's types, which package graphserver aliases (record.Thread is
// graphserver.Thread), so a driver may use either name.
package driver
