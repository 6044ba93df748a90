-- +goose Up
-- The relay's place in the outbox as a cursor, not a mark on each event
-- (docs/events.md, "How it works"). Every event up to the horizon
-- (migration 00028) is final, and the relays publish in id order one batch
-- at a time (their lock, events.publish): so what they have published is
-- every event up to an id, and one row says which. Before, each event was
-- written three times besides its insert and purge: its claim (FOR UPDATE,
-- a lock record), and its mark (UPDATE SET published_at: a new row version
-- with an entry in every index, as events_unpublished names published_at,
-- so never a HOT update), with an entry in events_unpublished at its
-- insert: about 5 WAL records and 600 bytes per event beside the insert's
-- 4 and 520. Now the relay moves this row once per batch, in the
-- transaction that claimed the batch. published_at stays, null, for the
-- versions before this one (see the rolling upgrade note in docs/events.md).
CREATE TABLE events_published (
    one     integer PRIMARY KEY CHECK (one = 1),
    through bigint  NOT NULL
);

-- No relay publishes while the cursor is placed.
SELECT pg_advisory_xact_lock(hashtext('events.publish'));

-- The cursor goes below the first event not published, and no higher than
-- the horizon: every event up to the horizon is final, so one committed
-- but not yet seen cannot hide below the cursor. The horizon is read
-- before the snapshot that looks for unpublished events (each statement of
-- a PL/pgSQL block takes its own), so every event up to it that committed
-- is in that snapshot. With no event left, the last id purged.
-- +goose StatementBegin
DO $$
DECLARE
    h bigint;
BEGIN
    h := (SELECT last_value FROM events_horizon);
    INSERT INTO events_published (one, through) SELECT 1, LEAST(h, COALESCE(
        (SELECT min(id) - 1 FROM events WHERE published_at IS NULL),
        (SELECT max(id) FROM events),
        (SELECT through FROM events_purged),
        0));
END;
$$;
-- +goose StatementEnd

DROP INDEX events_unpublished;

-- +goose Down
SELECT pg_advisory_xact_lock(hashtext('events.publish'));
UPDATE events SET published_at = created_at WHERE published_at IS NULL AND id <= (SELECT through FROM events_published);
CREATE INDEX events_unpublished ON events (id) WHERE published_at IS NULL;
DROP TABLE events_published;
