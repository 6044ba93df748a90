-- +goose Up
CREATE TABLE users (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT    NOT NULL,
    email         TEXT    NOT NULL,
    -- lower(email), computed by the store: UNIQUE makes the database itself
    -- refuse a duplicate, case-insensitively, whatever the race.
    email_key     TEXT    NOT NULL UNIQUE,
    age           INTEGER CHECK (age IS NULL OR age BETWEEN 0 AND 150),
    password_hash TEXT,
    roles         TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(roles)),
    created_at    INTEGER NOT NULL, -- Unix milliseconds, UTC
    updated_at    INTEGER NOT NULL,
    deleted       INTEGER NOT NULL DEFAULT 0 CHECK (deleted IN (0, 1))
) STRICT;

-- Lists filter on deleted first (status=active is the default), then sort by
-- one field with id breaking ties: one index per sortable field serves both
-- the page and its count without a sort step.
CREATE INDEX users_deleted_id         ON users (deleted, id);
CREATE INDEX users_deleted_name       ON users (deleted, name, id);
CREATE INDEX users_deleted_email      ON users (deleted, email, id);
CREATE INDEX users_deleted_age        ON users (deleted, age, id);
CREATE INDEX users_deleted_created_at ON users (deleted, created_at, id);
CREATE INDEX users_deleted_updated_at ON users (deleted, updated_at, id);
-- role=<r> and the last-admin count: one partial index per defined role, on
-- the same expression the store's role condition uses.
CREATE INDEX users_role_admin  ON users (deleted, id) WHERE instr(roles, '"admin"') > 0;
CREATE INDEX users_role_editor ON users (deleted, id) WHERE instr(roles, '"editor"') > 0;
CREATE INDEX users_role_user   ON users (deleted, id) WHERE instr(roles, '"user"') > 0;

-- Record counts per resource and soft-delete state, kept by triggers, so that
-- the total of an unfiltered list is one row read instead of a scan.
CREATE TABLE row_counts (
    resource TEXT    NOT NULL,
    deleted  INTEGER NOT NULL,
    n        INTEGER NOT NULL,
    PRIMARY KEY (resource, deleted)
) STRICT, WITHOUT ROWID;

-- +goose StatementBegin
CREATE TRIGGER users_count_insert AFTER INSERT ON users BEGIN
    INSERT INTO row_counts (resource, deleted, n) VALUES ('users', new.deleted, 1)
        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER users_count_delete AFTER DELETE ON users BEGIN
    UPDATE row_counts SET n = n - 1 WHERE resource = 'users' AND deleted = old.deleted;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER users_count_update AFTER UPDATE OF deleted ON users WHEN old.deleted <> new.deleted BEGIN
    UPDATE row_counts SET n = n - 1 WHERE resource = 'users' AND deleted = old.deleted;
    INSERT INTO row_counts (resource, deleted, n) VALUES ('users', new.deleted, 1)
        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- q is a case-insensitive substring of name or email: a trigram index finds
-- the candidates of any query of three or more characters without a scan.
-- The index holds no copy of the text (contentless), only the trigrams, and
-- can delete by rowid.
CREATE VIRTUAL TABLE users_fts USING fts5(
    name, email, content = '', contentless_delete = 1, tokenize = 'trigram'
);

-- Triggers only note which users changed; the writer brings users_fts up to
-- date from this table once per transaction, just before it commits (see
-- sqlite/writer.go). Written row by row, FTS5 flushes its buffer to disk at
-- every statement, which doubled the cost of an insert.
CREATE TABLE users_fts_pending (id INTEGER PRIMARY KEY) STRICT;

-- +goose StatementBegin
CREATE TRIGGER users_fts_insert AFTER INSERT ON users BEGIN
    INSERT INTO users_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER users_fts_update AFTER UPDATE OF name, email ON users BEGIN
    INSERT INTO users_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER users_fts_delete AFTER DELETE ON users BEGIN
    INSERT INTO users_fts_pending (id) VALUES (old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE row_counts;
DROP TABLE users_fts_pending;
DROP TABLE users_fts;
DROP TABLE users;
