-- +goose Up
-- The relay's horizon without holding writers back (docs/events.md, "Order
-- and resumption"). Under 00028 the relay took the order lock exclusively
-- to wait for the commits in flight, and PostgreSQL queues every new shared
-- request behind a waiting exclusive one: each batch of the relay held all
-- new writers back for one commit's time.
--
-- Now the lock has two keys, and an epoch (the sequence events_epoch)
-- says which one writers take: a writer reads the epoch, takes the key of
-- its parity shared, and reads the epoch again, until both reads agree
-- (it may then hold both keys; it takes its id after). The relay, one at a
-- time (a lock of its own), reads the last id taken H, moves the epoch on,
-- and takes the key of the old parity exclusively: the writers that came
-- before the move hold that key, and new ones take the other, so the relay
-- waits for the commits in flight while new writers go on. A writer of an
-- id up to H checked, after its lock, an epoch of the old parity, or one
-- that an earlier relay moved on after it, and that relay waited for it
-- (or, if it was interrupted, the next one does, instead of moving the
-- epoch: events_epoch_waited says whether the last move's wait finished).
CREATE SEQUENCE events_epoch MINVALUE 0 START 0;
-- The last epoch whose relay finished waiting for the parity before it.
CREATE SEQUENCE events_epoch_waited MINVALUE 0 START 0;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_in_commit_order() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    e bigint;
    f bigint;
BEGIN
    SELECT last_value INTO e FROM events_epoch;
    LOOP
        PERFORM pg_advisory_xact_lock_shared(hashtext('events.commit_order'), (e % 2)::int);
        SELECT last_value INTO f FROM events_epoch;
        EXIT WHEN f % 2 = e % 2;
        e := f;
    END LOOP;
    NEW.id := nextval('events_commit_order');
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_establish_horizon() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    h bigint;
    e bigint;
BEGIN
    -- One relay at a time moves the epoch and waits.
    PERFORM pg_advisory_xact_lock(hashtext('events.horizon'));
    -- Sequences are read outside snapshots: the last id any writer took.
    SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO h FROM events_commit_order;
    IF h <= (SELECT last_value FROM events_horizon) THEN
        RETURN (SELECT last_value FROM events_horizon); -- nothing new
    END IF;
    SELECT last_value INTO e FROM events_epoch;
    IF (SELECT last_value FROM events_epoch_waited) < e THEN
        -- The relay that moved the epoch to e was interrupted while it
        -- waited (the move is not undone): wait for the writers of the old
        -- parity in its place, and move nothing this time (the key stays
        -- held until this statement ends, and the next epoch's writers
        -- would take it). NULL: call again.
        PERFORM pg_advisory_xact_lock(hashtext('events.commit_order'), ((e + 1) % 2)::int);
        PERFORM setval('events_epoch_waited', e);
        RETURN NULL;
    END IF;
    PERFORM setval('events_epoch', e + 1);
    -- Every writer of an id up to h holds the key of e's parity, or has ended.
    PERFORM pg_advisory_xact_lock(hashtext('events.commit_order'), (e % 2)::int);
    -- Writers under 00028's function, until they end, take the one-key lock.
    PERFORM pg_advisory_xact_lock(hashtext('events.commit_order'));
    PERFORM setval('events_epoch_waited', e + 1);
    PERFORM setval('events_horizon', h);
    RETURN h;
END;
$$;
-- +goose StatementEnd

-- +goose Down
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
CREATE OR REPLACE FUNCTION events_establish_horizon() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    h bigint;
BEGIN
    SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO h FROM events_commit_order;
    PERFORM pg_advisory_xact_lock(hashtext('events.commit_order'));
    IF h > (SELECT last_value FROM events_horizon) THEN
        PERFORM setval('events_horizon', h);
    END IF;
    RETURN (SELECT last_value FROM events_horizon);
END;
$$;
-- +goose StatementEnd
DROP SEQUENCE events_epoch, events_epoch_waited;
