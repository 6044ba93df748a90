-- +goose Up
-- row_counts and the search tables lose their solo_guard (00031, 00040):
-- only the triggers of guarded tables write them (00044's <table>_rows, and
-- row_counts_trigger, api_keys_count and the count functions generated for
-- tables without search), and a trigger runs inside the statement that
-- fired it, after that statement's own solo_guard passed: the guard of the
-- record's table already holds the solo lock shared (or proved the write is
-- the holder's own) for the rest of the transaction. The guard on the
-- derived tables could change nothing, yet each statement that wrote them
-- read its WHEN clause from its text and prepared it: a POST of a user
-- wrote users_search once and row_counts once (an INSERT ... ON CONFLICT
-- DO UPDATE, which fires the BEFORE INSERT and the BEFORE UPDATE statement
-- triggers), three WHEN clauses (docs/performance.md, "pgtrig"). An
-- instance still refuses to become the solo holder while another table
-- lacks the guard; row_counts and a search table whose record table is
-- guarded are exempt (postgres/solo.go). A write of these tables by hand is
-- outside the protocol, as a write that bypasses triggers is.

DROP TRIGGER solo_guard ON row_counts;

-- Every search table of a guarded table, generated resources' included.
-- +goose StatementBegin
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN SELECT s.oid::regclass FROM pg_class s
        JOIN pg_class r ON r.relnamespace = s.relnamespace AND s.relname = r.relname || '_search'
        WHERE s.relnamespace = current_schema()::regnamespace AND s.relkind = 'r'
        AND EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = r.oid AND g.tgname = 'solo_guard')
        AND EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = s.oid AND g.tgname = 'solo_guard')
        ORDER BY 1 LOOP
        EXECUTE format('DROP TRIGGER solo_guard ON %s', t);
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t regclass;
BEGIN
    FOR t IN SELECT s.oid::regclass FROM pg_class s
        JOIN pg_class r ON r.relnamespace = s.relnamespace AND s.relname = r.relname || '_search'
        WHERE s.relnamespace = current_schema()::regnamespace AND s.relkind = 'r'
        AND EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = r.oid AND g.tgname = 'solo_guard')
        AND NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = s.oid AND g.tgname = 'solo_guard')
        ORDER BY 1 LOOP
        EXECUTE format('CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s FOR EACH STATEMENT '
            'WHEN (current_setting(''resourceapi.solo_passed'', true) IS DISTINCT FROM ''on'') EXECUTE FUNCTION solo_guard()', t);
    END LOOP;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON row_counts FOR EACH STATEMENT
    WHEN (current_setting('resourceapi.solo_passed', true) IS DISTINCT FROM 'on') EXECUTE FUNCTION solo_guard();
