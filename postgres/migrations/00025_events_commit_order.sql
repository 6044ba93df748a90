-- +goose Up
-- Event ids in commit order (docs/events.md, "Order and resumption"). An
-- identity value is taken when a transaction inserts its row, and concurrent
-- transactions commit in any order: a reader could see id 8 committed while
-- id 7 was still in flight, and a Server-Sent Events client that resumed
-- after 8 would never hear of 7. So every insert into events first takes a
-- transaction-scoped advisory lock, and only then its id, from a sequence
-- of its own: the lock is held until the transaction ends, so the next
-- transaction takes its ids after this one has committed (or rolled back),
-- and no event can ever commit with an id below one already visible.
--
-- The store inserts a write's events last, right before its commit, so the
-- lock is held for the commit alone; the deferred triggers that run then
-- (identity_changed, 00007) take their row lock after it, in the same order
-- in every transaction, so no two writers wait for each other in a cycle.
-- The trigger enforces it for every writer: an older version of the
-- service during a rolling upgrade, a command, a hand-written INSERT.
--
-- The identity column still computes a value that the trigger replaces;
-- the new sequence starts after every id the identity gave.
CREATE SEQUENCE events_commit_order;
SELECT setval('events_commit_order', m) FROM (SELECT GREATEST(
    (SELECT COALESCE(max(id), 0) FROM events),
    COALESCE(pg_sequence_last_value(pg_get_serial_sequence('events', 'id')::regclass), 0)) AS m) last WHERE m > 0;

-- +goose StatementBegin
CREATE FUNCTION events_in_commit_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('events.commit_order'));
    NEW.id := nextval('events_commit_order');
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER events_commit_order BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_in_commit_order();

-- +goose Down
DROP TRIGGER events_commit_order ON events;
DROP FUNCTION events_in_commit_order;
SELECT setval(pg_get_serial_sequence('events', 'id'), m) FROM (SELECT GREATEST(
    (SELECT COALESCE(max(id), 0) FROM events),
    COALESCE(pg_sequence_last_value('events_commit_order'), 0)) AS m) last WHERE m > 0;
DROP SEQUENCE events_commit_order;
