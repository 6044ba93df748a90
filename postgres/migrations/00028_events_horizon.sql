-- +goose Up
-- Event ids in commit order without writers waiting for each other
-- (docs/events.md, "Order and resumption"). Migration 00025 made every
-- transaction that inserts an event hold an exclusive advisory lock from
-- its id to its commit: ids came in commit order, but event-bearing
-- commits happened one at a time and could not share a WAL flush.
--
-- Now a writer takes that lock SHARED before it takes its id: writers do
-- not wait for each other, and an id may commit after a greater one. What
-- readers rely on is a horizon: an id at or below which every event is
-- final (committed, or never will be). events_establish_horizon() reads
-- the last id taken, H, then takes the lock EXCLUSIVE, which it gets once
-- every transaction that held it shared has ended (each writer of an id
-- up to H took it before its id), and records H in the sequence
-- events_horizon. The relay runs it on its own, outside any transaction,
-- so the exclusive lock is released as soon as it is taken (new writers
-- that queue behind it wait for the commits in flight, not for the
-- relay); then it publishes, in a new snapshot, the events up to H in id
-- order. A stream that resumes from the outbox reads only up to the
-- recorded horizon, so it never passes an id that a later commit could
-- still fill in; the events after it reach the stream live, once the
-- relay has made them final and published them.
--
-- The horizon is a sequence, not a row: setval is visible at once to
-- every session, before the relay publishes, and costs no commit. After
-- a crash it may come back lower than it was, which is still true.
CREATE SEQUENCE events_horizon MINVALUE 0 START 0;

-- What is committed now is final: writers under 00025's function hold the
-- lock exclusively until they end, so once this transaction has it none is
-- in flight.
SELECT pg_advisory_xact_lock(hashtext('events.commit_order'));
SELECT setval('events_horizon', last_value) FROM events_commit_order WHERE is_called;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_in_commit_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtext('events.commit_order'));
    NEW.id := nextval('events_commit_order');
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION events_establish_horizon() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    h bigint;
BEGIN
    -- Sequences are read outside snapshots: the last id any writer took.
    SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO h FROM events_commit_order;
    -- Every writer of an id up to h holds the lock shared, or has ended.
    PERFORM pg_advisory_xact_lock(hashtext('events.commit_order'));
    -- Under the lock, so that two relays never move the horizon back.
    IF h > (SELECT last_value FROM events_horizon) THEN
        PERFORM setval('events_horizon', h);
    END IF;
    RETURN (SELECT last_value FROM events_horizon);
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION events_establish_horizon;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_in_commit_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('events.commit_order'));
    NEW.id := nextval('events_commit_order');
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
DROP SEQUENCE events_horizon;
