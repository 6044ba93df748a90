-- +goose Up
-- Idempotency keys (docs/api.md): the response to a POST or PATCH sent with
-- an Idempotency-Key, kept per caller (the user the request acted as) for the
-- retention period, so that a retry gets it instead of writing again. A row
-- is inserted in the transaction of the write it protects; the primary key
-- decides between requests that race with one key, on any instance. Expired
-- rows are purged in small batches by the writes that insert keys.
CREATE TABLE idempotency_keys (
    caller      bigint      NOT NULL,
    idem_key    text        NOT NULL,
    fingerprint text        NOT NULL,
    response    bytea       NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (caller, idem_key)
);

CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
