-- +goose Up
-- The search tables of 00038 lose their foreign key to the record: its
-- check on every insert (an RI trigger's index lookup and a KEY SHARE lock
-- of the new record, one WAL record) was part of what a POST paid for
-- them (docs/performance.md, "pgsearch2"). The function that writes a
-- search table now keeps it in step with its table on every path the
-- foreign key covered, from two more triggers: after a delete (the copy
-- goes with its record) and after a truncate (the search table is
-- truncated too). Nothing to clean: the foreign key left no copy without
-- its record. The generator makes the same for a new searchable resource
-- (postgres/migrations.go, schema.Search).

-- users
ALTER TABLE users_search DROP CONSTRAINT users_search_id_fkey;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION users_search() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER users_search_delete AFTER DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION users_search();
CREATE TRIGGER users_search_truncate AFTER TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION users_search();

-- posts
ALTER TABLE posts_search DROP CONSTRAINT posts_search_id_fkey;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION posts_search() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER posts_search_delete AFTER DELETE ON posts
    FOR EACH ROW EXECUTE FUNCTION posts_search();
CREATE TRIGGER posts_search_truncate AFTER TRUNCATE ON posts
    FOR EACH STATEMENT EXECUTE FUNCTION posts_search();

-- products
ALTER TABLE products_search DROP CONSTRAINT products_search_id_fkey;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION products_search() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER products_search_delete AFTER DELETE ON products
    FOR EACH ROW EXECUTE FUNCTION products_search();
CREATE TRIGGER products_search_truncate AFTER TRUNCATE ON products
    FOR EACH STATEMENT EXECUTE FUNCTION products_search();

-- reviews
ALTER TABLE reviews_search DROP CONSTRAINT reviews_search_id_fkey;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION reviews_search() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER reviews_search_delete AFTER DELETE ON reviews
    FOR EACH ROW EXECUTE FUNCTION reviews_search();
CREATE TRIGGER reviews_search_truncate AFTER TRUNCATE ON reviews
    FOR EACH STATEMENT EXECUTE FUNCTION reviews_search();

-- articles
ALTER TABLE articles_search DROP CONSTRAINT articles_search_id_fkey;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION articles_search() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER articles_search_delete AFTER DELETE ON articles
    FOR EACH ROW EXECUTE FUNCTION articles_search();
CREATE TRIGGER articles_search_truncate AFTER TRUNCATE ON articles
    FOR EACH STATEMENT EXECUTE FUNCTION articles_search();

-- comments
ALTER TABLE comments_search DROP CONSTRAINT comments_search_id_fkey;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION comments_search() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER comments_search_delete AFTER DELETE ON comments
    FOR EACH ROW EXECUTE FUNCTION comments_search();
CREATE TRIGGER comments_search_truncate AFTER TRUNCATE ON comments
    FOR EACH STATEMENT EXECUTE FUNCTION comments_search();

-- oauth_clients
ALTER TABLE oauth_clients_search DROP CONSTRAINT oauth_clients_search_id_fkey;
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION oauth_clients_search() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER oauth_clients_search_delete AFTER DELETE ON oauth_clients
    FOR EACH ROW EXECUTE FUNCTION oauth_clients_search();
CREATE TRIGGER oauth_clients_search_truncate AFTER TRUNCATE ON oauth_clients
    FOR EACH STATEMENT EXECUTE FUNCTION oauth_clients_search();

-- +goose Down

-- oauth_clients
DROP TRIGGER oauth_clients_search_truncate ON oauth_clients;
DROP TRIGGER oauth_clients_search_delete ON oauth_clients;
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
DELETE FROM oauth_clients_search s WHERE NOT EXISTS (SELECT FROM oauth_clients r WHERE r.id = s.id);
ALTER TABLE oauth_clients_search ADD CONSTRAINT oauth_clients_search_id_fkey FOREIGN KEY (id) REFERENCES oauth_clients (id) ON DELETE CASCADE;

-- comments
DROP TRIGGER comments_search_truncate ON comments;
DROP TRIGGER comments_search_delete ON comments;
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
DELETE FROM comments_search s WHERE NOT EXISTS (SELECT FROM comments r WHERE r.id = s.id);
ALTER TABLE comments_search ADD CONSTRAINT comments_search_id_fkey FOREIGN KEY (id) REFERENCES comments (id) ON DELETE CASCADE;

-- articles
DROP TRIGGER articles_search_truncate ON articles;
DROP TRIGGER articles_search_delete ON articles;
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
DELETE FROM articles_search s WHERE NOT EXISTS (SELECT FROM articles r WHERE r.id = s.id);
ALTER TABLE articles_search ADD CONSTRAINT articles_search_id_fkey FOREIGN KEY (id) REFERENCES articles (id) ON DELETE CASCADE;

-- reviews
DROP TRIGGER reviews_search_truncate ON reviews;
DROP TRIGGER reviews_search_delete ON reviews;
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
DELETE FROM reviews_search s WHERE NOT EXISTS (SELECT FROM reviews r WHERE r.id = s.id);
ALTER TABLE reviews_search ADD CONSTRAINT reviews_search_id_fkey FOREIGN KEY (id) REFERENCES reviews (id) ON DELETE CASCADE;

-- products
DROP TRIGGER products_search_truncate ON products;
DROP TRIGGER products_search_delete ON products;
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
DELETE FROM products_search s WHERE NOT EXISTS (SELECT FROM products r WHERE r.id = s.id);
ALTER TABLE products_search ADD CONSTRAINT products_search_id_fkey FOREIGN KEY (id) REFERENCES products (id) ON DELETE CASCADE;

-- posts
DROP TRIGGER posts_search_truncate ON posts;
DROP TRIGGER posts_search_delete ON posts;
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
DELETE FROM posts_search s WHERE NOT EXISTS (SELECT FROM posts r WHERE r.id = s.id);
ALTER TABLE posts_search ADD CONSTRAINT posts_search_id_fkey FOREIGN KEY (id) REFERENCES posts (id) ON DELETE CASCADE;

-- users
DROP TRIGGER users_search_truncate ON users;
DROP TRIGGER users_search_delete ON users;
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
DELETE FROM users_search s WHERE NOT EXISTS (SELECT FROM users r WHERE r.id = s.id);
ALTER TABLE users_search ADD CONSTRAINT users_search_id_fkey FOREIGN KEY (id) REFERENCES users (id) ON DELETE CASCADE;
