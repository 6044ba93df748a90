-- +goose Up
-- row_counts_add (00001) in PL/pgSQL instead of SQL. Every insert and
-- delete of a counted table calls it from its PL/pgSQL trigger, and a SQL
-- function called that way is parsed, analysed and planned again in every
-- transaction (PostgreSQL keeps a SQL function's plan only for the
-- transaction that made it), while PL/pgSQL keeps the plan of its INSERT
-- for the whole session. A POST is one transaction with one call, so it
-- paid a full parse and plan of an INSERT ... ON CONFLICT each time
-- (docs/performance.md, "Issue 15, POST and PATCH on PostgreSQL: the count
-- trigger's plan kept"). Same statement, same shards, same counts.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION row_counts_add(res text, del boolean, id bigint, delta integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO row_counts (resource, deleted, shard, n) VALUES (res, del, id % 16, delta)
    ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + delta;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION row_counts_add(res text, del boolean, id bigint, delta integer) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO row_counts (resource, deleted, shard, n) VALUES (res, del, id % 16, delta)
    ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + delta;
$$;
-- +goose StatementEnd
