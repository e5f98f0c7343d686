-- 0009_store_fts_pending: full-text entries waiting to be indexed.
--
-- A put writes its item's text here, one small row, instead of into
-- store_fts: FTS5 writes a segment of its own for each transaction that
-- changed it (and merges them as they pile up), which made a store put
-- cost several times what its item row costs. The texts are moved into
-- store_fts in batches (sqlite/textindex.go): by a DB in the background,
-- and before every full-text search, which therefore always sees every
-- committed put. item_id is store_items.id, the rowid its text gets in
-- store_fts.
CREATE TABLE store_fts_pending (
    item_id INTEGER PRIMARY KEY,
    text    TEXT NOT NULL
);

DROP TRIGGER store_items_delete_fts;
CREATE TRIGGER store_items_delete_fts AFTER DELETE ON store_items WHEN old.indexed BEGIN
    DELETE FROM store_fts WHERE rowid = old.id;
    DELETE FROM store_fts_pending WHERE item_id = old.id;
END;
