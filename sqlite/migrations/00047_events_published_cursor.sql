-- +goose Up
-- The relay's place in the outbox as a cursor, not a mark on each event
-- (docs/events.md, "How it works"). One process relays, in id order, and
-- SQLite commits one write transaction at a time, so what it has published
-- is every event up to an id, and one row says which. Before, its marks
-- (once a second) set published_at on every event published since the last
-- one, each row rewritten and its entry in events_unpublished deleted; now
-- they move this row. published_at stays, null, for the versions before
-- this one.
CREATE TABLE events_published (
    one     INTEGER PRIMARY KEY CHECK (one = 1),
    through INTEGER NOT NULL
) STRICT;
INSERT INTO events_published (one, through) SELECT 1, COALESCE(
    (SELECT min(id) - 1 FROM events WHERE published_at IS NULL),
    (SELECT max(id) FROM events),
    (SELECT through FROM events_purged),
    0);
DROP INDEX events_unpublished;

-- +goose Down
UPDATE events SET published_at = created_at WHERE published_at IS NULL AND id <= (SELECT through FROM events_published);
CREATE INDEX events_unpublished ON events (id) WHERE published_at IS NULL;
DROP TABLE events_published;
