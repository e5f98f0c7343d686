-- 0002_store: store items (the /store API and the Store graphs get), their
-- full-text index and their embeddings. Conventions as in 0001_core.sql;
-- item timestamps have millisecond precision.
--
-- namespace holds the labels joined by '.' (labels never contain '.'), so the
-- items under the prefix P are those with namespace = P or
-- P || '.' <= namespace < P || '/' ('/' follows '.'), a range on the index.
CREATE TABLE store_items (
    id          INTEGER PRIMARY KEY,
    namespace   TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL DEFAULT '{}', -- JSON object
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    ttl_minutes REAL,                       -- NULL = never expires
    expires_at  TEXT,                       -- updated_at (or last refresh) + ttl
    UNIQUE (namespace, key)
);
CREATE INDEX store_items_updated_at ON store_items (updated_at, id);
CREATE INDEX store_items_expires_at ON store_items (expires_at) WHERE expires_at IS NOT NULL;

-- One row per indexed text of an item, when an embedder is configured.
CREATE TABLE store_vectors (
    item_id INTEGER NOT NULL REFERENCES store_items (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    path    TEXT NOT NULL,
    dims    INTEGER NOT NULL,
    vector  BLOB NOT NULL, -- dims float32 values, little-endian
    PRIMARY KEY (item_id, seq)
);

-- Full-text index of the indexed texts of an item (joined by newlines);
-- rowid = store_items.id.
CREATE VIRTUAL TABLE store_fts USING fts5 (text, tokenize = 'unicode61');

CREATE TRIGGER store_items_delete_fts AFTER DELETE ON store_items BEGIN
    DELETE FROM store_fts WHERE rowid = old.id;
END;
