-- +goose Up
-- The trigram indexes of the search tables (<table>_search_trgm, 00038)
-- keep a pending list of 1 MB instead of 64 kB (00027): an insert adds its
-- row's entries to the list, and the insert that fills it moves the whole
-- list into the index, key by key, decoding and compressing again each
-- trigram's posting list. With 64 kB that happened every 80 to 120 new
-- rows, and the rows a service writes share most of their trigrams, so
-- each move rewrote the same lists: about a quarter of a user's INSERT's
-- CPU in PostgreSQL; 1 MB moves them every 1,900 or so (docs/performance.md,
-- "pgpending"). A search reads the whole list, a millisecond or so more
-- when it is full. 00027 kept the list short because the planner prices
-- each pending page as a random read and, with more than a few, scanned a
-- whole search table instead of the index; the store now plans its
-- searches without sequential scans (postgres/pool.go, searchPlan), so the
-- plan no longer depends on the list. A list set by hand to another size
-- than 00027's is left as it is. Only the index's options change (a SHARE
-- UPDATE EXCLUSIVE lock, which writes and reads do not wait for); what
-- waits in the lists stays there.

-- +goose StatementBegin
DO $$
DECLARE
    i regclass;
BEGIN
    FOR i IN SELECT x.oid::regclass FROM pg_class x
        JOIN pg_index ix ON ix.indexrelid = x.oid
        JOIN pg_class s ON s.oid = ix.indrelid
        JOIN pg_class r ON r.relnamespace = s.relnamespace AND s.relname = r.relname || '_search'
        WHERE x.relnamespace = current_schema()::regnamespace AND x.relname = s.relname || '_trgm'
        AND x.reloptions @> ARRAY['gin_pending_list_limit=64']
        ORDER BY 1 LOOP
        EXECUTE format('ALTER INDEX %s SET (gin_pending_list_limit = 1024)', i);
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    i regclass;
BEGIN
    FOR i IN SELECT x.oid::regclass FROM pg_class x
        JOIN pg_index ix ON ix.indexrelid = x.oid
        JOIN pg_class s ON s.oid = ix.indrelid
        JOIN pg_class r ON r.relnamespace = s.relnamespace AND s.relname = r.relname || '_search'
        WHERE x.relnamespace = current_schema()::regnamespace AND x.relname = s.relname || '_trgm'
        AND x.reloptions @> ARRAY['gin_pending_list_limit=1024']
        ORDER BY 1 LOOP
        EXECUTE format('ALTER INDEX %s SET (gin_pending_list_limit = 64)', i);
    END LOOP;
END;
$$;
-- +goose StatementEnd
