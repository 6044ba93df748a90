#!/usr/bin/env bash
# bench/flood.sh [sqlite|postgres]: build resourceapi, start it on a free
# loopback port with a fresh database (rate limiting off, as every bench
# script: each request of the flood reaches the handlers), make an admin API
# key with the CLI, and run bench/flood: a legitimate client's p99 alone,
# then under a flood of BENCH_REQUESTS (10000) requests of each shape
# (control, introspection, lists, basic) spread over a phase of BENCH_PHASE
# (20s), then alone again, with the server's peak memory. Settings:
# BENCH_REQUESTS, BENCH_CONNS (4: the flood's connections), BENCH_PHASE,
# BENCH_SHAPES, BENCH_KEEP=1 keeps the temporary directory and
# the PostgreSQL database; RESOURCEAPI_* variables pass through to the
# server (RESOURCEAPI_RATE_LIMIT=600 measures with the production default).
# See bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

engine=${1:-sqlite}
work=$(mktemp -d /tmp/resourceapi-flood.XXXXXX)
server_pid=
pgdb=

. bench/lib.sh

cleanup() {
	stop "$server_pid"
	drop_db
	if [ -z "${BENCH_KEEP:-}" ]; then rm -rf "$work"; else echo "kept $work ${pgdb:+and database $pgdb}"; fi
}
trap cleanup EXIT

echo "== $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), go $(go env GOVERSION)"
go build -o "$work/resourceapi" ./cmd/resourceapi
go build -o "$work/flood" ./bench/flood
if ! new_db "$engine"; then
	echo "usage: $0 [sqlite|postgres]" >&2
	exit 2
fi
limit=${RESOURCEAPI_RATE_LIMIT:-0}
paced=()
if [ "$limit" != 0 ]; then
	# Seed with rate limiting off (a thousand creates would wait out the
	# budget), then measure on a server started again with the limit, the
	# legitimate client pacing itself within its budget (RESOURCEAPI_RATE_WINDOW,
	# a minute unless set) as a well-behaved client does.
	RESOURCEAPI_RATE_LIMIT=0 start_server "$work/resourceapi"
	key=$(RESOURCEAPI_DATABASE_URL=$dburl "$work/resourceapi" apikey create --user "$admin_email" 2>>"$work/server.log" | tail -n 1)
	seeded=$("$work/flood" -url "$base" -key "$key" -rate-limit "$limit" -rate-window "${RESOURCEAPI_RATE_WINDOW:-1m}" -phase "${BENCH_PHASE:-20s}" -seed-only | tail -n 1)
	stop "$server_pid"
	paced=(-seeded "$seeded" -rate-limit "$limit" -rate-window "${RESOURCEAPI_RATE_WINDOW:-1m}")
	echo "== rate limit $limit per ${RESOURCEAPI_RATE_WINDOW:-1m}: the legitimate client paces itself within its budget"
fi
start_server "$work/resourceapi"
key=$(RESOURCEAPI_DATABASE_URL=$dburl "$work/resourceapi" apikey create --user "$admin_email" 2>>"$work/server.log" | tail -n 1)
"$work/flood" -url "$base" -key "$key" -pid "$server_pid" "${paced[@]}" \
	-requests "${BENCH_REQUESTS:-10000}" -c "${BENCH_CONNS:-4}" -phase "${BENCH_PHASE:-20s}" -shapes "${BENCH_SHAPES:-control,introspection,lists,basic}"
