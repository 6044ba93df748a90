-- +goose Up
-- OAuth 2.0 clients: the table of the declared resource resourceapi.OAuthClients,
-- read and written by the generic store from the declaration. The secret is
-- kept only as its SHA-256 (public clients have none). client_id_key is the
-- lower-cased client_id under UNIQUE, as users.email_key; codes and refresh
-- tokens reference it.
CREATE TABLE oauth_clients (
    id            INTEGER PRIMARY KEY, -- assigned from sequences (00002)
    client_id     TEXT    NOT NULL,
    client_id_key TEXT    NOT NULL UNIQUE,
    name          TEXT    NOT NULL,
    secret_hash   TEXT,
    public        INTEGER NOT NULL DEFAULT 0 CHECK (public IN (0, 1)),
    grants        TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(grants)),
    redirect_uris TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(redirect_uris)),
    -- The service user the client acts as with client_credentials.
    user_id       INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at    INTEGER NOT NULL, -- Unix milliseconds, UTC
    updated_at    INTEGER NOT NULL
) STRICT;

CREATE INDEX oauth_clients_client_id  ON oauth_clients (client_id, id);
CREATE INDEX oauth_clients_name       ON oauth_clients (name, id);
CREATE INDEX oauth_clients_created_at ON oauth_clients (created_at, id);
CREATE INDEX oauth_clients_updated_at ON oauth_clients (updated_at, id);
-- Deleting a user finds its clients without a scan.
CREATE INDEX oauth_clients_user_id    ON oauth_clients (user_id);

-- +goose StatementBegin
CREATE TRIGGER oauth_clients_count_insert AFTER INSERT ON oauth_clients BEGIN
    INSERT INTO row_counts (resource, deleted, n) VALUES ('oauth_clients', 0, 1)
        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oauth_clients_count_delete AFTER DELETE ON oauth_clients BEGIN
    UPDATE row_counts SET n = n - 1 WHERE resource = 'oauth_clients' AND deleted = 0;
END;
-- +goose StatementEnd

-- q searches name: a contentless trigram index, brought up to date by the
-- writer from oauth_clients_fts_pending once per transaction, as users_fts.
CREATE VIRTUAL TABLE oauth_clients_fts USING fts5(
    name, content = '', contentless_delete = 1, tokenize = 'trigram'
);

CREATE TABLE oauth_clients_fts_pending (id INTEGER PRIMARY KEY) STRICT;

-- +goose StatementBegin
CREATE TRIGGER oauth_clients_fts_insert AFTER INSERT ON oauth_clients BEGIN
    INSERT INTO oauth_clients_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oauth_clients_fts_update AFTER UPDATE OF name ON oauth_clients BEGIN
    INSERT INTO oauth_clients_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oauth_clients_fts_delete AFTER DELETE ON oauth_clients BEGIN
    INSERT INTO oauth_clients_fts_pending (id) VALUES (old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- Authorization codes, by the SHA-256 of the code (the code itself is never
-- stored). used_at is set by the one exchange that wins; a used code is kept
-- until a day after it expired, so that its reuse is still recognised (and
-- revokes what it was exchanged for), then purged by the store.
CREATE TABLE oauth_codes (
    hash           TEXT    NOT NULL PRIMARY KEY,
    client_id      TEXT    NOT NULL REFERENCES oauth_clients (client_id_key) ON DELETE CASCADE,
    user_id        INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    redirect_uri   TEXT    NOT NULL,
    code_challenge TEXT    NOT NULL,
    scope          TEXT    NOT NULL,
    expires_at     INTEGER NOT NULL,
    used_at        INTEGER
) STRICT, WITHOUT ROWID;

CREATE INDEX oauth_codes_expires_at ON oauth_codes (expires_at);
CREATE INDEX oauth_codes_client_id  ON oauth_codes (client_id);
CREATE INDEX oauth_codes_user_id    ON oauth_codes (user_id);

-- A family is the chain of refresh tokens descending from one grant (each
-- use returns the next). Revocation is always of a whole family, so it is
-- recorded here, once; and every rotation updates its family's row, which
-- serialises a rotation and a revocation of the same family (on PostgreSQL a
-- revocation could otherwise miss the token a concurrent rotation inserts).
-- A family revoked by the reuse of an authorization code may be recorded
-- before any of its tokens exists, so that a token saved afterwards for that
-- code is refused. expires_at is the latest expiry of its tokens.
CREATE TABLE oauth_refresh_families (
    family     TEXT    NOT NULL PRIMARY KEY,
    client_id  TEXT    NOT NULL REFERENCES oauth_clients (client_id_key) ON DELETE CASCADE,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT, WITHOUT ROWID;

CREATE INDEX oauth_refresh_families_expires_at ON oauth_refresh_families (expires_at);
CREATE INDEX oauth_refresh_families_client_id  ON oauth_refresh_families (client_id);
CREATE INDEX oauth_refresh_families_user_id    ON oauth_refresh_families (user_id);

-- Refresh tokens, by the SHA-256 of the token. rotated_at is set by the one
-- use that wins; the token is kept until a day after it expired so that a
-- later reuse is recognised. They go with their family, so with their user
-- and client too.
CREATE TABLE oauth_refresh_tokens (
    hash       TEXT    NOT NULL PRIMARY KEY,
    family     TEXT    NOT NULL REFERENCES oauth_refresh_families (family) ON DELETE CASCADE,
    client_id  TEXT    NOT NULL,
    user_id    INTEGER NOT NULL,
    scope      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    rotated_at INTEGER
) STRICT, WITHOUT ROWID;

CREATE INDEX oauth_refresh_tokens_family     ON oauth_refresh_tokens (family);
CREATE INDEX oauth_refresh_tokens_expires_at ON oauth_refresh_tokens (expires_at);

-- The service's own settings (the generated JWT signing secret).
CREATE TABLE settings (
    name  TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE settings;
DROP TABLE oauth_refresh_tokens;
DROP TABLE oauth_refresh_families;
DROP TABLE oauth_codes;
DROP TABLE oauth_clients_fts_pending;
DROP TABLE oauth_clients_fts;
DROP TABLE oauth_clients;
DELETE FROM row_counts WHERE resource = 'oauth_clients';
