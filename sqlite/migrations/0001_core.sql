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

-- Checkpoint tables are WITHOUT ROWID: the primary key is the table itself,
-- so the long text keys are stored once, not again in a separate index.
--
-- Checkpoint ids (checkpoint_id, parent_checkpoint_id, and checkpoint_id in
-- checkpoint_writes) that are canonical lower-case UUIDs are stored as their
-- 16 bytes (a BLOB); any other id is TEXT. UUIDv7 bytes sort like their text,
-- so the greatest id in a namespace is the latest (a BLOB sorts after any
-- TEXT: don't mix UUID and other ids in one namespace). '' = no parent.
-- created_at is NULL when it equals the millisecond time in a UUIDv7
-- checkpoint_id (the engine's ids), a timestamp otherwise.
CREATE TABLE checkpoints (
    thread_id            TEXT NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
    checkpoint_ns        TEXT NOT NULL DEFAULT '',
    checkpoint_id        BLOB NOT NULL,
    parent_checkpoint_id BLOB NOT NULL DEFAULT '',
    run_id               TEXT NOT NULL DEFAULT '',
    created_at           TEXT,
    metadata             TEXT NOT NULL DEFAULT '{}',
    channel_versions     TEXT NOT NULL DEFAULT '{}', -- JSON: channel -> version
    body                 TEXT NOT NULL DEFAULT 'null', -- engine-owned JSON
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
) WITHOUT ROWID;

-- A blob with base <> '' holds the array elements appended to version base
-- of the same channel; base = '' means data is the whole value.
CREATE TABLE checkpoint_blobs (
    thread_id     TEXT NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel       TEXT NOT NULL,
    version       TEXT NOT NULL,
    base          TEXT NOT NULL DEFAULT '',
    data          TEXT NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
) WITHOUT ROWID;

CREATE TABLE checkpoint_writes (
    thread_id     TEXT NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id BLOB NOT NULL,
    task_id       TEXT NOT NULL,
    task_path     TEXT NOT NULL DEFAULT '',
    idx           INTEGER NOT NULL,
    channel       TEXT NOT NULL,
    value         TEXT NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
) WITHOUT ROWID;
