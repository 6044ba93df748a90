-- +goose Up
-- The copies q is matched against move from each searchable table into a
-- table of its own, <table>_search: the record's id (its primary key, and a
-- foreign key that takes the copy along when the record goes), the
-- soft-delete column where the table has one (so that a search counts its
-- matches there alone), and the lower-cased copy of each searchable column,
-- with the trigram index over the copies (<table>_search_trgm, the same
-- short pending list as 00027). Triggers write it: on insert, and on an
-- update of the searchable or soft-delete columns only. Before, the copies
-- were generated columns of the table (00033) and every update that was
-- not HOT (a PATCH of age: age and updated_at are indexed) gave the
-- trigram index new entries for every trigram of the unchanged name and
-- e-mail: about half of such a write's backend CPU and most of its WAL
-- records (docs/performance.md, "pgsearch"). An insert now writes one more
-- row (and its primary key entry). The generator makes the same for a new
-- searchable resource (postgres/migrations.go, schema.Search).
--
-- On a large table: this migration reads each searchable table once to
-- fill the new table and builds the trigram index again, under an
-- exclusive lock of the table for the whole migration; dropping the old
-- columns frees their space only as rows are rewritten (docs/operations.md).

-- users
DROP INDEX users_search;
ALTER TABLE users DROP COLUMN name_lower, DROP COLUMN email_lower;
CREATE TABLE users_search (
    id bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    deleted boolean NOT NULL,
    name_lower text,
    email_lower text
);
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON users_search FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
INSERT INTO users_search (id, deleted, name_lower, email_lower)
    SELECT id, deleted, lower(name), lower(email) FROM users;
CREATE INDEX users_search_trgm ON users_search USING gin (name_lower gin_trgm_ops, email_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION users_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO users_search (id, deleted, name_lower, email_lower)
            VALUES (NEW.id, NEW.deleted, lower(NEW.name), lower(NEW.email));
    ELSE
        UPDATE users_search SET deleted = NEW.deleted, name_lower = lower(NEW.name), email_lower = lower(NEW.email) WHERE id = NEW.id;
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

-- posts
DROP INDEX posts_search;
ALTER TABLE posts DROP COLUMN title_lower, DROP COLUMN content_lower;
CREATE TABLE posts_search (
    id bigint PRIMARY KEY REFERENCES posts (id) ON DELETE CASCADE,
    title_lower text,
    content_lower text
);
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON posts_search FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
INSERT INTO posts_search (id, title_lower, content_lower)
    SELECT id, lower(title), lower(content) FROM posts;
CREATE INDEX posts_search_trgm ON posts_search USING gin (title_lower gin_trgm_ops, content_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION posts_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO posts_search (id, title_lower, content_lower)
            VALUES (NEW.id, lower(NEW.title), lower(NEW.content));
    ELSE
        UPDATE posts_search SET title_lower = lower(NEW.title), content_lower = lower(NEW.content) WHERE id = NEW.id;
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

-- products
DROP INDEX products_search;
ALTER TABLE products DROP COLUMN name_lower, DROP COLUMN description_lower;
CREATE TABLE products_search (
    id bigint PRIMARY KEY REFERENCES products (id) ON DELETE CASCADE,
    name_lower text,
    description_lower text
);
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON products_search FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
INSERT INTO products_search (id, name_lower, description_lower)
    SELECT id, lower(name), lower(description) FROM products;
CREATE INDEX products_search_trgm ON products_search USING gin (name_lower gin_trgm_ops, description_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION products_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO products_search (id, name_lower, description_lower)
            VALUES (NEW.id, lower(NEW.name), lower(NEW.description));
    ELSE
        UPDATE products_search SET name_lower = lower(NEW.name), description_lower = lower(NEW.description) WHERE id = NEW.id;
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

-- reviews
DROP INDEX reviews_search;
ALTER TABLE reviews DROP COLUMN comment_lower;
CREATE TABLE reviews_search (
    id bigint PRIMARY KEY REFERENCES reviews (id) ON DELETE CASCADE,
    comment_lower text
);
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON reviews_search FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
INSERT INTO reviews_search (id, comment_lower)
    SELECT id, lower(comment) FROM reviews;
CREATE INDEX reviews_search_trgm ON reviews_search USING gin (comment_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION reviews_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO reviews_search (id, comment_lower)
            VALUES (NEW.id, lower(NEW.comment));
    ELSE
        UPDATE reviews_search SET comment_lower = lower(NEW.comment) WHERE id = NEW.id;
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

-- articles
DROP INDEX articles_search;
ALTER TABLE articles DROP COLUMN title_lower, DROP COLUMN body_lower;
CREATE TABLE articles_search (
    id bigint PRIMARY KEY REFERENCES articles (id) ON DELETE CASCADE,
    title_lower text,
    body_lower text
);
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON articles_search FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
INSERT INTO articles_search (id, title_lower, body_lower)
    SELECT id, lower(title), lower(body) FROM articles;
CREATE INDEX articles_search_trgm ON articles_search USING gin (title_lower gin_trgm_ops, body_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION articles_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO articles_search (id, title_lower, body_lower)
            VALUES (NEW.id, lower(NEW.title), lower(NEW.body));
    ELSE
        UPDATE articles_search SET title_lower = lower(NEW.title), body_lower = lower(NEW.body) WHERE id = NEW.id;
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

-- comments
DROP INDEX comments_search;
ALTER TABLE comments DROP COLUMN body_lower;
CREATE TABLE comments_search (
    id bigint PRIMARY KEY REFERENCES comments (id) ON DELETE CASCADE,
    body_lower text
);
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON comments_search FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
INSERT INTO comments_search (id, body_lower)
    SELECT id, lower(body) FROM comments;
CREATE INDEX comments_search_trgm ON comments_search USING gin (body_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION comments_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO comments_search (id, body_lower)
            VALUES (NEW.id, lower(NEW.body));
    ELSE
        UPDATE comments_search SET body_lower = lower(NEW.body) WHERE id = NEW.id;
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

-- oauth_clients
DROP INDEX oauth_clients_search;
ALTER TABLE oauth_clients DROP COLUMN name_lower;
CREATE TABLE oauth_clients_search (
    id bigint PRIMARY KEY REFERENCES oauth_clients (id) ON DELETE CASCADE,
    name_lower text
);
CREATE TRIGGER solo_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON oauth_clients_search FOR EACH STATEMENT EXECUTE FUNCTION solo_guard();
INSERT INTO oauth_clients_search (id, name_lower)
    SELECT id, lower(name) FROM oauth_clients;
CREATE INDEX oauth_clients_search_trgm ON oauth_clients_search USING gin (name_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION oauth_clients_search() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO oauth_clients_search (id, name_lower)
            VALUES (NEW.id, lower(NEW.name));
    ELSE
        UPDATE oauth_clients_search SET name_lower = lower(NEW.name) WHERE id = NEW.id;
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

-- +goose Down
DROP TRIGGER users_search_insert ON users;
DROP TRIGGER users_search_update ON users;
DROP FUNCTION users_search();
DROP TABLE users_search;
ALTER TABLE users ADD COLUMN name_lower text GENERATED ALWAYS AS (lower(name)) STORED,
    ADD COLUMN email_lower text GENERATED ALWAYS AS (lower(email)) STORED;
CREATE INDEX users_search ON users USING gin (name_lower gin_trgm_ops, email_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

DROP TRIGGER posts_search_insert ON posts;
DROP TRIGGER posts_search_update ON posts;
DROP FUNCTION posts_search();
DROP TABLE posts_search;
ALTER TABLE posts ADD COLUMN title_lower text GENERATED ALWAYS AS (lower(title)) STORED,
    ADD COLUMN content_lower text GENERATED ALWAYS AS (lower(content)) STORED;
CREATE INDEX posts_search ON posts USING gin (title_lower gin_trgm_ops, content_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

DROP TRIGGER products_search_insert ON products;
DROP TRIGGER products_search_update ON products;
DROP FUNCTION products_search();
DROP TABLE products_search;
ALTER TABLE products ADD COLUMN name_lower text GENERATED ALWAYS AS (lower(name)) STORED,
    ADD COLUMN description_lower text GENERATED ALWAYS AS (lower(description)) STORED;
CREATE INDEX products_search ON products USING gin (name_lower gin_trgm_ops, description_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

DROP TRIGGER reviews_search_insert ON reviews;
DROP TRIGGER reviews_search_update ON reviews;
DROP FUNCTION reviews_search();
DROP TABLE reviews_search;
ALTER TABLE reviews ADD COLUMN comment_lower text GENERATED ALWAYS AS (lower(comment)) STORED;
CREATE INDEX reviews_search ON reviews USING gin (comment_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

DROP TRIGGER articles_search_insert ON articles;
DROP TRIGGER articles_search_update ON articles;
DROP FUNCTION articles_search();
DROP TABLE articles_search;
ALTER TABLE articles ADD COLUMN title_lower text GENERATED ALWAYS AS (lower(title)) STORED,
    ADD COLUMN body_lower text GENERATED ALWAYS AS (lower(body)) STORED;
CREATE INDEX articles_search ON articles USING gin (title_lower gin_trgm_ops, body_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

DROP TRIGGER comments_search_insert ON comments;
DROP TRIGGER comments_search_update ON comments;
DROP FUNCTION comments_search();
DROP TABLE comments_search;
ALTER TABLE comments ADD COLUMN body_lower text GENERATED ALWAYS AS (lower(body)) STORED;
CREATE INDEX comments_search ON comments USING gin (body_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

DROP TRIGGER oauth_clients_search_insert ON oauth_clients;
DROP TRIGGER oauth_clients_search_update ON oauth_clients;
DROP FUNCTION oauth_clients_search();
DROP TABLE oauth_clients_search;
ALTER TABLE oauth_clients ADD COLUMN name_lower text GENERATED ALWAYS AS (lower(name)) STORED;
CREATE INDEX oauth_clients_search ON oauth_clients USING gin (name_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);
