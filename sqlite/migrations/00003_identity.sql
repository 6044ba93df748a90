-- +goose Up
-- Permissions granted to a user directly, beyond those of their roles.
ALTER TABLE users ADD COLUMN permissions TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(permissions));

-- The roles and the permissions each grants. Authentication reads them on
-- every request (through the store's cache), so a change here takes effect at
-- once. "*" stands for any resource or any action.
CREATE TABLE roles (
    name        TEXT NOT NULL PRIMARY KEY,
    permissions TEXT NOT NULL CHECK (json_valid(permissions))
) STRICT, WITHOUT ROWID;

INSERT INTO roles (name, permissions) VALUES
    ('user',   '["users:read","posts:read","posts:write","articles:read","comments:read","comments:write","products:read","reviews:read","reviews:write","orders:read"]'),
    ('editor', '["users:read","posts:read","posts:write","articles:read","comments:read","comments:write","products:read","reviews:read","reviews:write","orders:read","articles:write","articles:delete","comments:delete","posts:delete","products:write"]'),
    ('admin',  '["*:*"]');

-- API keys: each acts as its user. Only the SHA-256 of the key is kept;
-- prefix (the key's first 12 characters) identifies it in listings.
CREATE TABLE api_keys (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       TEXT,
    key_hash   TEXT    NOT NULL UNIQUE,
    prefix     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX api_keys_user_id    ON api_keys (user_id, id);
CREATE INDEX api_keys_name       ON api_keys (name, id);
CREATE INDEX api_keys_created_at ON api_keys (created_at, id);
CREATE INDEX api_keys_updated_at ON api_keys (updated_at, id);

-- +goose StatementBegin
CREATE TRIGGER api_keys_count_insert AFTER INSERT ON api_keys BEGIN
    INSERT INTO row_counts (resource, deleted, n) VALUES ('api_keys', 0, 1)
        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER api_keys_count_delete AFTER DELETE ON api_keys BEGIN
    UPDATE row_counts SET n = n - 1 WHERE resource = 'api_keys' AND deleted = 0;
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE api_keys;
DROP TABLE roles;
DELETE FROM row_counts WHERE resource = 'api_keys';
ALTER TABLE users DROP COLUMN permissions;
