-- +goose Up
-- A TRUNCATE of a counted table empties its count too. The count triggers
-- (row triggers: <table>_rows, <table>_count, api_keys_count,
-- row_counts_trigger) never fire on a TRUNCATE, which removes every row
-- without a row trigger, so the rows of row_counts kept counting records
-- that were gone: after TRUNCATE users CASCADE, list totals went on
-- counting every user (the service never truncates; an operator may).
-- row_counts_truncated deletes the resource's rows of row_counts; every
-- table of the schema that a count trigger counts gets a statement trigger
-- after TRUNCATE that calls it with the resource named in its count
-- statements (the table's name where they use TG_TABLE_NAME): the tables
-- of this repository and those that migrations generated for resources
-- declared outside it. The generator writes the same trigger for a new
-- resource (postgres.schema, countsTruncate).
-- +goose StatementBegin
CREATE FUNCTION row_counts_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM row_counts WHERE resource = TG_ARGV[0];
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
-- +goose StatementBegin
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT c.relname,
            coalesce(min(substring(p.prosrc FROM 'INSERT INTO row_counts \(resource, deleted, shard, n\) VALUES \(''([^'']+)''')), c.relname) AS resource
        FROM pg_trigger g
        JOIN pg_class c ON c.oid = g.tgrelid
        JOIN pg_proc p ON p.oid = g.tgfoid
        WHERE c.relnamespace = current_schema()::regnamespace AND NOT g.tgisinternal
        AND (p.prosrc LIKE '%INSERT INTO row_counts%' OR p.prosrc LIKE '%row_counts_add(%')
        GROUP BY c.relname ORDER BY c.relname LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION row_counts_truncated(%L)',
            t.relname || '_counts_truncate', t.relname, t.resource);
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT c.relname, g.tgname FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
        WHERE c.relnamespace = current_schema()::regnamespace AND g.tgfoid = 'row_counts_truncated'::regproc LOOP
        EXECUTE format('DROP TRIGGER %I ON %I', t.tgname, t.relname);
    END LOOP;
END;
$$;
-- +goose StatementEnd
DROP FUNCTION row_counts_truncated();
