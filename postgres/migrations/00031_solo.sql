-- +goose Up
-- Solo: the record cache on PostgreSQL while one instance is provably the
-- only writer (postgres/solo.go has the protocol and its proof;
-- docs/architecture.md, "The record cache on PostgreSQL").
--
-- solo_holder is the instance id of the instance that serves from its
-- cache (0: none). A sequence, not a table, because its value is read
-- outside MVCC: a REPEATABLE READ transaction still sees the value as it is
-- now, and setval is not undone by a rollback.
CREATE SEQUENCE solo_holder MINVALUE 0 START 0;

-- solo_guard runs before every statement that writes a table the record
-- cache or the accounts depend on. A writer that is not the holder takes
-- the solo lock shared for the rest of its transaction: it waits while an
-- instance holds it exclusively (serves from its cache), which sees the
-- waiter and yields, and no instance can start serving until the writer's
-- transaction has ended. A holder found after the lock (its registration
-- connection was lost while its process may still serve until its lease
-- ends) is waited out: twice the lease. The holder's own writes, which its
-- cache sees, take the holder-writes lock instead, which an instance that
-- starts serving waits out first.
-- +goose StatementBegin
CREATE FUNCTION solo_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
                -- Nobody serves from a cache, and nobody can until this
                -- transaction ends. The holder id is this instance's own,
                -- left by a registration connection it lost.
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

CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON users FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON roles FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON oauth_clients FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON posts FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON products FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON reviews FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON orders FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON order_items FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON articles FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON comments FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON row_counts FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();

-- +goose Down
DROP TRIGGER solo_guard ON row_counts;
DROP TRIGGER solo_guard ON comments;
DROP TRIGGER solo_guard ON articles;
DROP TRIGGER solo_guard ON order_items;
DROP TRIGGER solo_guard ON orders;
DROP TRIGGER solo_guard ON reviews;
DROP TRIGGER solo_guard ON products;
DROP TRIGGER solo_guard ON posts;
DROP TRIGGER solo_guard ON oauth_clients;
DROP TRIGGER solo_guard ON api_keys;
DROP TRIGGER solo_guard ON roles;
DROP TRIGGER solo_guard ON users;
DROP FUNCTION solo_guard;
DROP SEQUENCE solo_holder;
