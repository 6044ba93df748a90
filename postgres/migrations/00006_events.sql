-- +goose Up
-- The outbox of events (docs/events.md). A write whose resource declares an
-- event for it inserts one row here in its own transaction, with the record
-- as committed (payload: JSON, as the API shows it), so that a committed
-- write always has its event and a failed one never does. Relays on every
-- instance claim unpublished rows with FOR UPDATE SKIP LOCKED, publish them
-- and set published_at in the same transaction; published rows are deleted
-- after a retention. Identity values are never reused, so an event id stays
-- unique even once the purge has emptied the table.
CREATE TABLE events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text        NOT NULL,
    resource     text        NOT NULL,
    record_id    bigint      NOT NULL,
    payload      jsonb       NOT NULL,
    created_at   timestamptz NOT NULL,
    published_at timestamptz
);

-- What relays claim: the unpublished events, in id order. Published ones
-- leave the index, so it stays as small as the backlog.
CREATE INDEX events_unpublished ON events (id) WHERE published_at IS NULL;

-- +goose Down
DROP TABLE events;
