-- +goose Up
-- The greatest id of the events the retention has deleted (docs/events.md):
-- a Server-Sent Events client that resumes after an event before it may have
-- missed events that are gone, and is told so. One row, moved by the purge
-- in its own transaction.
CREATE TABLE events_purged (
    one     integer PRIMARY KEY CHECK (one = 1),
    through bigint  NOT NULL
);
INSERT INTO events_purged (one, through) VALUES (1, 0);

-- +goose Down
DROP TABLE events_purged;
