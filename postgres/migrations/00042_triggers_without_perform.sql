-- +goose Up
-- The solo guard (00031, 00040) and the trigger that orders event ids by
-- commit (00025, 00040) call the functions they run for their effect alone
-- (the advisory locks, set_config, setval, pg_sleep) in an assignment
-- instead of PERFORM (docs/performance.md, "pgwrite3"). PERFORM is a query:
-- PL/pgSQL runs it through SPI, an executor started and ended for each
-- call, about 4-6 microseconds of the backend; an assignment of an
-- expression without a table is evaluated by PL/pgSQL itself, 0.2-1.3
-- microseconds. A POST runs three of them (the guard's first run, two; the
-- event's insert, one), a PATCH likewise. The functions do what they did,
-- in the same order; a value of type void (the locks', pg_sleep's) is cast
-- to text to be assigned.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION solo_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    me bigint;
    h  bigint;
    v  text; -- the value of a call made for its effect alone
BEGIN
    IF current_setting('resourceapi.solo_passed', true) = 'on' THEN
        RETURN NULL;
    END IF;
    me := coalesce(nullif(current_setting('resourceapi.instance', true), '')::bigint, 0);
    IF me <> 0 THEN
        h := coalesce(pg_sequence_last_value('solo_holder'), 0);
        IF h = me AND current_setting('transaction_isolation') = 'read committed' THEN
            v := pg_advisory_xact_lock_shared(8317986260773765122)::text;
            IF pg_try_advisory_xact_lock_shared(8317986260773765121) THEN
                -- Nobody serves from a cache, and nobody can until this
                -- transaction ends. The holder id is this instance's own,
                -- left by a registration connection it lost.
                v := set_config('resourceapi.solo_passed', 'on', true);
                RETURN NULL;
            END IF;
            IF coalesce(pg_sequence_last_value('solo_holder'), 0) = me THEN
                v := set_config('resourceapi.solo_passed', 'on', true);
                RETURN NULL;
            END IF;
        END IF;
    END IF;
    v := pg_advisory_xact_lock_shared(8317986260773765121)::text;
    h := coalesce(pg_sequence_last_value('solo_holder'), 0);
    IF h <> 0 AND h <> me THEN
        v := pg_sleep(2 * 1.0)::text;
        IF coalesce(pg_sequence_last_value('solo_holder'), 0) = h THEN
            v := setval('solo_holder', 0)::text;
        END IF;
    END IF;
    v := set_config('resourceapi.solo_passed', 'on', true);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION events_in_commit_order() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    e bigint;
    f bigint;
    v text; -- the value of a call made for its effect alone
BEGIN
    e := coalesce(pg_sequence_last_value('events_epoch'), 0);
    LOOP
        v := pg_advisory_xact_lock_shared(hashtext('events.commit_order'), (e % 2)::int)::text;
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
