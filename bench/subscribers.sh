#!/usr/bin/env bash
# bench/subscribers.sh [N]: build resourceapi, start it on a fresh SQLite
# database with the open-file limit raised, make an admin API key, and run
# bench/subscribers with N (10000) subscribers: the server's memory per idle
# subscriber and the delivery latency of one event to all of them. Settings:
# BENCH_PROTO (graphql-transport-ws or graphql-ws); RESOURCEAPI_* pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
work=$(mktemp -d /tmp/resourceapi-subs.XXXXXX)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/resourceapi" ./cmd/resourceapi
go build -o "$work/subscribers" ./bench/subscribers
export RESOURCEAPI_DATABASE_URL="$work/db.sqlite" RESOURCEAPI_ADMIN_EMAIL=admin@bench.example \
	RESOURCEAPI_ADMIN_PASSWORD=bench-password RESOURCEAPI_RATE_LIMIT=0 RESOURCEAPI_ACCESS_LOG=false \
	RESOURCEAPI_WS_MAX_PER_USER=0 RESOURCEAPI_WS_MAX_PER_ADDR=0
"$work/resourceapi" migrate 2>/dev/null
ulimit -n "$(ulimit -Hn)"
RESOURCEAPI_ADDR=127.0.0.1:0 "$work/resourceapi" serve 2>"$work/server.log" &
pid=$!
addr=
for _ in $(seq 100); do
	addr=$(sed -n 's/.*msg=listening addr=\([^ ]*\).*/\1/p' "$work/server.log" | head -1)
	[ -n "$addr" ] && break
	sleep 0.1
done
[ -n "$addr" ] || { cat "$work/server.log" >&2; exit 1; }
key=$("$work/resourceapi" apikey create --user "$RESOURCEAPI_ADMIN_EMAIL" | tail -1)
echo "== resourceapi on $addr (pid $pid), $n subscribers, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/subscribers" -url "http://$addr" -key "$key" -pid "$pid" -n "$n" -proto "${BENCH_PROTO:-graphql-transport-ws}" -settle "${BENCH_SETTLE:-0s}"
