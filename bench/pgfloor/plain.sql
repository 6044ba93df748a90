-- pgbench script of bench/peers.sh's pg-floor workload: the least a durable
-- create with its event asks of PostgreSQL. One row into a table with only
-- its primary key and one unique column, its event into an outbox with only
-- its primary key, one transaction, sent in one round trip (a pipeline), on
-- the tables that plain-setup.sql makes. Nothing of resourceapi runs.
\startpipeline
BEGIN;
INSERT INTO floor_users (name, email, email_key, age, created_at, updated_at)
VALUES ('Load ' || txid_current(), 'load-' || txid_current() || '@load.test', 'load-' || txid_current() || '@load.test', 30, now(), now());
INSERT INTO floor_events (name, resource, record_id, payload_text, created_at)
VALUES ('users.created', 'users', lastval(), E'{"id"\x3a1,"name"\x3a"Load 1","email"\x3a"load-1@load.test","age"\x3a30,"roles"\x3a["user"],"permissions"\x3a[],"created_at"\x3a"2026-11-29T22\x3a38\x3a30.330Z","updated_at"\x3a"2026-11-29T22\x3a38\x3a30.330Z","deleted"\x3afalse}', now());
COMMIT;
\endpipeline
