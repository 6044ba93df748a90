-- +goose Up
-- One row trigger per searchable table keeps both what follows each record:
-- its count in row_counts (00005, 00041) and its copies in the search table
-- (00038, 00039). Before, an insert or a delete fired two PL/pgSQL
-- triggers, <table>_count (or row_counts_trigger) and <table>_search, each
-- a function call with its own setup, and an update of users' soft-delete
-- column two (each with a WHEN read from its text for the statement); now
-- <table>_rows does the same statements in one call (docs/performance.md,
-- "pgtrig"): after an insert or a delete, after an update of the searchable
-- or soft-delete columns that changes one of them (the count moves only
-- when the soft-delete state does), and after a truncate (the copies go).
-- Same statements, same shards, same counts. The generator writes the same
-- for a new searchable resource (postgres/migrations.go, schema.Search).
-- The drops say IF EXISTS so that a schema rebuilt by hand to an earlier
-- state (the tests of older migrations do) without some of them migrates.

-- users
DROP TRIGGER IF EXISTS users_search_insert ON users;
DROP TRIGGER IF EXISTS users_search_update ON users;
DROP TRIGGER IF EXISTS users_search_delete ON users;
DROP TRIGGER IF EXISTS users_search_truncate ON users;
DROP TRIGGER IF EXISTS users_count_insert ON users;
DROP TRIGGER IF EXISTS users_count_update ON users;
DROP FUNCTION IF EXISTS users_count();
DROP FUNCTION IF EXISTS users_search();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION users_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('users', NEW.deleted, NEW.id % 16, 1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + 1;
        INSERT INTO users_search (id, deleted, name_lower, email_lower)
            VALUES (NEW.id, NEW.deleted, lower(NEW.name), lower(NEW.email));
    ELSIF TG_OP = 'UPDATE' THEN
        IF OLD.deleted IS DISTINCT FROM NEW.deleted THEN
            INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('users', OLD.deleted, OLD.id % 16, -1)
            ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n - 1;
            INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('users', NEW.deleted, NEW.id % 16, 1)
            ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + 1;
        END IF;
        UPDATE users_search SET deleted = NEW.deleted, name_lower = lower(NEW.name), email_lower = lower(NEW.email) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('users', OLD.deleted, OLD.id % 16, -1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n - 1;
        DELETE FROM users_search WHERE id = OLD.id;
    ELSE
        TRUNCATE users_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER users_rows AFTER INSERT OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION users_rows();
CREATE TRIGGER users_rows_truncate AFTER TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION users_rows();
CREATE TRIGGER users_rows_update AFTER UPDATE OF name, email, deleted ON users
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.email IS DISTINCT FROM NEW.email OR OLD.deleted IS DISTINCT FROM NEW.deleted)
    EXECUTE FUNCTION users_rows();

-- posts
DROP TRIGGER IF EXISTS posts_search_insert ON posts;
DROP TRIGGER IF EXISTS posts_search_update ON posts;
DROP TRIGGER IF EXISTS posts_search_delete ON posts;
DROP TRIGGER IF EXISTS posts_search_truncate ON posts;
DROP TRIGGER IF EXISTS posts_count ON posts;
DROP FUNCTION IF EXISTS posts_search();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION posts_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('posts', false, NEW.id % 16, 1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + 1;
        INSERT INTO posts_search (id, title_lower, content_lower)
            VALUES (NEW.id, lower(NEW.title), lower(NEW.content));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE posts_search SET title_lower = lower(NEW.title), content_lower = lower(NEW.content) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('posts', false, OLD.id % 16, -1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n - 1;
        DELETE FROM posts_search WHERE id = OLD.id;
    ELSE
        TRUNCATE posts_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER posts_rows AFTER INSERT OR DELETE ON posts
    FOR EACH ROW EXECUTE FUNCTION posts_rows();
CREATE TRIGGER posts_rows_truncate AFTER TRUNCATE ON posts
    FOR EACH STATEMENT EXECUTE FUNCTION posts_rows();
CREATE TRIGGER posts_rows_update AFTER UPDATE OF title, content ON posts
    FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.content IS DISTINCT FROM NEW.content)
    EXECUTE FUNCTION posts_rows();

-- products
DROP TRIGGER IF EXISTS products_search_insert ON products;
DROP TRIGGER IF EXISTS products_search_update ON products;
DROP TRIGGER IF EXISTS products_search_delete ON products;
DROP TRIGGER IF EXISTS products_search_truncate ON products;
DROP TRIGGER IF EXISTS products_count ON products;
DROP FUNCTION IF EXISTS products_search();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION products_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('products', false, NEW.id % 16, 1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + 1;
        INSERT INTO products_search (id, name_lower, description_lower)
            VALUES (NEW.id, lower(NEW.name), lower(NEW.description));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE products_search SET name_lower = lower(NEW.name), description_lower = lower(NEW.description) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('products', false, OLD.id % 16, -1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n - 1;
        DELETE FROM products_search WHERE id = OLD.id;
    ELSE
        TRUNCATE products_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER products_rows AFTER INSERT OR DELETE ON products
    FOR EACH ROW EXECUTE FUNCTION products_rows();
CREATE TRIGGER products_rows_truncate AFTER TRUNCATE ON products
    FOR EACH STATEMENT EXECUTE FUNCTION products_rows();
CREATE TRIGGER products_rows_update AFTER UPDATE OF name, description ON products
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.description IS DISTINCT FROM NEW.description)
    EXECUTE FUNCTION products_rows();

-- reviews
DROP TRIGGER IF EXISTS reviews_search_insert ON reviews;
DROP TRIGGER IF EXISTS reviews_search_update ON reviews;
DROP TRIGGER IF EXISTS reviews_search_delete ON reviews;
DROP TRIGGER IF EXISTS reviews_search_truncate ON reviews;
DROP TRIGGER IF EXISTS reviews_count ON reviews;
DROP FUNCTION IF EXISTS reviews_search();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION reviews_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('reviews', false, NEW.id % 16, 1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + 1;
        INSERT INTO reviews_search (id, comment_lower)
            VALUES (NEW.id, lower(NEW.comment));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE reviews_search SET comment_lower = lower(NEW.comment) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('reviews', false, OLD.id % 16, -1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n - 1;
        DELETE FROM reviews_search WHERE id = OLD.id;
    ELSE
        TRUNCATE reviews_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER reviews_rows AFTER INSERT OR DELETE ON reviews
    FOR EACH ROW EXECUTE FUNCTION reviews_rows();
CREATE TRIGGER reviews_rows_truncate AFTER TRUNCATE ON reviews
    FOR EACH STATEMENT EXECUTE FUNCTION reviews_rows();
CREATE TRIGGER reviews_rows_update AFTER UPDATE OF comment ON reviews
    FOR EACH ROW WHEN (OLD.comment IS DISTINCT FROM NEW.comment)
    EXECUTE FUNCTION reviews_rows();

-- articles
DROP TRIGGER IF EXISTS articles_search_insert ON articles;
DROP TRIGGER IF EXISTS articles_search_update ON articles;
DROP TRIGGER IF EXISTS articles_search_delete ON articles;
DROP TRIGGER IF EXISTS articles_search_truncate ON articles;
DROP TRIGGER IF EXISTS articles_count ON articles;
DROP FUNCTION IF EXISTS articles_search();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION articles_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('articles', false, NEW.id % 16, 1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + 1;
        INSERT INTO articles_search (id, title_lower, body_lower)
            VALUES (NEW.id, lower(NEW.title), lower(NEW.body));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE articles_search SET title_lower = lower(NEW.title), body_lower = lower(NEW.body) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('articles', false, OLD.id % 16, -1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n - 1;
        DELETE FROM articles_search WHERE id = OLD.id;
    ELSE
        TRUNCATE articles_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER articles_rows AFTER INSERT OR DELETE ON articles
    FOR EACH ROW EXECUTE FUNCTION articles_rows();
CREATE TRIGGER articles_rows_truncate AFTER TRUNCATE ON articles
    FOR EACH STATEMENT EXECUTE FUNCTION articles_rows();
CREATE TRIGGER articles_rows_update AFTER UPDATE OF title, body ON articles
    FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.body IS DISTINCT FROM NEW.body)
    EXECUTE FUNCTION articles_rows();

-- comments
DROP TRIGGER IF EXISTS comments_search_insert ON comments;
DROP TRIGGER IF EXISTS comments_search_update ON comments;
DROP TRIGGER IF EXISTS comments_search_delete ON comments;
DROP TRIGGER IF EXISTS comments_search_truncate ON comments;
DROP TRIGGER IF EXISTS comments_count ON comments;
DROP FUNCTION IF EXISTS comments_search();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION comments_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('comments', false, NEW.id % 16, 1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + 1;
        INSERT INTO comments_search (id, body_lower)
            VALUES (NEW.id, lower(NEW.body));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE comments_search SET body_lower = lower(NEW.body) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('comments', false, OLD.id % 16, -1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n - 1;
        DELETE FROM comments_search WHERE id = OLD.id;
    ELSE
        TRUNCATE comments_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER comments_rows AFTER INSERT OR DELETE ON comments
    FOR EACH ROW EXECUTE FUNCTION comments_rows();
CREATE TRIGGER comments_rows_truncate AFTER TRUNCATE ON comments
    FOR EACH STATEMENT EXECUTE FUNCTION comments_rows();
CREATE TRIGGER comments_rows_update AFTER UPDATE OF body ON comments
    FOR EACH ROW WHEN (OLD.body IS DISTINCT FROM NEW.body)
    EXECUTE FUNCTION comments_rows();

-- oauth_clients
DROP TRIGGER IF EXISTS oauth_clients_search_insert ON oauth_clients;
DROP TRIGGER IF EXISTS oauth_clients_search_update ON oauth_clients;
DROP TRIGGER IF EXISTS oauth_clients_search_delete ON oauth_clients;
DROP TRIGGER IF EXISTS oauth_clients_search_truncate ON oauth_clients;
DROP TRIGGER IF EXISTS oauth_clients_count ON oauth_clients;
DROP FUNCTION IF EXISTS oauth_clients_count();
DROP FUNCTION IF EXISTS oauth_clients_search();
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION oauth_clients_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('oauth_clients', false, NEW.id % 16, 1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n + 1;
        INSERT INTO oauth_clients_search (id, name_lower)
            VALUES (NEW.id, lower(NEW.name));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE oauth_clients_search SET name_lower = lower(NEW.name) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO row_counts (resource, deleted, shard, n) VALUES ('oauth_clients', false, OLD.id % 16, -1)
        ON CONFLICT (resource, deleted, shard) DO UPDATE SET n = row_counts.n - 1;
        DELETE FROM oauth_clients_search WHERE id = OLD.id;
    ELSE
        TRUNCATE oauth_clients_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER oauth_clients_rows AFTER INSERT OR DELETE ON oauth_clients
    FOR EACH ROW EXECUTE FUNCTION oauth_clients_rows();
CREATE TRIGGER oauth_clients_rows_truncate AFTER TRUNCATE ON oauth_clients
    FOR EACH STATEMENT EXECUTE FUNCTION oauth_clients_rows();
CREATE TRIGGER oauth_clients_rows_update AFTER UPDATE OF name ON oauth_clients
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)
    EXECUTE FUNCTION oauth_clients_rows();

-- +goose Down
-- oauth_clients
DROP TRIGGER oauth_clients_rows ON oauth_clients;
DROP TRIGGER oauth_clients_rows_truncate ON oauth_clients;
DROP TRIGGER oauth_clients_rows_update ON oauth_clients;
DROP FUNCTION oauth_clients_rows();
-- +goose StatementBegin
CREATE FUNCTION oauth_clients_count() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER oauth_clients_count AFTER INSERT OR DELETE ON oauth_clients FOR EACH ROW EXECUTE FUNCTION oauth_clients_count();
-- +goose StatementBegin
CREATE FUNCTION oauth_clients_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO oauth_clients_search (id, name_lower)
            VALUES (NEW.id, lower(NEW.name));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE oauth_clients_search SET name_lower = lower(NEW.name) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM oauth_clients_search WHERE id = OLD.id;
    ELSE
        TRUNCATE oauth_clients_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER oauth_clients_search_insert AFTER INSERT ON oauth_clients
    FOR EACH ROW EXECUTE FUNCTION oauth_clients_search();
CREATE TRIGGER oauth_clients_search_update AFTER UPDATE OF name ON oauth_clients
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)
    EXECUTE FUNCTION oauth_clients_search();
CREATE TRIGGER oauth_clients_search_delete AFTER DELETE ON oauth_clients
    FOR EACH ROW EXECUTE FUNCTION oauth_clients_search();
CREATE TRIGGER oauth_clients_search_truncate AFTER TRUNCATE ON oauth_clients
    FOR EACH STATEMENT EXECUTE FUNCTION oauth_clients_search();

-- comments
DROP TRIGGER comments_rows ON comments;
DROP TRIGGER comments_rows_truncate ON comments;
DROP TRIGGER comments_rows_update ON comments;
DROP FUNCTION comments_rows();
CREATE TRIGGER comments_count AFTER INSERT OR DELETE ON comments FOR EACH ROW EXECUTE FUNCTION row_counts_trigger();
-- +goose StatementBegin
CREATE FUNCTION comments_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO comments_search (id, body_lower)
            VALUES (NEW.id, lower(NEW.body));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE comments_search SET body_lower = lower(NEW.body) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM comments_search WHERE id = OLD.id;
    ELSE
        TRUNCATE comments_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER comments_search_insert AFTER INSERT ON comments
    FOR EACH ROW EXECUTE FUNCTION comments_search();
CREATE TRIGGER comments_search_update AFTER UPDATE OF body ON comments
    FOR EACH ROW WHEN (OLD.body IS DISTINCT FROM NEW.body)
    EXECUTE FUNCTION comments_search();
CREATE TRIGGER comments_search_delete AFTER DELETE ON comments
    FOR EACH ROW EXECUTE FUNCTION comments_search();
CREATE TRIGGER comments_search_truncate AFTER TRUNCATE ON comments
    FOR EACH STATEMENT EXECUTE FUNCTION comments_search();

-- articles
DROP TRIGGER articles_rows ON articles;
DROP TRIGGER articles_rows_truncate ON articles;
DROP TRIGGER articles_rows_update ON articles;
DROP FUNCTION articles_rows();
CREATE TRIGGER articles_count AFTER INSERT OR DELETE ON articles FOR EACH ROW EXECUTE FUNCTION row_counts_trigger();
-- +goose StatementBegin
CREATE FUNCTION articles_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO articles_search (id, title_lower, body_lower)
            VALUES (NEW.id, lower(NEW.title), lower(NEW.body));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE articles_search SET title_lower = lower(NEW.title), body_lower = lower(NEW.body) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM articles_search WHERE id = OLD.id;
    ELSE
        TRUNCATE articles_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER articles_search_insert AFTER INSERT ON articles
    FOR EACH ROW EXECUTE FUNCTION articles_search();
CREATE TRIGGER articles_search_update AFTER UPDATE OF title, body ON articles
    FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.body IS DISTINCT FROM NEW.body)
    EXECUTE FUNCTION articles_search();
CREATE TRIGGER articles_search_delete AFTER DELETE ON articles
    FOR EACH ROW EXECUTE FUNCTION articles_search();
CREATE TRIGGER articles_search_truncate AFTER TRUNCATE ON articles
    FOR EACH STATEMENT EXECUTE FUNCTION articles_search();

-- reviews
DROP TRIGGER reviews_rows ON reviews;
DROP TRIGGER reviews_rows_truncate ON reviews;
DROP TRIGGER reviews_rows_update ON reviews;
DROP FUNCTION reviews_rows();
CREATE TRIGGER reviews_count AFTER INSERT OR DELETE ON reviews FOR EACH ROW EXECUTE FUNCTION row_counts_trigger();
-- +goose StatementBegin
CREATE FUNCTION reviews_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO reviews_search (id, comment_lower)
            VALUES (NEW.id, lower(NEW.comment));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE reviews_search SET comment_lower = lower(NEW.comment) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM reviews_search WHERE id = OLD.id;
    ELSE
        TRUNCATE reviews_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER reviews_search_insert AFTER INSERT ON reviews
    FOR EACH ROW EXECUTE FUNCTION reviews_search();
CREATE TRIGGER reviews_search_update AFTER UPDATE OF comment ON reviews
    FOR EACH ROW WHEN (OLD.comment IS DISTINCT FROM NEW.comment)
    EXECUTE FUNCTION reviews_search();
CREATE TRIGGER reviews_search_delete AFTER DELETE ON reviews
    FOR EACH ROW EXECUTE FUNCTION reviews_search();
CREATE TRIGGER reviews_search_truncate AFTER TRUNCATE ON reviews
    FOR EACH STATEMENT EXECUTE FUNCTION reviews_search();

-- products
DROP TRIGGER products_rows ON products;
DROP TRIGGER products_rows_truncate ON products;
DROP TRIGGER products_rows_update ON products;
DROP FUNCTION products_rows();
CREATE TRIGGER products_count AFTER INSERT OR DELETE ON products FOR EACH ROW EXECUTE FUNCTION row_counts_trigger();
-- +goose StatementBegin
CREATE FUNCTION products_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO products_search (id, name_lower, description_lower)
            VALUES (NEW.id, lower(NEW.name), lower(NEW.description));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE products_search SET name_lower = lower(NEW.name), description_lower = lower(NEW.description) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM products_search WHERE id = OLD.id;
    ELSE
        TRUNCATE products_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER products_search_insert AFTER INSERT ON products
    FOR EACH ROW EXECUTE FUNCTION products_search();
CREATE TRIGGER products_search_update AFTER UPDATE OF name, description ON products
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.description IS DISTINCT FROM NEW.description)
    EXECUTE FUNCTION products_search();
CREATE TRIGGER products_search_delete AFTER DELETE ON products
    FOR EACH ROW EXECUTE FUNCTION products_search();
CREATE TRIGGER products_search_truncate AFTER TRUNCATE ON products
    FOR EACH STATEMENT EXECUTE FUNCTION products_search();

-- posts
DROP TRIGGER posts_rows ON posts;
DROP TRIGGER posts_rows_truncate ON posts;
DROP TRIGGER posts_rows_update ON posts;
DROP FUNCTION posts_rows();
CREATE TRIGGER posts_count AFTER INSERT OR DELETE ON posts FOR EACH ROW EXECUTE FUNCTION row_counts_trigger();
-- +goose StatementBegin
CREATE FUNCTION posts_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO posts_search (id, title_lower, content_lower)
            VALUES (NEW.id, lower(NEW.title), lower(NEW.content));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE posts_search SET title_lower = lower(NEW.title), content_lower = lower(NEW.content) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM posts_search WHERE id = OLD.id;
    ELSE
        TRUNCATE posts_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER posts_search_insert AFTER INSERT ON posts
    FOR EACH ROW EXECUTE FUNCTION posts_search();
CREATE TRIGGER posts_search_update AFTER UPDATE OF title, content ON posts
    FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title OR OLD.content IS DISTINCT FROM NEW.content)
    EXECUTE FUNCTION posts_search();
CREATE TRIGGER posts_search_delete AFTER DELETE ON posts
    FOR EACH ROW EXECUTE FUNCTION posts_search();
CREATE TRIGGER posts_search_truncate AFTER TRUNCATE ON posts
    FOR EACH STATEMENT EXECUTE FUNCTION posts_search();

-- users
DROP TRIGGER users_rows ON users;
DROP TRIGGER users_rows_truncate ON users;
DROP TRIGGER users_rows_update ON users;
DROP FUNCTION users_rows();
-- +goose StatementBegin
CREATE FUNCTION users_count() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER users_count_insert AFTER INSERT OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION users_count();
CREATE TRIGGER users_count_update AFTER UPDATE OF deleted ON users
    FOR EACH ROW WHEN (OLD.deleted IS DISTINCT FROM NEW.deleted) EXECUTE FUNCTION users_count();
-- +goose StatementBegin
CREATE FUNCTION users_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO users_search (id, deleted, name_lower, email_lower)
            VALUES (NEW.id, NEW.deleted, lower(NEW.name), lower(NEW.email));
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE users_search SET deleted = NEW.deleted, name_lower = lower(NEW.name), email_lower = lower(NEW.email) WHERE id = NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM users_search WHERE id = OLD.id;
    ELSE
        TRUNCATE users_search;
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER users_search_insert AFTER INSERT ON users
    FOR EACH ROW EXECUTE FUNCTION users_search();
CREATE TRIGGER users_search_update AFTER UPDATE OF name, email, deleted ON users
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.email IS DISTINCT FROM NEW.email OR OLD.deleted IS DISTINCT FROM NEW.deleted)
    EXECUTE FUNCTION users_search();
CREATE TRIGGER users_search_delete AFTER DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION users_search();
CREATE TRIGGER users_search_truncate AFTER TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION users_search();
