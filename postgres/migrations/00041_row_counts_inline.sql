-- +goose Up
-- The count triggers write row_counts themselves instead of calling
-- row_counts_add (docs/performance.md, "pgpost"). A POST of a user ran
-- users_count, which ran PERFORM row_counts_add(...): a query of its own
-- (an executor started for one function call) and a second PL/pgSQL
-- function's setup, around the one INSERT ... ON CONFLICT that does the
-- work. The INSERT is now in each trigger function: same statement, same
-- shards (id % 16), same counts. row_counts_add stays for the count
-- functions that migrations generated for declared resources before this
-- one (the generator now writes the INSERT too, postgres/migrations.go).

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION users_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('users', OLD.deleted, OLD.id % 16, -1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n - 1;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('users', NEW.deleted, NEW.id % 16, 1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + 1;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION api_keys_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('api_keys', false, OLD.id % 16, -1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n - 1;
    ELSE
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('api_keys', false, NEW.id % 16, 1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + 1;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION oauth_clients_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('oauth_clients', false, OLD.id % 16, -1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n - 1;
    ELSE
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('oauth_clients', false, NEW.id % 16, 1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + 1;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION row_counts_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES (TG_TABLE_NAME, false, OLD.id % 16, -1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n - 1;
    ELSE
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES (TG_TABLE_NAME, false, NEW.id % 16, 1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + 1;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION row_counts_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM row_counts_add(TG_TABLE_NAME, false, OLD.id, -1);
    ELSE
        PERFORM row_counts_add(TG_TABLE_NAME, false, NEW.id, 1);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION oauth_clients_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM row_counts_add('oauth_clients', false, OLD.id, -1);
    ELSE
        PERFORM row_counts_add('oauth_clients', false, NEW.id, 1);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION api_keys_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM row_counts_add('api_keys', false, OLD.id, -1);
    ELSE
        PERFORM row_counts_add('api_keys', false, NEW.id, 1);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION users_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        PERFORM row_counts_add('users', OLD.deleted, OLD.id, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM row_counts_add('users', NEW.deleted, NEW.id, 1);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
