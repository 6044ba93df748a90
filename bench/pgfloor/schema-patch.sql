-- pgbench script of bench/peers.sh's pg-floor-patch workload: the three
-- statements of a PATCH /api/users/${id} {"age": ...} as resourceapi sends
-- them (its read FOR UPDATE, its UPDATE and its event), with the same
-- values (an id of 1..BENCH_USERS, pgbench -D users=N), on the database of
-- schema.sql, in one transaction sent in one round trip (a pipeline; the
-- service sends two). No resourceapi process
-- runs: this is what PostgreSQL alone spends on a PATCH's statements.
\set id random(1, :users)
\set age random(18, 77)
\startpipeline
BEGIN;
SELECT id, name, email, age, roles, permissions, created_at, updated_at, deleted, service FROM users WHERE id = :id FOR UPDATE;
UPDATE users SET age = :age, updated_at = GREATEST(now(), updated_at) WHERE id = :id
RETURNING id, name, email, age, roles, permissions, created_at, updated_at, deleted, service;
INSERT INTO events (name, alias, actor, resource, record_id, payload_text, created_at)
VALUES ('users.updated', 'userUpdated', 1, 'users', :id, E'{"id"\x3a42,"name"\x3a"User 00042","email"\x3a"user00042@example.com","age"\x3a30,"roles"\x3a["user"],"permissions"\x3a[],"created_at"\x3a"2026-11-29T22\x3a38\x3a30.330Z","updated_at"\x3a"2026-11-29T22\x3a38\x3a30.330Z","deleted"\x3afalse}', now());
COMMIT;
\endpipeline
