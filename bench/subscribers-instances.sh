#!/usr/bin/env bash
# bench/subscribers-instances.sh [N] [INSTANCES]: the fan-out across
# instances: INSTANCES (3) servers on one fresh PostgreSQL database sharing
# events through Redis (RESOURCEAPI_REDIS_URL, a stream of this run's own),
# N (10000) subscribers spread over them, one user created on the first;
# reports each event's delivery latency to every subscriber. Needs the local
# PostgreSQL (root@127.0.0.1:5432) and Redis (127.0.0.1:6379); the database
# is dropped and the stream deleted afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
instances=${2:-3}
work=$(mktemp -d /tmp/resourceapi-subs.XXXXXX)
db="bench_subs_$$"
stream="resourceapi-bench-events-$$"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	psql -h 127.0.0.1 -U root -d test -q -c "drop database if exists $db" || true
	redis-cli -h 127.0.0.1 -p 6379 del "$stream" >/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/resourceapi" ./cmd/resourceapi
go build -o "$work/subscribers" ./bench/subscribers
psql -h 127.0.0.1 -U root -d test -q -c "create database $db"
export RESOURCEAPI_DATABASE_URL="postgres://root@127.0.0.1:5432/$db?sslmode=disable" \
	RESOURCEAPI_REDIS_URL=redis://127.0.0.1:6379/0 RESOURCEAPI_EVENTS_STREAM="$stream" \
	RESOURCEAPI_ADMIN_EMAIL=admin@bench.example RESOURCEAPI_ADMIN_PASSWORD=bench-password \
	RESOURCEAPI_RATE_LIMIT=0 RESOURCEAPI_ACCESS_LOG=false \
	RESOURCEAPI_WS_MAX_PER_USER=0 RESOURCEAPI_WS_MAX_PER_ADDR=0
"$work/resourceapi" migrate 2>/dev/null
ulimit -n "$(ulimit -Hn)"
urls=()
for i in $(seq "$instances"); do
	RESOURCEAPI_ADDR=127.0.0.1:0 "$work/resourceapi" serve 2>"$work/server$i.log" &
	pids+=($!)
	addr=
	for _ in $(seq 100); do
		addr=$(sed -n 's/.*msg=listening addr=\([^ ]*\).*/\1/p' "$work/server$i.log" | head -1)
		[ -n "$addr" ] && break
		sleep 0.1
	done
	[ -n "$addr" ] || { cat "$work/server$i.log" >&2; exit 1; }
	urls+=("http://$addr")
done
key=$("$work/resourceapi" apikey create --user "$RESOURCEAPI_ADMIN_EMAIL" | tail -1)
echo "== $instances instances on PostgreSQL and Redis, $n subscribers, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/subscribers" -url "$(IFS=,; echo "${urls[*]}")" -key "$key" -n "$n" -proto "${BENCH_PROTO:-graphql-transport-ws}"
