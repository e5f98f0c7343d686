-- 0001_core: assistants, threads and checkpoints.
--
-- Conventions for every table in this database (keep them in later migrations):
--   * Timestamps are TEXT in UTC with fixed microsecond precision,
--     formatted as 2006-01-02T15:04:05.000000Z (Go layout; sqlite.TimeFormat),
--     so that string order is time order and they can be compared as strings.
--   * JSON values (config, context, metadata, values, ...) are TEXT holding
--     JSON. Object columns default to '{}'; optional values are NULL.
--   * Identifiers (UUIDs) are TEXT; checkpoint ids are the exception (see
--     the checkpoints table).
-- Never edit a shipped migration: add a new numbered file.

CREATE TABLE assistants (
    assistant_id TEXT PRIMARY KEY,
    graph_id     TEXT NOT NULL,
    config       TEXT NOT NULL DEFAULT '{}',
    context      TEXT NOT NULL DEFAULT '{}',
    metadata     TEXT NOT NULL DEFAULT '{}',
    name         TEXT NOT NULL DEFAULT '',
    description  TEXT,
    version      INTEGER NOT NULL DEFAULT 1,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX assistants_graph_id ON assistants (graph_id);
CREATE INDEX assistants_created_at ON assistants (created_at, assistant_id);
CREATE INDEX assistants_updated_at ON assistants (updated_at, assistant_id);
CREATE INDEX assistants_name ON assistants (name, assistant_id);

CREATE TABLE assistant_versions (
    assistant_id TEXT NOT NULL REFERENCES assistants (assistant_id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    graph_id     TEXT NOT NULL,
    config       TEXT NOT NULL DEFAULT '{}',
    context      TEXT NOT NULL DEFAULT '{}',
    metadata     TEXT NOT NULL DEFAULT '{}',
    name         TEXT NOT NULL DEFAULT '',
    description  TEXT,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (assistant_id, version)
);

CREATE TABLE threads (
    thread_id        TEXT PRIMARY KEY,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    state_updated_at TEXT NOT NULL,
    metadata         TEXT NOT NULL DEFAULT '{}',
    config           TEXT NOT NULL DEFAULT '{}',
    context          TEXT NOT NULL DEFAULT '{}',
    status           TEXT NOT NULL DEFAULT 'idle',
    state_values     TEXT,                       -- JSON; NULL before the first checkpoint
    interrupts       TEXT NOT NULL DEFAULT '{}', -- JSON: task id -> Interrupt[]
    error            TEXT,                       -- JSON {"error","message"} when status is error
    ttl_strategy     TEXT,                       -- delete | keep_latest; NULL = no TTL
    ttl_minutes      REAL,
    ttl_expires_at   TEXT                        -- timestamp; moves with activity
);
CREATE INDEX threads_status ON threads (status);
CREATE INDEX threads_created_at ON threads (created_at, thread_id);
CREATE INDEX threads_updated_at ON threads (updated_at, thread_id);
CREATE INDEX threads_state_updated_at ON threads (state_updated_at, thread_id);
CREATE INDEX threads_ttl_expires_at ON threads (ttl_expires_at) WHERE ttl_expires_at IS NOT NULL;

-- Checkpoint storage. A thread's checkpoint rows are keyed by a small
-- integer (tid, from checkpoint_threads) instead of its text id, and the
-- tables are WITHOUT ROWID: the primary key is the table itself, so keys
-- are stored once, not again in a separate index. Deleting a thread
-- cascades through checkpoint_threads to every other checkpoint table.
CREATE TABLE checkpoint_threads (
    tid       INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL UNIQUE REFERENCES threads (thread_id) ON DELETE CASCADE
);

-- The part of checkpoint metadata that does not vary from one checkpoint to
-- the next (graph_id, assistant_id, thread_id, user_id, run metadata, ...)
-- is stored once per distinct value and thread, numbered by mid.
CREATE TABLE checkpoint_metadata (
    tid  INTEGER NOT NULL REFERENCES checkpoint_threads (tid) ON DELETE CASCADE,
    mid  INTEGER NOT NULL,
    json TEXT NOT NULL, -- JSON object
    PRIMARY KEY (tid, mid),
    UNIQUE (tid, json)
) WITHOUT ROWID;

-- Checkpoint ids (checkpoint_id, parent_checkpoint_id, checkpoint_id in
-- checkpoint_writes) and run_id that are canonical lower-case UUIDs are
-- stored as their 16 bytes (a BLOB); any other id is TEXT. UUIDv7 bytes sort
-- like their text, so the greatest id in a namespace is the latest (a BLOB
-- sorts after any TEXT: don't mix UUID and other ids in one namespace).
-- '' = no parent / no run. created_at is NULL when it equals the millisecond
-- time in a UUIDv7 checkpoint_id (the engine's ids), a timestamp otherwise.
--
-- A checkpoint's metadata is json_object(metadata) + checkpoint_metadata
-- row shared_metadata (0 = none) + {"run_id": run_id} when
-- metadata_run_id = 1; the three parts have distinct keys. metadata holds
-- the keys that change with every checkpoint (source, step, parents,
-- writes).
--
-- channels maps each channel to [version, chain, seq], the blob row holding
-- its value (see checkpoint_blobs), or to [version] when no blob is stored.
CREATE TABLE checkpoints (
    tid                  INTEGER NOT NULL REFERENCES checkpoint_threads (tid) ON DELETE CASCADE,
    checkpoint_ns        TEXT NOT NULL DEFAULT '',
    checkpoint_id        BLOB NOT NULL,
    parent_checkpoint_id BLOB NOT NULL DEFAULT '',
    run_id               BLOB NOT NULL DEFAULT '',
    created_at           TEXT,
    metadata             TEXT NOT NULL DEFAULT '{}',
    shared_metadata      INTEGER NOT NULL DEFAULT 0,
    metadata_run_id      INTEGER NOT NULL DEFAULT 0,
    channels             TEXT NOT NULL DEFAULT '{}',
    body                 TEXT NOT NULL DEFAULT 'null', -- engine-owned JSON
    PRIMARY KEY (tid, checkpoint_ns, checkpoint_id)
) WITHOUT ROWID;

-- Channel values as append chains. A chain is numbered per (tid, namespace,
-- channel); its rows are numbered by seq from 0. Row 0 holds a whole JSON
-- value (link_chain NULL), or starts a fork: elements appended to the value
-- at (link_chain, link_seq) of the same channel. Every other row holds
-- elements appended to the value of the row before it. Appended elements
-- are stored as the inside of a JSON array ('' for none), so the value at
-- (chain, seq) is row 0's value followed by rows 1..seq joined with commas:
-- reading it is one range scan of the primary key per chain.
CREATE TABLE checkpoint_blobs (
    tid           INTEGER NOT NULL REFERENCES checkpoint_threads (tid) ON DELETE CASCADE,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel       TEXT NOT NULL,
    chain         INTEGER NOT NULL,
    seq           INTEGER NOT NULL,
    link_chain    INTEGER,
    link_seq      INTEGER,
    data          TEXT NOT NULL,
    PRIMARY KEY (tid, checkpoint_ns, channel, chain, seq)
) WITHOUT ROWID;

CREATE TABLE checkpoint_writes (
    tid           INTEGER NOT NULL REFERENCES checkpoint_threads (tid) ON DELETE CASCADE,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id BLOB NOT NULL,
    task_id       TEXT NOT NULL,
    task_path     TEXT NOT NULL DEFAULT '',
    idx           INTEGER NOT NULL,
    channel       TEXT NOT NULL,
    value         TEXT NOT NULL,
    PRIMARY KEY (tid, checkpoint_ns, checkpoint_id, task_id, idx)
) WITHOUT ROWID;
