#!/usr/bin/env bash
# bench/run.sh [sqlite|postgres]: build resourceapi, start it on a free
# loopback port with a fresh database, seed users (and products and orders
# when an order scenario runs), run every load scenario,
# print the server's memory (also right after distinct, which sends 200,000
# searches that match nothing, each one new), then run the get scenario
# against bench/bare (a bare net/http handler) so one run shows what the
# server costs per request. See bench/README.md for what the numbers mean.
#
# Settings (environment): BENCH_DURATION (10s), BENCH_CONNS (64),
# BENCH_USERS (10000), BENCH_SCENARIOS
# (get,order,list,orders,search,create,create-order,distinct),
# BENCH_ORDERS (orders seeded, 100000), BENCH_ORDER_USERS (the users they
# belong to, 1000), BENCH_PRODUCTS (1000),
# BENCH_DISTINCT (requests of distinct, 200000),
# BENCH_KEEP=1 keeps the temporary directory (database, server log) and the
# PostgreSQL database. RESOURCEAPI_* variables (RESOURCEAPI_SQLITE_SYNC,
# RESOURCEAPI_ACCESS_LOG, ...) pass through to the server. When wrk is
# installed, the get scenario is cross-checked with it on both servers.
set -euo pipefail
cd "$(dirname "$0")/.."

engine=${1:-sqlite}
duration=${BENCH_DURATION:-10s}
conns=${BENCH_CONNS:-64}
users=${BENCH_USERS:-10000}
scenarios=${BENCH_SCENARIOS:-get,order,list,orders,search,create,create-order,distinct}
orders=${BENCH_ORDERS:-100000}
order_users=${BENCH_ORDER_USERS:-1000}
products=${BENCH_PRODUCTS:-1000}
distinct=${BENCH_DISTINCT:-}

work=$(mktemp -d /tmp/resourceapi-bench.XXXXXX)
server_pid=
bare_pid=
pgdb=

# stop PID asks the process to shut down gracefully, and kills it if it has
# not within 10 s, so that a stuck server cannot hang the script.
stop() {
	local _
	kill "$1" 2>/dev/null || return 0
	for _ in $(seq 100); do
		if ! kill -0 "$1" 2>/dev/null; then break; fi
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

cleanup() {
	local pid
	for pid in $server_pid $bare_pid; do stop "$pid"; done
	if [ -n "$pgdb" ] && [ -z "${BENCH_KEEP:-}" ]; then
		psql -h 127.0.0.1 -U root -d test -q -c "drop database if exists $pgdb" || true
	fi
	if [ -z "${BENCH_KEEP:-}" ]; then rm -rf "$work"; else echo "kept $work ${pgdb:+and database $pgdb}"; fi
}
trap cleanup EXIT

# free_port prints a port nothing listens on. Another process could take it
# before the server binds; the server then fails to start and says so.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

# wait_listening PID PORT waits up to 60 s (migrations, first admin) for the
# process to accept connections, and fails if it exits first.
wait_listening() {
	local _
	for _ in $(seq 600); do
		if ! kill -0 "$1" 2>/dev/null; then return 1; fi
		if (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	return 1
}

# memory PID prints the resident set now and at its peak.
memory() {
	awk '/^VmRSS|^VmHWM/ { printf "%s %d MiB  ", $1, $2 / 1024 } END { print "" }' "/proc/$1/status"
}

# rps prints the rps= figure of load's text line for scenario $2 in file $1.
rps() { awk -v s="$2" '$1 == s { for (i = 2; i <= NF; i++) if ($i ~ /^rps=/) { sub(/^rps=/, "", $i); print $i } }' "$1"; }

# Client and server share this machine's cores, so its other load skews
# every figure: print it with them.
echo "== $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), go $(go env GOVERSION)"
echo "== build"
go build -o /tmp/resourceapi-bench ./cmd/resourceapi
go build -o "$work/load" ./bench/load
go build -o "$work/bare" ./bench/bare

case $engine in
sqlite)
	dburl="$work/resourceapi.db"
	;;
postgres)
	pgdb="resourceapi_bench_$(date +%s)_$$"
	psql -h 127.0.0.1 -U root -d test -q -c "create database $pgdb"
	dburl="postgres://root@127.0.0.1:5432/$pgdb?sslmode=disable"
	;;
*)
	echo "usage: $0 [sqlite|postgres]" >&2
	exit 2
	;;
esac

port=$(free_port)
admin_email=admin@bench.example
admin_password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
echo "== resourceapi on 127.0.0.1:$port, $engine, log $work/server.log"
# Rate limiting would turn the run into a measurement of 429s; the access log
# stays at the server's default, as in production, but goes to a file.
RESOURCEAPI_ADDR=127.0.0.1:$port \
	RESOURCEAPI_DATABASE_URL=$dburl \
	RESOURCEAPI_ADMIN_EMAIL=$admin_email \
	RESOURCEAPI_ADMIN_PASSWORD=$admin_password \
	RESOURCEAPI_RATE_LIMIT=${RESOURCEAPI_RATE_LIMIT:-0} \
	/tmp/resourceapi-bench serve >"$work/server.log" 2>&1 &
server_pid=$!
if ! wait_listening "$server_pid" "$port"; then
	echo "resourceapi did not start:" >&2
	cat "$work/server.log" >&2
	exit 1
fi
base=http://127.0.0.1:$port

# Credentials: none while the server has no authentication. Once it has, an
# API key made with the CLI is preferred; HTTP Basic is the fallback, and its
# figures include a password verification per request unless the server
# caches them.
auth=()
status=$(curl -s -o /dev/null -w '%{http_code}' "$base/api/users?limit=1")
if [ "$status" = 401 ]; then
	if key=$(RESOURCEAPI_DATABASE_URL=$dburl /tmp/resourceapi-bench apikey create --user "$admin_email" 2>>"$work/server.log" | tail -n 1) && [ -n "$key" ]; then
		auth=(-header "X-API-Key:$key")
		echo "auth: API key of $admin_email"
	else
		auth=(-header "Authorization:Basic $(printf '%s:%s' "$admin_email" "$admin_password" | base64 | tr -d '\n')")
		echo "auth: HTTP Basic as $admin_email (no API key CLI): figures include password checks"
	fi
elif [ "$status" != 200 ]; then
	echo "GET /api/users?limit=1 answered $status" >&2
	exit 1
fi

# Orders are made of products 1..BENCH_PRODUCTS and belong to users
# 1..BENCH_ORDER_USERS; the order scenarios draw from them.
order_flags=(-orders "$orders" -products "$products" -order-users "$order_users")
seed=(-seed "$users")
case ",$scenarios," in
*,order,* | *,orders,* | *,create-order,*)
	seed+=(-seed-orders "$orders")
	echo "== seed: $users users, $products products, $orders orders of $order_users users"
	;;
*) echo "== seed: $users users" ;;
esac
# Seed first (the load generator says how long each part took), then, on
# PostgreSQL, gather statistics as autovacuum would within a minute of a bulk
# load: measured right after it, the planner has no statistics and scans
# where an index serves.
"$work/load" -url "$base" -c "$conns" -d 1ms "${seed[@]}" "${order_flags[@]}" ${auth[@]+"${auth[@]}"} -scenario get >/dev/null
if [ -n "${pgdb:-}" ]; then
	psql -h 127.0.0.1 -U root -d "$pgdb" -q -c "VACUUM ANALYZE"
fi

echo "== load: c=$conns d=$duration, $users users"
# One scenario at a time, so that the server's memory can be read right
# after distinct.
: >"$work/server.txt"
IFS=, read -ra scenario_list <<<"$scenarios"
for scenario in "${scenario_list[@]}"; do
	count=()
	if [ "$scenario" = distinct ] && [ -n "$distinct" ]; then count=(-requests "$distinct"); fi
	"$work/load" -url "$base" -c "$conns" -d "$duration" -users "$users" "${order_flags[@]}" ${auth[@]+"${auth[@]}"} \
		${count[@]+"${count[@]}"} -scenario "$scenario" | tee -a "$work/server.txt"
	if [ "$scenario" = distinct ]; then
		echo "resourceapi memory after distinct: $(memory "$server_pid")"
	fi
done
echo "resourceapi memory after load: $(memory "$server_pid")"

if command -v wrk >/dev/null; then
	echo "== wrk cross-check: get"
	wrk_headers=()
	if [ ${#auth[@]} -gt 0 ]; then wrk_headers=(-H "${auth[1]/:/: }"); fi
	BENCH_USERS=$users wrk -t2 -c"$conns" -d"$duration" --latency ${wrk_headers[@]+"${wrk_headers[@]}"} \
		-s bench/wrk-get.lua "$base" | sed -n '/Latency Distribution/,/Requests\/sec/p'
fi

stop "$server_pid"
server_pid=

port=$(free_port)
echo "== bare net/http on 127.0.0.1:$port"
"$work/bare" -addr "127.0.0.1:$port" 2>>"$work/bare.log" &
bare_pid=$!
wait_listening "$bare_pid" "$port"
"$work/load" -url "http://127.0.0.1:$port" -c "$conns" -d "$duration" -users "$users" -scenario get |
	sed 's/^get    /bare   /' | tee "$work/bare.txt"
echo "bare memory after load: $(memory "$bare_pid")"
if command -v wrk >/dev/null; then
	echo "== wrk cross-check: bare"
	BENCH_USERS=$users wrk -t2 -c"$conns" -d"$duration" --latency -s bench/wrk-get.lua "http://127.0.0.1:$port" |
		sed -n '/Latency Distribution/,/Requests\/sec/p'
fi

get=$(rps "$work/server.txt" get)
bare=$(rps "$work/bare.txt" bare)
if [ -n "$get" ] && [ -n "$bare" ]; then
	awk -v g="$get" -v b="$bare" 'BEGIN { printf "== get vs bare: %.0f vs %.0f req/s (%.0f%% of bare)\n", g, b, 100 * g / b }'
fi
# The orders targets of issue 7, each against its users counterpart of the
# same run: one order with its items against one user (at least 90%), a
# user's page of 20 orders against a page of 20 users (at least 70%).
ratio() {
	local a b
	a=$(rps "$work/server.txt" "$1")
	b=$(rps "$work/server.txt" "$2")
	if [ -n "$a" ] && [ -n "$b" ]; then
		awk -v a="$a" -v b="$b" -v x="$1" -v y="$2" -v t="$3" \
			'BEGIN { printf "== %s vs %s: %.0f vs %.0f req/s (%.0f%%, target %d%%)\n", x, y, a, b, 100 * a / b, t }'
	fi
}
ratio order get 90
ratio orders list 70
create_order=$(rps "$work/server.txt" create-order)
if [ -n "$create_order" ]; then
	echo "== create-order: $create_order req/s (target on SQLite: 3000, durable)"
fi
