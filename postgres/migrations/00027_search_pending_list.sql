-- +goose Up
-- The trigram indexes that answer q (ILIKE '%...%') keep a short pending
-- list: with GIN's default, the entries of new rows wait in a list of up to
-- 4 MB that every search reads in full and that only a vacuum or a full
-- list moves into the index. After a few thousand writes the planner priced
-- the index above a sequential scan, and every search tested every row with
-- ILIKE (about 50 to 100 times the CPU of the index for q=abc over 10,000
-- users; see docs/performance.md). With a list of 64 kB (the least
-- PostgreSQL allows), the write that fills it moves it into the index, and a
-- search reads at most 64 kB of it; writes still add their entries in bulk,
-- which costs them less than fastupdate = off. What waits in the lists now
-- is moved in.
ALTER INDEX users_search SET (gin_pending_list_limit = 64);
ALTER INDEX oauth_clients_search SET (gin_pending_list_limit = 64);
ALTER INDEX products_search SET (gin_pending_list_limit = 64);
ALTER INDEX reviews_search SET (gin_pending_list_limit = 64);
ALTER INDEX articles_search SET (gin_pending_list_limit = 64);
ALTER INDEX comments_search SET (gin_pending_list_limit = 64);
ALTER INDEX posts_search SET (gin_pending_list_limit = 64);
SELECT gin_clean_pending_list(i::regclass) FROM unnest(ARRAY['users_search', 'oauth_clients_search', 'products_search',
    'reviews_search', 'articles_search', 'comments_search', 'posts_search']) AS i;

-- +goose Down
ALTER INDEX users_search RESET (gin_pending_list_limit);
ALTER INDEX oauth_clients_search RESET (gin_pending_list_limit);
ALTER INDEX products_search RESET (gin_pending_list_limit);
ALTER INDEX reviews_search RESET (gin_pending_list_limit);
ALTER INDEX articles_search RESET (gin_pending_list_limit);
ALTER INDEX comments_search RESET (gin_pending_list_limit);
ALTER INDEX posts_search RESET (gin_pending_list_limit);
