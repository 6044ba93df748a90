-- +goose Up
-- Webhooks (docs/events.md): the endpoints that receive events, and each
-- event to deliver to each endpoint with what came of it (the delivery log).
--
-- secret is kept as generated, not hashed: the service signs every delivery
-- with it (HMAC-SHA256), so it must stay usable. It is shown once, when the
-- endpoint is created or its secret rotated, and never returned again;
-- whoever reads this database file can read it (protect the file as the
-- secrets it holds). previous_secret signs beside it until previous_until
-- (a rotation's overlap).
CREATE TABLE webhooks (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    url             TEXT    NOT NULL,
    types           TEXT    NOT NULL,
    enabled         INTEGER NOT NULL,
    disabled_reason TEXT    NOT NULL DEFAULT '',
    failing_since   INTEGER,
    secret          TEXT    NOT NULL,
    previous_secret TEXT    NOT NULL DEFAULT '',
    previous_until  INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;

-- One row per event to deliver to one endpoint. record_key orders the
-- deliveries of one record to one endpoint; lease_owner and lease_until say
-- which instance is delivering it, until when (a dead instance's lease
-- expires and another takes the delivery).
CREATE TABLE webhook_deliveries (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id       INTEGER NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id         INTEGER NOT NULL,
    event_type       TEXT    NOT NULL,
    message_id       TEXT    NOT NULL,
    record_key       TEXT    NOT NULL,
    body             TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status      INTEGER NOT NULL DEFAULT 0,
    last_latency_ms  INTEGER NOT NULL DEFAULT 0,
    last_response    TEXT    NOT NULL DEFAULT '',
    last_attempt_at  INTEGER,
    first_attempt_at INTEGER,
    next_attempt_at  INTEGER NOT NULL,
    delivered_at     INTEGER,
    replay_of        INTEGER NOT NULL DEFAULT 0,
    lease_owner      TEXT    NOT NULL DEFAULT '',
    lease_until      INTEGER,
    created_at       INTEGER NOT NULL
) STRICT;

-- What the workers claim: pending deliveries, by record (the oldest of each
-- record goes first) and by when they are due.
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, record_key, id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id) WHERE state = 'pending';
-- The delivery log, newest first.
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, id);

-- The events not yet fanned out to the endpoints: hooked_at is set once
-- they are, in the transaction that stores their deliveries. Events before
-- webhooks existed have none to go to.
ALTER TABLE events ADD COLUMN hooked_at INTEGER;
UPDATE events SET hooked_at = created_at;
CREATE INDEX events_unhooked ON events (id) WHERE hooked_at IS NULL;

-- +goose Down
DROP INDEX events_unhooked;
ALTER TABLE events DROP COLUMN hooked_at;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
