-- +goose Up
-- Webhooks (docs/events.md): the endpoints that receive events, and each
-- event to deliver to each endpoint with what came of it (the delivery log).
--
-- secret is kept as generated, not hashed: the service signs every delivery
-- with it (HMAC-SHA256), so it must stay usable. It is shown once, when the
-- endpoint is created or its secret rotated, and never returned again;
-- whoever can read this table can read it (grant it as the secrets it holds).
-- previous_secret signs beside it until previous_until
-- (a rotation's overlap).
CREATE TABLE webhooks (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url             text    NOT NULL,
    types           text    NOT NULL,
    enabled         boolean NOT NULL,
    disabled_reason text    NOT NULL DEFAULT '',
    failing_since timestamptz,
    secret          text    NOT NULL,
    previous_secret text    NOT NULL DEFAULT '',
    previous_until timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

-- One row per event to deliver to one endpoint. record_key orders the
-- deliveries of one record to one endpoint; lease_owner and lease_until say
-- which instance is delivering it, until when (a dead instance's lease
-- expires and another takes the delivery).
CREATE TABLE webhook_deliveries (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id       bigint  NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id         bigint  NOT NULL,
    event_type       text    NOT NULL,
    message_id       text    NOT NULL,
    record_key       text    NOT NULL,
    body             text    NOT NULL,
    state            text    NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    last_status      integer NOT NULL DEFAULT 0,
    last_latency_ms  integer NOT NULL DEFAULT 0,
    last_response    text    NOT NULL DEFAULT '',
    last_attempt_at timestamptz,
    first_attempt_at timestamptz,
    next_attempt_at timestamptz NOT NULL,
    delivered_at timestamptz,
    replay_of        bigint  NOT NULL DEFAULT 0,
    lease_owner      text    NOT NULL DEFAULT '',
    lease_until timestamptz,
    created_at timestamptz NOT NULL
);

-- What the workers claim: pending deliveries, by record (the oldest of each
-- record goes first) and by when they are due.
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, record_key, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id) WHERE state = 'pending';
-- The delivery log, newest first.
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, id);

-- The events not yet fanned out to the endpoints: hooked_at is set once
-- they are, in the transaction that stores their deliveries. Events before
-- webhooks existed have none to go to.
ALTER TABLE events ADD COLUMN hooked_at timestamptz;
UPDATE events SET hooked_at = created_at;
CREATE INDEX events_unhooked ON events (id) WHERE hooked_at IS NULL;

-- +goose Down
DROP INDEX events_unhooked;
ALTER TABLE events DROP COLUMN hooked_at;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
