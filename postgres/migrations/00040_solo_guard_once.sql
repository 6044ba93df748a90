-- +goose Up
-- The solo guard (00031) once per transaction, and the sequences that
-- triggers read without a query (docs/performance.md, "pgpost").
--
-- A POST of a user ran solo_guard four times: before the INSERT into users,
-- and again before the statements that users' row triggers run (the search
-- copy's INSERT, the row count's INSERT ... ON CONFLICT DO UPDATE, which
-- fires the guard of INSERT and of UPDATE). Only the first can change
-- anything. Once a transaction has passed the guard it holds the solo lock
-- shared (the general path) until it ends, or it proved that it is the
-- holder's own write while the holder holds the lock exclusively: either
-- way no instance can become the holder, and solo_holder cannot change to
-- another id, before the transaction ends, so every later run of the guard
-- in it would take a lock it holds and read the value it read. The guard
-- now records that it passed in the transaction-local setting
-- resourceapi.solo_passed, and each solo_guard trigger has a WHEN clause
-- that skips the call (no PL/pgSQL at all) while it says 'on'. A savepoint
-- rolled back undoes the setting with the locks taken after it. (A session
-- that sets resourceapi.solo_passed itself skips the guard, as one that set
-- resourceapi.instance and resourceapi.solo_own could before: like
-- disabling the trigger, that is outside the protocol, solo.go.)
--
-- And the triggers read solo_holder and events_epoch with
-- pg_sequence_last_value, an expression PL/pgSQL evaluates by itself,
-- instead of SELECT last_value FROM ..., a query that starts an executor
-- and a scan of the sequence each time. pg_sequence_last_value is NULL
-- while the sequence was never set (is_called false); both start at 0 and
-- are only moved by setval(s, v) (is_called true), so coalesce(..., 0) is
-- the value the query read.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION solo_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    me bigint;
    h  bigint;
BEGIN
    IF current_setting('resourceapi.solo_passed', true) = 'on' THEN
        RETURN NULL;
    END IF;
    me := coalesce(nullif(current_setting('resourceapi.instance', true), '')::bigint, 0);
    IF me <> 0 THEN
        h := coalesce(pg_sequence_last_value('solo_holder'), 0);
        IF h = me AND current_setting('transaction_isolation') = 'read committed' THEN
            PERFORM pg_advisory_xact_lock_shared(8317986260773765122);
            IF pg_try_advisory_xact_lock_shared(8317986260773765121) THEN
                -- Nobody serves from a cache, and nobody can until this
                -- transaction ends. The holder id is this instance's own,
                -- left by a registration connection it lost.
                PERFORM set_config('resourceapi.solo_passed', 'on', true);
                RETURN NULL;
            END IF;
            IF coalesce(pg_sequence_last_value('solo_holder'), 0) = me THEN
                PERFORM set_config('resourceapi.solo_passed', 'on', true);
                RETURN NULL;
            END IF;
        END IF;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(8317986260773765121);
    h := coalesce(pg_sequence_last_value('solo_holder'), 0);
    IF h <> 0 AND h <> me THEN
        PERFORM pg_sleep(2 * 1.0);
        IF coalesce(pg_sequence_last_value('solo_holder'), 0) = h THEN
            PERFORM setval('solo_holder', 0);
        END IF;
    END IF;
    PERFORM set_config('resourceapi.solo_passed', 'on', true);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- Every solo_guard trigger, generated resources' included.
-- +goose StatementBegin
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN SELECT tgrelid::regclass FROM pg_trigger WHERE tgname = 'solo_guard' AND tgfoid = 'solo_guard'::regproc ORDER BY 1 LOOP
        EXECUTE format('DROP TRIGGER solo_guard ON %s', t);
        EXECUTE format('CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s FOR EACH STATEMENT '
            'WHEN (current_setting(''resourceapi.solo_passed'', true) IS DISTINCT FROM ''on'') EXECUTE FUNCTION solo_guard()', t);
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_in_commit_order() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    e bigint;
    f bigint;
BEGIN
    e := coalesce(pg_sequence_last_value('events_epoch'), 0);
    LOOP
        PERFORM pg_advisory_xact_lock_shared(hashtext('events.commit_order'), (e % 2)::int);
        f := coalesce(pg_sequence_last_value('events_epoch'), 0);
        EXIT WHEN f % 2 = e % 2;
        e := f;
    END LOOP;
    NEW.id := nextval('events_commit_order');
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose Down
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
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN SELECT tgrelid::regclass FROM pg_trigger WHERE tgname = 'solo_guard' AND tgfoid = 'solo_guard'::regproc ORDER BY 1 LOOP
        EXECUTE format('DROP TRIGGER solo_guard ON %s', t);
        EXECUTE format('CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s FOR EACH STATEMENT '
            'EXECUTE FUNCTION solo_guard()', t);
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION solo_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    me bigint := coalesce(nullif(current_setting('resourceapi.instance', true), '')::bigint, 0);
    h  bigint;
BEGIN
    IF me <> 0 THEN
        IF current_setting('resourceapi.solo_own', true) = 'on' THEN
            RETURN NULL;
        END IF;
        SELECT last_value INTO h FROM solo_holder;
        IF h = me AND current_setting('transaction_isolation') = 'read committed' THEN
            PERFORM pg_advisory_xact_lock_shared(8317986260773765122);
            IF pg_try_advisory_xact_lock_shared(8317986260773765121) THEN
                RETURN NULL;
            END IF;
            SELECT last_value INTO h FROM solo_holder;
            IF h = me THEN
                PERFORM set_config('resourceapi.solo_own', 'on', true);
                RETURN NULL;
            END IF;
        END IF;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(8317986260773765121);
    SELECT last_value INTO h FROM solo_holder;
    IF h <> 0 AND h <> me THEN
        PERFORM pg_sleep(2 * 1.0);
        IF (SELECT last_value FROM solo_holder) = h THEN
            PERFORM setval('solo_holder', 0);
        END IF;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
