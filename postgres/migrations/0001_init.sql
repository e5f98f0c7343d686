-- 0001_init: every table of graphserver on PostgreSQL.
--
-- Conventions (keep them in later migrations):
--   * Timestamps are timestamptz (microsecond precision, as the sqlite
--     driver keeps).
--   * Identifiers, names and namespaces are TEXT COLLATE "C": byte order,
--     as SQLite compares them, whatever the database's collation. Checkpoint
--     ids are time-ordered strings, so the greatest id is the latest.
--   * JSON the server filters on (metadata, values, store item values) is
--     jsonb; JSON only stored and returned (run kwargs, checkpoint bodies,
--     channel values, pending writes) is TEXT, kept byte for byte.
-- Never edit a shipped migration: add a new numbered file.

CREATE TABLE assistants (
    assistant_id TEXT COLLATE "C" PRIMARY KEY,
    graph_id     TEXT COLLATE "C" NOT NULL,
    config       jsonb NOT NULL DEFAULT '{}',
    context      jsonb NOT NULL DEFAULT '{}',
    metadata     jsonb NOT NULL DEFAULT '{}',
    name         TEXT COLLATE "C" NOT NULL DEFAULT '',
    description  TEXT,
    version      integer NOT NULL DEFAULT 1,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX assistants_graph_id ON assistants (graph_id);
CREATE INDEX assistants_created_at ON assistants (created_at, assistant_id);
CREATE INDEX assistants_metadata ON assistants USING gin (metadata jsonb_path_ops);

CREATE TABLE assistant_versions (
    assistant_id TEXT COLLATE "C" NOT NULL REFERENCES assistants (assistant_id) ON DELETE CASCADE,
    version      integer NOT NULL,
    graph_id     TEXT COLLATE "C" NOT NULL,
    config       jsonb NOT NULL DEFAULT '{}',
    context      jsonb NOT NULL DEFAULT '{}',
    metadata     jsonb NOT NULL DEFAULT '{}',
    name         TEXT COLLATE "C" NOT NULL DEFAULT '',
    description  TEXT,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (assistant_id, version)
);

CREATE TABLE threads (
    thread_id        TEXT COLLATE "C" PRIMARY KEY,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    state_updated_at timestamptz NOT NULL,
    metadata         jsonb NOT NULL DEFAULT '{}',
    config           jsonb NOT NULL DEFAULT '{}',
    context          jsonb NOT NULL DEFAULT '{}',
    status           TEXT COLLATE "C" NOT NULL DEFAULT 'idle',
    state_values     jsonb,                       -- NULL before the first checkpoint
    interrupts       jsonb NOT NULL DEFAULT '{}', -- task id -> Interrupt[]
    error            jsonb,                       -- {"error","message"} when status is error
    ttl_strategy     TEXT,                        -- delete | keep_latest; NULL = no TTL
    ttl_minutes      double precision,
    ttl_expires_at   timestamptz                  -- moves with activity
);
CREATE INDEX threads_created_at ON threads (created_at, thread_id);
CREATE INDEX threads_updated_at ON threads (updated_at, thread_id);
CREATE INDEX threads_metadata ON threads USING gin (metadata jsonb_path_ops);
CREATE INDEX threads_ttl_expires_at ON threads (ttl_expires_at) WHERE ttl_expires_at IS NOT NULL;

-- Checkpoints. channels maps each channel to [version, blob_id] (the
-- checkpoint_blobs row holding its value) or [version] (no value stored).
-- run_id is '' for a checkpoint no run wrote.
CREATE TABLE checkpoints (
    thread_id            TEXT COLLATE "C" NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
    checkpoint_ns        TEXT COLLATE "C" NOT NULL DEFAULT '',
    checkpoint_id        TEXT COLLATE "C" NOT NULL,
    parent_checkpoint_id TEXT COLLATE "C" NOT NULL DEFAULT '',
    run_id               TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at           timestamptz NOT NULL,
    metadata             jsonb NOT NULL DEFAULT '{}',
    channels             jsonb NOT NULL DEFAULT '{}',
    body                 TEXT NOT NULL DEFAULT 'null', -- engine-owned JSON
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE INDEX checkpoints_run_id ON checkpoints (thread_id, run_id) WHERE run_id <> '';

-- Channel values. A blob holds a whole JSON value (base_id NULL) or the
-- elements appended (the inside of a JSON array, '' for none) to the value of
-- blob base_id of the same thread: the value is the base's followed by these.
-- blob_id comes from a sequence and is kept when a thread is copied, so it
-- is unique per thread.
CREATE SEQUENCE checkpoint_blob_ids;
CREATE TABLE checkpoint_blobs (
    thread_id     TEXT COLLATE "C" NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
    blob_id       bigint NOT NULL,
    base_id       bigint,
    data          TEXT NOT NULL,
    PRIMARY KEY (thread_id, blob_id)
);

-- Pending writes. run_id is the run that made them ('' for none); when a
-- run replaces the writes of a task another run (or none) made, the
-- replaced rows move to checkpoint_writes_replaced with replaced_by = the
-- run, and deleting that run puts them back.
CREATE TABLE checkpoint_writes (
    thread_id     TEXT COLLATE "C" NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
    checkpoint_ns TEXT COLLATE "C" NOT NULL DEFAULT '',
    checkpoint_id TEXT COLLATE "C" NOT NULL,
    task_id       TEXT COLLATE "C" NOT NULL,
    task_path     TEXT COLLATE "C" NOT NULL DEFAULT '',
    idx           integer NOT NULL,
    channel       TEXT NOT NULL,
    value         TEXT NOT NULL,
    run_id        TEXT COLLATE "C" NOT NULL DEFAULT '',
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
CREATE INDEX checkpoint_writes_run_id ON checkpoint_writes (thread_id, run_id) WHERE run_id <> '';

CREATE TABLE checkpoint_writes_replaced (
    thread_id     TEXT COLLATE "C" NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
    replaced_by   TEXT COLLATE "C" NOT NULL,
    checkpoint_ns TEXT COLLATE "C" NOT NULL,
    checkpoint_id TEXT COLLATE "C" NOT NULL,
    task_id       TEXT COLLATE "C" NOT NULL,
    task_path     TEXT COLLATE "C" NOT NULL,
    idx           integer NOT NULL,
    channel       TEXT NOT NULL,
    value         TEXT NOT NULL,
    run_id        TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (thread_id, replaced_by, checkpoint_ns, checkpoint_id, task_id, idx)
);

-- The run queue. A run is claimed by one worker at a time: status running,
-- lease_owner set and lease_expires_at in the future; workers in any
-- process claim with FOR UPDATE SKIP LOCKED. created_at includes
-- after_seconds. cancel_action records a cancellation requested for a
-- running run, which its worker observes (lease renewal, or at once through
-- a notification). At most one run of a thread runs at a time
-- (runs_one_running).
CREATE TABLE runs (
    run_id             TEXT COLLATE "C" PRIMARY KEY,
    thread_id          TEXT COLLATE "C" NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
    assistant_id       TEXT COLLATE "C" NOT NULL,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    status             TEXT COLLATE "C" NOT NULL,
    metadata           jsonb NOT NULL DEFAULT '{}',
    multitask_strategy TEXT NOT NULL,
    kwargs             TEXT NOT NULL DEFAULT '{}',
    attempt            integer NOT NULL DEFAULT 0,
    lease_owner        TEXT,
    lease_expires_at   timestamptz,
    cancel_action      TEXT
);
CREATE INDEX runs_pending ON runs (created_at, run_id) WHERE status = 'pending';
CREATE INDEX runs_active_thread ON runs (thread_id, status) WHERE status IN ('pending', 'running');
CREATE INDEX runs_lease ON runs (lease_expires_at) WHERE status = 'running';
CREATE INDEX runs_thread_created ON runs (thread_id, created_at, run_id);
CREATE UNIQUE INDEX runs_one_running ON runs (thread_id) WHERE status = 'running';

-- Webhook deliveries waiting to be sent (or retried); they outlive runs.
CREATE TABLE webhook_outbox (
    id         TEXT COLLATE "C" PRIMARY KEY,
    run_id     TEXT NOT NULL,
    url        TEXT NOT NULL,
    body       TEXT NOT NULL,
    attempts   integer NOT NULL DEFAULT 0,
    next_at    timestamptz NOT NULL,
    last_error TEXT,
    created_at timestamptz NOT NULL
);
CREATE INDEX webhook_outbox_next_at ON webhook_outbox (next_at);

-- Crons. Whoever moves next_run_date from the due value to the next one
-- owns that firing (a compare-and-set in the transaction inserting the
-- run), so processes sharing the database fire each cron once.
CREATE TABLE crons (
    cron_id          TEXT COLLATE "C" PRIMARY KEY,
    assistant_id     TEXT COLLATE "C" NOT NULL REFERENCES assistants (assistant_id) ON DELETE CASCADE,
    thread_id        TEXT COLLATE "C" REFERENCES threads (thread_id) ON DELETE CASCADE,
    user_id          TEXT,
    schedule         TEXT NOT NULL,
    timezone         TEXT,
    on_run_completed TEXT,
    end_time         timestamptz,
    next_run_date    timestamptz,
    enabled          boolean NOT NULL DEFAULT true,
    payload          TEXT NOT NULL DEFAULT '{}',
    metadata         jsonb NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX crons_due ON crons (next_run_date) WHERE enabled;
CREATE INDEX crons_assistant_id ON crons (assistant_id);
CREATE INDEX crons_thread_id ON crons (thread_id);

-- Store items. namespace holds the labels joined by '.' (labels never
-- contain '.'), so the items under prefix P are those with namespace = P or
-- P || '.' <= namespace < P || '/' ('/' follows '.' in byte order).
-- Timestamps have millisecond precision. tsv is the full-text index of the
-- item's indexed texts (NULL when none).
CREATE TABLE store_items (
    id          bigserial PRIMARY KEY,
    namespace   TEXT COLLATE "C" NOT NULL,
    key         TEXT COLLATE "C" NOT NULL,
    value       jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    ttl_minutes double precision,
    expires_at  timestamptz,
    tsv         tsvector,
    UNIQUE (namespace, key)
);
CREATE INDEX store_items_updated_at ON store_items (updated_at, id);
CREATE INDEX store_items_expires_at ON store_items (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX store_items_tsv ON store_items USING gin (tsv) WHERE tsv IS NOT NULL;

-- One row per embedded text of an item: dims float32 values, little-endian.
CREATE TABLE store_vectors (
    item_id bigint NOT NULL REFERENCES store_items (id) ON DELETE CASCADE,
    seq     integer NOT NULL,
    path    TEXT NOT NULL,
    dims    integer NOT NULL,
    vector  bytea NOT NULL,
    PRIMARY KEY (item_id, seq)
);
