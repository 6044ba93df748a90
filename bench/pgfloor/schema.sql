-- pgbench script of bench/peers.sh's pg-floor-schema workload: the two
-- statements of a POST /api/users as resourceapi sends them (its INSERT, which
-- takes its id and the id's lock, and its event), with the same values, on a
-- database that resourceapi's own migrations made (so every index and
-- trigger of a create runs), in one transaction sent in one round trip (a
-- pipeline; the service sends two). No resourceapi process runs: this is
-- what PostgreSQL alone spends on a POST's statements.
\startpipeline
BEGIN;
INSERT INTO users (id, name, email, email_key, age, password_hash, roles, permissions, deleted, service, security_stamp, created_at, updated_at)
VALUES ((SELECT n FROM nextval('users_id_seq'::regclass) AS n, pg_advisory_xact_lock(hashtext('users'), hashint8(n)) AS l),
        'Load ' || txid_current(), 'load-' || txid_current() || '@load.test', 'load-' || txid_current() || '@load.test', 30, NULL,
        '["user"]', '[]', false, false, md5(txid_current()::text), now(), now())
ON CONFLICT (id) DO NOTHING RETURNING id, name, email, age, roles, permissions, created_at, updated_at, deleted, service;
INSERT INTO events (name, alias, actor, resource, record_id, payload_text, created_at)
VALUES ('users.created', 'userCreated', 1, 'users', lastval(), E'{"id"\x3a1,"name"\x3a"Load 1","email"\x3a"load-1@load.test","age"\x3a30,"roles"\x3a["user"],"permissions"\x3a[],"created_at"\x3a"2026-11-29T22\x3a38\x3a30.330Z","updated_at"\x3a"2026-11-29T22\x3a38\x3a30.330Z","deleted"\x3afalse}', now());
COMMIT;
\endpipeline
