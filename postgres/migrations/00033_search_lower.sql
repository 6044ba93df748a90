-- +goose Up
-- q matches the lower-cased copy of each searchable column, which
-- PostgreSQL keeps on every write (a stored generated column, <column>_lower),
-- with LIKE and the lower-cased pattern: exactly what ILIKE did on a UTF-8
-- database (ILIKE lower-cases both sides with lower, then compares as LIKE),
-- without lower-casing every row a search checks. The trigram indexes now
-- cover the copies. For q=abc over 10,000 users, counting the 1,250 matches
-- cost PostgreSQL about half the CPU of ILIKE (see docs/performance.md).
-- Adding a stored column rewrites the table under an exclusive lock: on a
-- large table, plan the upgrade for a quiet moment (docs/operations.md).
ALTER TABLE users ADD COLUMN name_lower text GENERATED ALWAYS AS (lower(name)) STORED,
    ADD COLUMN email_lower text GENERATED ALWAYS AS (lower(email)) STORED;
DROP INDEX users_search;
CREATE INDEX users_search ON users USING gin (name_lower gin_trgm_ops, email_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

ALTER TABLE oauth_clients ADD COLUMN name_lower text GENERATED ALWAYS AS (lower(name)) STORED;
DROP INDEX oauth_clients_search;
CREATE INDEX oauth_clients_search ON oauth_clients USING gin (name_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

ALTER TABLE products ADD COLUMN name_lower text GENERATED ALWAYS AS (lower(name)) STORED,
    ADD COLUMN description_lower text GENERATED ALWAYS AS (lower(description)) STORED;
DROP INDEX products_search;
CREATE INDEX products_search ON products USING gin (name_lower gin_trgm_ops, description_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

ALTER TABLE reviews ADD COLUMN comment_lower text GENERATED ALWAYS AS (lower(comment)) STORED;
DROP INDEX reviews_search;
CREATE INDEX reviews_search ON reviews USING gin (comment_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

ALTER TABLE articles ADD COLUMN title_lower text GENERATED ALWAYS AS (lower(title)) STORED,
    ADD COLUMN body_lower text GENERATED ALWAYS AS (lower(body)) STORED;
DROP INDEX articles_search;
CREATE INDEX articles_search ON articles USING gin (title_lower gin_trgm_ops, body_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

ALTER TABLE comments ADD COLUMN body_lower text GENERATED ALWAYS AS (lower(body)) STORED;
DROP INDEX comments_search;
CREATE INDEX comments_search ON comments USING gin (body_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

ALTER TABLE posts ADD COLUMN title_lower text GENERATED ALWAYS AS (lower(title)) STORED,
    ADD COLUMN content_lower text GENERATED ALWAYS AS (lower(content)) STORED;
DROP INDEX posts_search;
CREATE INDEX posts_search ON posts USING gin (title_lower gin_trgm_ops, content_lower gin_trgm_ops) WITH (gin_pending_list_limit = 64);

-- +goose Down
DROP INDEX users_search;
ALTER TABLE users DROP COLUMN name_lower, DROP COLUMN email_lower;
CREATE INDEX users_search ON users USING gin (name gin_trgm_ops, email gin_trgm_ops) WITH (gin_pending_list_limit = 64);

DROP INDEX oauth_clients_search;
ALTER TABLE oauth_clients DROP COLUMN name_lower;
CREATE INDEX oauth_clients_search ON oauth_clients USING gin (name gin_trgm_ops) WITH (gin_pending_list_limit = 64);

DROP INDEX products_search;
ALTER TABLE products DROP COLUMN name_lower, DROP COLUMN description_lower;
CREATE INDEX products_search ON products USING gin (name gin_trgm_ops, description gin_trgm_ops) WITH (gin_pending_list_limit = 64);

DROP INDEX reviews_search;
ALTER TABLE reviews DROP COLUMN comment_lower;
CREATE INDEX reviews_search ON reviews USING gin (comment gin_trgm_ops) WITH (gin_pending_list_limit = 64);

DROP INDEX articles_search;
ALTER TABLE articles DROP COLUMN title_lower, DROP COLUMN body_lower;
CREATE INDEX articles_search ON articles USING gin (title gin_trgm_ops, body gin_trgm_ops) WITH (gin_pending_list_limit = 64);

DROP INDEX comments_search;
ALTER TABLE comments DROP COLUMN body_lower;
CREATE INDEX comments_search ON comments USING gin (body gin_trgm_ops) WITH (gin_pending_list_limit = 64);

DROP INDEX posts_search;
ALTER TABLE posts DROP COLUMN title_lower, DROP COLUMN content_lower;
CREATE INDEX posts_search ON posts USING gin (title gin_trgm_ops, content gin_trgm_ops) WITH (gin_pending_list_limit = 64);
