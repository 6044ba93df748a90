-- +goose Up
-- The resources besides users: products, reviews (of a product by a user),
-- orders (of a user, with their items), articles, comments (on an article) and
-- posts. Each table follows the conventions of users: timestamps in Unix
-- milliseconds, an index per sortable field (with id, which breaks ties), one
-- per filter column that lists narrow by (with id, for their pages), counts in
-- row_counts kept by triggers, and a trigram index for the searchable fields.
-- References are foreign keys: deleting a user deletes what they own, deleting
-- an article its comments, deleting a product its reviews; a product that an
-- order lists cannot be deleted (RESTRICT).

CREATE TABLE products (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    description TEXT,
    price_cents INTEGER NOT NULL CHECK (price_cents >= 0),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX products_name ON products (name, id);
CREATE INDEX products_price_cents ON products (price_cents, id);
CREATE INDEX products_created_at ON products (created_at, id);
CREATE INDEX products_updated_at ON products (updated_at, id);

-- +goose StatementBegin
CREATE TRIGGER products_count_insert AFTER INSERT ON products BEGIN
    INSERT INTO row_counts (resource, deleted, n) VALUES ('products', 0, 1)
        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER products_count_delete AFTER DELETE ON products BEGIN
    UPDATE row_counts SET n = n - 1 WHERE resource = 'products' AND deleted = 0;
END;
-- +goose StatementEnd

CREATE VIRTUAL TABLE products_fts USING fts5(
    name, description, content = '', contentless_delete = 1, tokenize = 'trigram'
);
CREATE TABLE products_fts_pending (id INTEGER PRIMARY KEY) STRICT;

-- +goose StatementBegin
CREATE TRIGGER products_fts_insert AFTER INSERT ON products BEGIN
    INSERT INTO products_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER products_fts_update AFTER UPDATE OF name, description ON products BEGIN
    INSERT INTO products_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER products_fts_delete AFTER DELETE ON products BEGIN
    INSERT INTO products_fts_pending (id) VALUES (old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

CREATE TABLE reviews (
    id         INTEGER PRIMARY KEY,
    product_id INTEGER NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    rating     INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    comment    TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX reviews_product_id ON reviews (product_id, id);
CREATE INDEX reviews_user_id ON reviews (user_id, id);
CREATE INDEX reviews_rating ON reviews (rating, id);
CREATE INDEX reviews_created_at ON reviews (created_at, id);
CREATE INDEX reviews_updated_at ON reviews (updated_at, id);

-- +goose StatementBegin
CREATE TRIGGER reviews_count_insert AFTER INSERT ON reviews BEGIN
    INSERT INTO row_counts (resource, deleted, n) VALUES ('reviews', 0, 1)
        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER reviews_count_delete AFTER DELETE ON reviews BEGIN
    UPDATE row_counts SET n = n - 1 WHERE resource = 'reviews' AND deleted = 0;
END;
-- +goose StatementEnd

CREATE VIRTUAL TABLE reviews_fts USING fts5(
    comment, content = '', contentless_delete = 1, tokenize = 'trigram'
);
CREATE TABLE reviews_fts_pending (id INTEGER PRIMARY KEY) STRICT;

-- +goose StatementBegin
CREATE TRIGGER reviews_fts_insert AFTER INSERT ON reviews BEGIN
    INSERT INTO reviews_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER reviews_fts_update AFTER UPDATE OF comment ON reviews BEGIN
    INSERT INTO reviews_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER reviews_fts_delete AFTER DELETE ON reviews BEGIN
    INSERT INTO reviews_fts_pending (id) VALUES (old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

CREATE TABLE orders (
    id         INTEGER PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    status     TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'paid', 'shipped', 'cancelled')),
    total_cents INTEGER NOT NULL CHECK (total_cents >= 0),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

-- The items of each order, in order. A product an order lists cannot be
-- deleted: orders record what was sold.
CREATE TABLE order_items (
    order_id         INTEGER NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    position         INTEGER NOT NULL,
    product_id       INTEGER NOT NULL REFERENCES products (id) ON DELETE RESTRICT,
    quantity         INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents INTEGER NOT NULL CHECK (unit_price_cents >= 0),
    PRIMARY KEY (order_id, position)
) STRICT, WITHOUT ROWID;
CREATE INDEX order_items_product_id ON order_items (product_id);

CREATE INDEX orders_user_id ON orders (user_id, id);
CREATE INDEX orders_status ON orders (status, id);
CREATE INDEX orders_total_cents ON orders (total_cents, id);
CREATE INDEX orders_created_at ON orders (created_at, id);
CREATE INDEX orders_updated_at ON orders (updated_at, id);

-- +goose StatementBegin
CREATE TRIGGER orders_count_insert AFTER INSERT ON orders BEGIN
    INSERT INTO row_counts (resource, deleted, n) VALUES ('orders', 0, 1)
        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER orders_count_delete AFTER DELETE ON orders BEGIN
    UPDATE row_counts SET n = n - 1 WHERE resource = 'orders' AND deleted = 0;
END;
-- +goose StatementEnd

CREATE TABLE articles (
    id         INTEGER PRIMARY KEY,
    author_id  INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    title      TEXT NOT NULL,
    body       TEXT NOT NULL,
    published  INTEGER NOT NULL DEFAULT 0 CHECK (published IN (0, 1)),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX articles_author_id ON articles (author_id, id);
CREATE INDEX articles_title ON articles (title, id);
CREATE INDEX articles_published ON articles (published, id);
CREATE INDEX articles_created_at ON articles (created_at, id);
CREATE INDEX articles_updated_at ON articles (updated_at, id);

-- +goose StatementBegin
CREATE TRIGGER articles_count_insert AFTER INSERT ON articles BEGIN
    INSERT INTO row_counts (resource, deleted, n) VALUES ('articles', 0, 1)
        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER articles_count_delete AFTER DELETE ON articles BEGIN
    UPDATE row_counts SET n = n - 1 WHERE resource = 'articles' AND deleted = 0;
END;
-- +goose StatementEnd

CREATE VIRTUAL TABLE articles_fts USING fts5(
    title, body, content = '', contentless_delete = 1, tokenize = 'trigram'
);
CREATE TABLE articles_fts_pending (id INTEGER PRIMARY KEY) STRICT;

-- +goose StatementBegin
CREATE TRIGGER articles_fts_insert AFTER INSERT ON articles BEGIN
    INSERT INTO articles_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER articles_fts_update AFTER UPDATE OF title, body ON articles BEGIN
    INSERT INTO articles_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER articles_fts_delete AFTER DELETE ON articles BEGIN
    INSERT INTO articles_fts_pending (id) VALUES (old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

CREATE TABLE comments (
    id         INTEGER PRIMARY KEY,
    article_id INTEGER NOT NULL REFERENCES articles (id) ON DELETE CASCADE,
    author_id  INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX comments_article_id ON comments (article_id, id);
CREATE INDEX comments_author_id ON comments (author_id, id);
CREATE INDEX comments_created_at ON comments (created_at, id);
CREATE INDEX comments_updated_at ON comments (updated_at, id);

-- +goose StatementBegin
CREATE TRIGGER comments_count_insert AFTER INSERT ON comments BEGIN
    INSERT INTO row_counts (resource, deleted, n) VALUES ('comments', 0, 1)
        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER comments_count_delete AFTER DELETE ON comments BEGIN
    UPDATE row_counts SET n = n - 1 WHERE resource = 'comments' AND deleted = 0;
END;
-- +goose StatementEnd

CREATE VIRTUAL TABLE comments_fts USING fts5(
    body, content = '', contentless_delete = 1, tokenize = 'trigram'
);
CREATE TABLE comments_fts_pending (id INTEGER PRIMARY KEY) STRICT;

-- +goose StatementBegin
CREATE TRIGGER comments_fts_insert AFTER INSERT ON comments BEGIN
    INSERT INTO comments_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER comments_fts_update AFTER UPDATE OF body ON comments BEGIN
    INSERT INTO comments_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER comments_fts_delete AFTER DELETE ON comments BEGIN
    INSERT INTO comments_fts_pending (id) VALUES (old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

CREATE TABLE posts (
    id         INTEGER PRIMARY KEY,
    author_id  INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    title      TEXT NOT NULL,
    content    TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE INDEX posts_author_id ON posts (author_id, id);
CREATE INDEX posts_title ON posts (title, id);
CREATE INDEX posts_created_at ON posts (created_at, id);
CREATE INDEX posts_updated_at ON posts (updated_at, id);

-- +goose StatementBegin
CREATE TRIGGER posts_count_insert AFTER INSERT ON posts BEGIN
    INSERT INTO row_counts (resource, deleted, n) VALUES ('posts', 0, 1)
        ON CONFLICT (resource, deleted) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER posts_count_delete AFTER DELETE ON posts BEGIN
    UPDATE row_counts SET n = n - 1 WHERE resource = 'posts' AND deleted = 0;
END;
-- +goose StatementEnd

CREATE VIRTUAL TABLE posts_fts USING fts5(
    title, content, content = '', contentless_delete = 1, tokenize = 'trigram'
);
CREATE TABLE posts_fts_pending (id INTEGER PRIMARY KEY) STRICT;

-- +goose StatementBegin
CREATE TRIGGER posts_fts_insert AFTER INSERT ON posts BEGIN
    INSERT INTO posts_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER posts_fts_update AFTER UPDATE OF title, content ON posts BEGIN
    INSERT INTO posts_fts_pending (id) VALUES (new.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER posts_fts_delete AFTER DELETE ON posts BEGIN
    INSERT INTO posts_fts_pending (id) VALUES (old.id) ON CONFLICT DO NOTHING;
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE order_items;
DROP TABLE comments;
DROP TABLE articles;
DROP TABLE reviews;
DROP TABLE orders;
DROP TABLE posts;
DROP TABLE products;
DROP TABLE products_fts;
DROP TABLE reviews_fts;
DROP TABLE articles_fts;
DROP TABLE comments_fts;
DROP TABLE posts_fts;
DROP TABLE products_fts_pending;
DROP TABLE reviews_fts_pending;
DROP TABLE articles_fts_pending;
DROP TABLE comments_fts_pending;
DROP TABLE posts_fts_pending;
DELETE FROM row_counts WHERE resource IN ('products', 'reviews', 'orders', 'articles', 'comments', 'posts');
