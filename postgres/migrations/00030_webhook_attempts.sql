-- +goose Up
-- Every attempt of a webhook delivery (the delivery log shows them all:
-- when, the status, the latency, the start of the response), not only the
-- last one that webhook_deliveries keeps. Bounded: a delivery's attempts
-- stop at its retry period (DefaultBackoff: about 30 in 24 h), and they go
-- with their delivery (its purge, its endpoint's deletion).
CREATE TABLE webhook_attempts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id  bigint  NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempted_at timestamptz NOT NULL,
    status       integer NOT NULL,
    latency_ms   integer NOT NULL,
    response     text    NOT NULL,
    state        text    NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);

-- +goose Down
DROP TABLE webhook_attempts;
