-- +goose Up
-- The outbox of events (docs/events.md). A write whose resource declares an
-- event for it inserts one row here in its own transaction, with the record
-- as committed (payload: JSON, as the API shows it), so that a committed
-- write always has its event and a failed one never does. The relay
-- publishes the rows whose published_at is null and then sets it; published
-- rows are deleted after a retention.
--
-- AUTOINCREMENT, unlike the resources' tables: an event id is never used
-- twice, even once the purge has emptied the table, because subscribers'
-- hubs deliver each id once and would drop a reused one.
CREATE TABLE events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT    NOT NULL,
    resource     TEXT    NOT NULL,
    record_id    INTEGER NOT NULL,
    payload      TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    published_at INTEGER
) STRICT;

-- What the relay reads: the unpublished events, in id order. Published ones
-- leave the index, so it stays as small as the backlog.
CREATE INDEX events_unpublished ON events (id) WHERE published_at IS NULL;

-- +goose Down
DROP TABLE events;
