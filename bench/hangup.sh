#!/usr/bin/env bash
# bench/hangup.sh: what a client that hangs up costs resourceapi on
# PostgreSQL.
#
# It starts resourceapi on a fresh PostgreSQL database with the data set of
# bench/peers.sh, its sessions asking for log_disconnections (a run-time
# parameter of the connection string: those sessions only), and runs `get` (bench/load, 64
# connections) twice for BENCH_DURATION: alone, then beside a client that
# sends list pages (deep OFFSETs, some milliseconds of PostgreSQL each) and
# hangs up after BENCH_HANGUP (bench/load -timeout) on BENCH_HANGUP_CONNS
# connections. For each phase it prints the requests, the sessions that
# PostgreSQL started for the database, the "canceling statement due to user
# request" errors and the disconnections it logged with their session
# times, and the most backends of the database seen at once (sampled every
# 100 ms). Then it measures what one new session costs PostgreSQL (pgbench
# -C against a plain SELECT 1). The database is dropped on exit.
#
# Settings (environment): BENCH_USERS (10000), BENCH_DURATION (10s),
# BENCH_HANGUP (5ms), BENCH_HANGUP_CONNS (4), BENCH_PG_LOG
# (/var/log/postgresql/postgresql-15-main.log), BENCH_KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."

users=${BENCH_USERS:-10000}
duration=${BENCH_DURATION:-10s}
hangup=${BENCH_HANGUP:-5ms}
hangup_conns=${BENCH_HANGUP_CONNS:-4}
pg_log=${BENCH_PG_LOG:-/var/log/postgresql/postgresql-15-main.log}
pg=postgres://root@127.0.0.1:5432

work=$(mktemp -d /tmp/resourceapi-hangup.XXXXXX)
pid=
sampler=
db=resourceapi_hangup_$(date +%s)_$$
dburl="$pg/$db?sslmode=disable"

. bench/lib.sh

cleanup() {
	[ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
	[ -n "$pid" ] && stop "$pid"
	if [ -z "${BENCH_KEEP:-}" ]; then
		timeout 60 psql -h 127.0.0.1 -U root -d test -q -c "drop database if exists $db" || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

[ -r "$pg_log" ] || { echo "cannot read PostgreSQL's log $pg_log (set BENCH_PG_LOG)" >&2; exit 1; }
command -v pgbench >/dev/null || { echo "hangup.sh needs pgbench" >&2; exit 1; }
echo "== $(uptime)"
timeout 600 go build -o "$work/resourceapi" ./cmd/resourceapi
timeout 300 go build -o "$work/peers" ./bench/peers
timeout 300 go build -o "$work/load" ./bench/load
timeout 60 psql -h 127.0.0.1 -U root -d test -q -c "create database $db"

admin_email=admin@bench.example
admin_password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
serve() {
	port=$(free_port)
	RESOURCEAPI_ADDR=127.0.0.1:$port RESOURCEAPI_DATABASE_URL=$dburl \
		RESOURCEAPI_ADMIN_EMAIL=$admin_email RESOURCEAPI_ADMIN_PASSWORD=$admin_password \
		RESOURCEAPI_RATE_LIMIT=0 "$work/resourceapi" serve >>"$work/server.log" 2>&1 &
	pid=$!
	wait_ready "$pid" "$port" || { tail -n 20 "$work/server.log" >&2; exit 1; }
	url=http://127.0.0.1:$port
}
serve
key=$(RESOURCEAPI_DATABASE_URL=$dburl timeout 60 "$work/resourceapi" apikey create --user "$admin_email" 2>>"$work/server.log" | tail -n 1)
echo "== seed: $users users"
timeout 600 "$work/peers" seed -url "$url" -header "X-API-Key:$key" -users "$users" -posts 0
timeout 300 psql -h 127.0.0.1 -U root -d "$db" -q -c "VACUUM ANALYZE"
# log_disconnections can only be set when a session starts: the server's
# connections ask for it in their start-up packet (pgx sends unknown URL
# parameters as run-time parameters).
stop "$pid"
dburl="$dburl&log_disconnections=on"
serve

sessions() { psql -h 127.0.0.1 -U root -d test -Atc "select sessions from pg_stat_database where datname = '$db'"; }
backends() { psql -h 127.0.0.1 -U root -d test -Atc "select count(*) from pg_stat_activity where datname = '$db'"; }

# phase NAME [hang-up client]: get on 64 connections for the duration, with
# or without the client that hangs up.
phase() {
	local name=$1 s0 s1 offset most lines client=
	# Warm the pool and let the previous phase's sessions end.
	timeout 30 "$work/load" -url "$url" -c 64 -d 2s -users "$users" -header "X-API-Key:$key" -scenario get >/dev/null
	sleep 2
	s0=$(sessions)
	offset=$(stat -c %s "$pg_log")
	(for _ in $(seq 600); do backends; sleep 0.1; done >"$work/backends.txt") &
	sampler=$!
	if [ "${2:-}" = hangup ]; then
		timeout 120 "$work/load" -url "$url" -c "$hangup_conns" -d "$duration" -timeout "$hangup" -users "$users" \
			-header "X-API-Key:$key" -scenario list >"$work/hangup.txt" &
		client=$!
	fi
	timeout 120 "$work/load" -url "$url" -c 64 -d "$duration" -users "$users" -header "X-API-Key:$key" -scenario get >"$work/get.txt"
	[ -z "$client" ] || wait "$client" || true
	sleep 2
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	sampler=
	s1=$(sessions)
	most=$(sort -n "$work/backends.txt" | tail -n 1)
	tail -c +"$((offset + 1))" "$pg_log" | grep -F "@$db " >"$work/phase.log" || true
	echo "== $name"
	sed 's/^/   /' "$work/get.txt"
	if [ "${2:-}" = hangup ]; then sed 's/^/   hang-up client: /' "$work/hangup.txt"; fi
	echo "   sessions started: $((s1 - s0)); most backends at once: $most (pool of $(($(nproc) * 4)))"
	echo "   canceled statements: $(grep -c 'canceling statement due to user request' "$work/phase.log" || true)"
	lines=$(grep -o 'session time: [0-9:.]*' "$work/phase.log" | awk -F'[: ]+' '{ print $3 * 3600 + $4 * 60 + $5 }' | sort -n || true)
	if [ -n "$lines" ]; then
		echo "   disconnections: $(echo "$lines" | wc -l), session time min/median/max: $(echo "$lines" | awk '{ a[NR] = $1 } END { printf "%.3f / %.3f / %.3f s", a[1], a[int((NR + 1) / 2)], a[NR] }')"
	else
		echo "   disconnections: 0"
	fi
}

phase "get alone"
phase "get beside a client that hangs up after $hangup" hangup

echo "== what a new session costs PostgreSQL: pgbench, SELECT 1, 4 clients, 5 s"
echo "SELECT 1;" >"$work/select1.sql"
for mode in "" -C; do
	result=$(timeout 60 pgbench -h 127.0.0.1 -U root -n $mode -c 4 -T 5 -f "$work/select1.sql" "$db" 2>/dev/null | grep -E '^(latency average|average connection time|tps)')
	echo "   ${mode:-(one session per client)} $(echo "$result" | tr '\n' ';')"
done
