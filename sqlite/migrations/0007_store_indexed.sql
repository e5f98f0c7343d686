-- 0007_store_indexed: whether a store item has index entries (a full-text
-- row in store_fts, vectors in store_vectors). Most items have none (no
-- index fields configured): replacing or deleting them then skips the
-- full-text and vector maintenance. Rows stored before this migration
-- count as indexed (1); PutItem sets the flag from what it indexes.
ALTER TABLE store_items ADD COLUMN indexed INTEGER NOT NULL DEFAULT 1;

DROP TRIGGER store_items_delete_fts;
CREATE TRIGGER store_items_delete_fts AFTER DELETE ON store_items WHEN old.indexed BEGIN
    DELETE FROM store_fts WHERE rowid = old.id;
END;
