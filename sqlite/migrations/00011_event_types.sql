-- +goose Up
-- Every resource publishes events (docs/events.md): name is the event's type,
-- "<resource>.created", ".updated" or ".deleted"; alias the name the
-- resource declares for it (Resource.Events: "userCreated"), which GraphQL's
-- first subscriptions listen to; actor the user whose write it was (0: the
-- service itself). Events recorded before keep reaching those subscriptions.
ALTER TABLE events ADD COLUMN alias TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN actor INTEGER NOT NULL DEFAULT 0;
UPDATE events SET alias = name, name = resource || '.created' WHERE name IN ('userCreated', 'postCreated');

-- +goose Down
UPDATE events SET name = alias WHERE alias <> '';
ALTER TABLE events DROP COLUMN actor;
ALTER TABLE events DROP COLUMN alias;
