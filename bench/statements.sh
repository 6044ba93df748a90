#!/usr/bin/env bash
# bench/statements.sh: what PostgreSQL runs for each workload of
# bench/peers.sh on resourceapi, and how it plans it.
#
# It starts resourceapi on a fresh PostgreSQL database, seeds the data set of
# bench/peers.sh, sets log_min_duration_statement = 0 on that database only
# (ALTER DATABASE: no restart, nothing else on the server changes), restarts
# the server so that its connections log every statement, then sends each
# PostgreSQL workload's request BENCH_REQUESTS times, one after another, and
# reads that database's lines of the server log: round trips and statements
# per request, each statement's time, and EXPLAIN (ANALYZE, BUFFERS) of each
# with its logged parameters, as a custom plan and as the generic plan that a
# prepared statement may switch to. Writes are explained in a transaction
# that is rolled back. The database is dropped on exit.
#
# The events relay polls the outbox (a transaction of three statements) every
# RESOURCEAPI_EVENTS_POLL; the script sets it to 1m, so that what the relay
# does on its own does not show as work of the requests (what a write's
# events cost it still does: the relay publishes them when the write
# commits). pgx pings a connection that has been idle over a second before
# using it again ("-- ping"): requests sent one after another see some.
#
# Settings (environment): BENCH_USERS (10000), BENCH_POSTS (2),
# BENCH_REQUESTS (20), BENCH_ONLY (comma-separated workloads), BENCH_OUT (a
# directory that keeps the report and the plans), BENCH_PG_LOG (the server's
# log file, /var/log/postgresql/postgresql-15-main.log), BENCH_KEEP=1 (keep
# the database).
set -euo pipefail
cd "$(dirname "$0")/.."

users=${BENCH_USERS:-10000}
posts=${BENCH_POSTS:-2}
requests=${BENCH_REQUESTS:-20}
only=${BENCH_ONLY:-}
pg_log=${BENCH_PG_LOG:-/var/log/postgresql/postgresql-15-main.log}
pg=postgres://root@127.0.0.1:5432

work=$(mktemp -d /tmp/resourceapi-statements.XXXXXX)
out=${BENCH_OUT:-$work}
mkdir -p "$out"
pid=
db=resourceapi_statements_$(date +%s)_$$
dburl="$pg/$db?sslmode=disable"

. bench/lib.sh

cleanup() {
	[ -n "$pid" ] && stop "$pid"
	if [ -z "${BENCH_KEEP:-}" ]; then
		timeout 60 psql -h 127.0.0.1 -U root -d test -q -c "drop database if exists $db" || true
	else
		echo "kept database $db"
	fi
	rm -rf "$work"
}
trap cleanup EXIT

if [ ! -r "$pg_log" ]; then
	echo "cannot read PostgreSQL's log $pg_log (set BENCH_PG_LOG)" >&2
	exit 1
fi
echo "== $(uptime)"
timeout 600 go build -o "$work/resourceapi" ./cmd/resourceapi
timeout 300 go build -o "$work/peers" ./bench/peers
timeout 60 psql -h 127.0.0.1 -U root -d test -q -c "create database $db"

admin_email=admin@bench.example
admin_password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
serve() {
	port=$(free_port)
	RESOURCEAPI_ADDR=127.0.0.1:$port RESOURCEAPI_DATABASE_URL=$dburl \
		RESOURCEAPI_ADMIN_EMAIL=$admin_email RESOURCEAPI_ADMIN_PASSWORD=$admin_password \
		RESOURCEAPI_RATE_LIMIT=0 RESOURCEAPI_EVENTS_POLL=${RESOURCEAPI_EVENTS_POLL:-1m} "$work/resourceapi" serve >>"$work/server.log" 2>&1 &
	pid=$!
	wait_ready "$pid" "$port" || { tail -n 20 "$work/server.log" >&2; exit 1; }
	url=http://127.0.0.1:$port
}
serve
key=$(RESOURCEAPI_DATABASE_URL=$dburl timeout 60 "$work/resourceapi" apikey create --user "$admin_email" 2>>"$work/server.log" | tail -n 1)
echo "== seed: $users users with $posts posts each"
timeout 600 "$work/peers" seed -url "$url" -header "X-API-Key:$key" -users "$users" -posts "$posts"
timeout 300 psql -h 127.0.0.1 -U root -d "$db" -q -c "VACUUM ANALYZE"
timeout 60 psql -h 127.0.0.1 -U root -d test -q -c "ALTER DATABASE $db SET log_min_duration_statement = 0"
stop "$pid"
serve

fill() {
	local s=${1//\$\{id\}/$2}
	s=${s//\$\{page\}/$((($2 * 37) % (users / 20) + 1))}
	s=${s//\$\{age\}/$((18 + $2 % 60))}
	echo "${s//\$\{seq\}/stmt-$(date +%s%N)}"
}

peer_workloads
report=$out/statements.txt
: >"$report"
for w in "${workloads[@]}"; do
	IFS='|' read -r name server method path body <<<"$w"
	[ "$server" = pg ] || continue
	[ -z "$only" ] || [[ ",$only," == *",$name,"* ]] || continue
	# One request first, so that every statement of the shape is prepared on
	# at least one connection; then the measured ones.
	for i in 0 $(seq "$requests"); do
		[ "$i" = 1 ] && { sleep 1; offset=$(stat -c %s "$pg_log"); }
		id=$((1 + (i * 7919) % users))
		args=(-s -o /dev/null -w '%{http_code}' -X "$method" -H "X-API-Key: $key" --max-time 30)
		[ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$(fill "$body" "$id")")
		status=$(curl "${args[@]}" "$url$(fill "$path" "$id")")
		[[ $status == 2* ]] || { echo "$name: $status" >&2; exit 1; }
	done
	sleep 1
	# This database's lines, with the lines that continue them.
	tail -c +"$((offset + 1))" "$pg_log" |
		awk -v db="@$db " '/^[0-9][0-9][0-9][0-9]-/ { keep = index($0, db) > 0 } keep' >"$work/$name.log"
	{
		echo "=== $name: $method $path ${body:+$body}"
		"$work/peers" statements -requests "$requests" -explain "$work/$name.sql" <"$work/$name.log"
		echo
	} | tee -a "$report"
	timeout 120 psql -h 127.0.0.1 -U root -d "$db" -q -X -f "$work/$name.sql" >"$out/$name.plans.txt" 2>&1 || true
done
echo "== report in $report, plans in $out/*.plans.txt"
