-- 0008_assistant_changes: a counter every change to the assistants table
-- moves (triggers, whichever process writes), so that a reader can keep
-- decoded assistants while it stays the same: a run reads its assistant
-- with one lookup of this row instead of the whole assistant.
CREATE TABLE assistant_changes (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO assistant_changes (id, n) VALUES (1, 0);

CREATE TRIGGER assistants_changed_insert AFTER INSERT ON assistants BEGIN
    UPDATE assistant_changes SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER assistants_changed_update AFTER UPDATE ON assistants BEGIN
    UPDATE assistant_changes SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER assistants_changed_delete AFTER DELETE ON assistants BEGIN
    UPDATE assistant_changes SET n = n + 1 WHERE id = 1;
END;
