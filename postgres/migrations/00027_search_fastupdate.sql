-- +goose Up
-- The trigram indexes that answer q (ILIKE '%...%') are kept whole: with
-- GIN's fastupdate (the default) new entries wait in a pending list that
-- every search reads through in full, and that only a vacuum or a list of
-- 4 MB flushes. After a few thousand writes the planner priced the index
-- above a sequential scan, and every search tested every row with ILIKE
-- (about 100 times the CPU of the index for q=abc over 10,000 users; see
-- docs/performance.md). Each write now adds its entries to the index
-- itself, and what waits in the lists now is moved in.
ALTER INDEX users_search SET (fastupdate = off);
ALTER INDEX oauth_clients_search SET (fastupdate = off);
ALTER INDEX products_search SET (fastupdate = off);
ALTER INDEX reviews_search SET (fastupdate = off);
ALTER INDEX articles_search SET (fastupdate = off);
ALTER INDEX comments_search SET (fastupdate = off);
ALTER INDEX posts_search SET (fastupdate = off);
SELECT gin_clean_pending_list(i::regclass) FROM unnest(ARRAY['users_search', 'oauth_clients_search', 'products_search',
    'reviews_search', 'articles_search', 'comments_search', 'posts_search']) AS i;

-- +goose Down
ALTER INDEX users_search RESET (fastupdate);
ALTER INDEX oauth_clients_search RESET (fastupdate);
ALTER INDEX products_search RESET (fastupdate);
ALTER INDEX reviews_search RESET (fastupdate);
ALTER INDEX articles_search RESET (fastupdate);
ALTER INDEX comments_search RESET (fastupdate);
ALTER INDEX posts_search RESET (fastupdate);
