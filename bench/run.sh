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
# (get,gql-get,order,order-all,list,gql-list,orders,search,create,update,create-order,distinct),
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
# distinct measures the SQLite store's cache of pages; PostgreSQL has none, and
# 200,000 searches that scan for a match take minutes there: not by default.
default_scenarios=get,gql-get,order,order-all,list,gql-list,orders,search,create,update,create-order
if [ "$engine" = sqlite ]; then default_scenarios+=,distinct; fi
scenarios=${BENCH_SCENARIOS:-$default_scenarios}
orders=${BENCH_ORDERS:-100000}
order_users=${BENCH_ORDER_USERS:-1000}
products=${BENCH_PRODUCTS:-1000}
distinct=${BENCH_DISTINCT:-}

work=$(mktemp -d /tmp/resourceapi-bench.XXXXXX)
server_pid=
bare_pid=
pgdb=

. bench/lib.sh

cleanup() {
	local pid
	for pid in $server_pid $bare_pid; do stop "$pid"; done
	drop_db
	if [ -z "${BENCH_KEEP:-}" ]; then rm -rf "$work"; else echo "kept $work ${pgdb:+and database $pgdb}"; fi
}
trap cleanup EXIT

# Client and server share this machine's cores, so its other load skews
# every figure: print it with them.
echo "== $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), go $(go env GOVERSION)"
echo "== build"
go build -o /tmp/resourceapi-bench ./cmd/resourceapi
go build -o "$work/load" ./bench/load
go build -o "$work/bare" ./bench/bare

if ! new_db "$engine"; then
	echo "usage: $0 [sqlite|postgres]" >&2
	exit 2
fi

start_server /tmp/resourceapi-bench

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
*,order,* | *,order-all,* | *,orders,* | *,create-order,*)
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
	# gql-list reads users 1..20 with their posts: give them 5 each, once.
	if [ "$scenario" = gql-list ] && [ -z "${posts_seeded:-}" ]; then count+=(-posts 5); posts_seeded=1; fi
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
# order reads the first BENCH_USERS orders, as get reads that many users;
# order-all reads all BENCH_ORDERS, ten times as many records as the server
# caches by default, so most of its reads go to the database: no target, the
# figure shows what a cache miss costs.
ratio "$work/server.txt" order get 90
ratio "$work/server.txt" order-all get 0
ratio "$work/server.txt" orders list 70
create_order=$(rps "$work/server.txt" create-order)
if [ -n "$create_order" ]; then
	echo "== create-order: $create_order req/s (target on SQLite: 3000, durable)"
fi
