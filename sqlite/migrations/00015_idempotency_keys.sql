-- +goose Up
-- Idempotency keys (docs/api.md): the response to a POST or PATCH sent with
-- an Idempotency-Key, kept per caller (the user the request acted as) for the
-- retention period, so that a retry gets it instead of writing again. A row
-- is inserted in the transaction of the write it protects; the primary key
-- decides between requests that race with one key. Expired rows are purged
-- in small batches by the writes that insert keys.
CREATE TABLE idempotency_keys (
    caller      INTEGER NOT NULL,
    idem_key    TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    response    BLOB    NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (caller, idem_key)
) STRICT, WITHOUT ROWID;

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
