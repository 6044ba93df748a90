#!/usr/bin/env bash
# bench/peers.sh: resourceapi against its peers, in one run on one machine.
#
# It builds the server and the bare net/http baseline (bench/bare), installs
# PocketBase (examples/base, into a cache outside the repository) and
# PostGraphile 4 (npm ci of bench/peers/package-lock.json, likewise), starts
# resourceapi on SQLite and on a fresh PostgreSQL database, seeds both with
# the same users and posts (bench/peers), gives PocketBase the same users and
# PostGraphile its own database with the same rows, and then runs every
# workload with wrk (-t1 -c64, a warm-up, then the measured run), round after
# round. For each run it records the requests, latency, errors, the CPU time
# of the server measured and of PostgreSQL, transactions and new sessions on
# the database, the machine's other load, and the load average; at the end
# it prints the table of the targets. Everything is on loopback and stopped
# and dropped on exit. See bench/README.md ("Peers").
#
# Settings (environment): BENCH_DURATION (10s), BENCH_WARMUP (2s),
# BENCH_CONNS (64), BENCH_ROUNDS (2), BENCH_USERS (10000), BENCH_POSTS (2),
# BENCH_ONLY (comma-separated workloads; default all), BENCH_PROFILE=1
# (profile the server: a build with bench/profile.go.in, CPU profiles of
# round 1 and allocations per request), BENCH_OUT (a directory that keeps the
# results, logs and profiles), BENCH_PEERS_CACHE (where PocketBase and
# PostGraphile are installed, /tmp/resourceapi-bench-peers), BENCH_KEEP=1
# (keep the databases), BENCH_BASELINE (a commit, e.g. a tag or abff140: that
# revision is built too and measured on its own SQLite and PostgreSQL, seeded
# alike, each of its workloads, named base-..., run right after the same
# workload of the build measured, so that before and after share every round
# of the same run), BENCH_NO_PEERS=1 (neither PocketBase nor PostGraphile:
# resourceapi, its baseline and the bare handler only), BENCH_PG_SOCKET (a
# directory such as /var/run/postgresql: resourceapi and its baseline reach
# PostgreSQL over its Unix socket instead of TCP on 127.0.0.1),
# BENCH_PG_PARAMS (parameters added to the database URL of resourceapi and
# its baseline, e.g. pool_max_conns=64 for a pool of 64 connections; the
# default is 8 per core). BENCH_PG_SOLO
# (on or off: RESOURCEAPI_POSTGRES_SOLO of resourceapi and its baseline;
# off measures PostgreSQL without the record cache, as with two
# instances). BENCH_FLOOR_CLIENTS (8 per core, resourceapi's default pool: the
# pgbench clients of pg-floor and pg-floor-schema). RESOURCEAPI_* variables
# pass through to the servers.
#
# pg-floor, pg-floor-schema and pg-floor-patch are PostgreSQL alone, on the same machine in
# the same round, with no HTTP and no resourceapi process: pgbench runs a
# create and its event in one transaction, sent in one round trip, from
# BENCH_FLOOR_CLIENTS connections, on plain tables (bench/pgfloor/plain.sql:
# the least such a durable write asks of PostgreSQL) and on a database that
# resourceapi's migrations made, with the statements of its POST
# (bench/pgfloor/schema.sql: every index and trigger of the schema), and
# pg-floor-patch the statements of its PATCH there (schema-patch.sql). They
# say what the machine's PostgreSQL can do at most, which pg-post's target
# cannot exceed; they need pgbench (Debian's postgresql-client) and are
# skipped without it.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

duration=${BENCH_DURATION:-10s}
warmup=${BENCH_WARMUP:-2s}
conns=${BENCH_CONNS:-64}
rounds=${BENCH_ROUNDS:-2}
users=${BENCH_USERS:-10000}
posts=${BENCH_POSTS:-2}
only=${BENCH_ONLY:-}
profile=${BENCH_PROFILE:-}
cache=${BENCH_PEERS_CACHE:-/tmp/resourceapi-bench-peers}
pocketbase_version=v0.39.11
pg=postgres://root@127.0.0.1:5432

work=$(mktemp -d /tmp/resourceapi-peers.XXXXXX)
out=${BENCH_OUT:-$work}
mkdir -p "$out"
pids=()
dbs=()

. bench/lib.sh

cleanup() {
	local pid db
	for pid in ${pids[@]+"${pids[@]}"}; do stop "$pid"; done
	for db in ${dbs[@]+"${dbs[@]}"}; do
		if [ -z "${BENCH_KEEP:-}" ]; then
			timeout 60 psql -h 127.0.0.1 -U root -d test -q -c "drop database if exists $db" || true
		else
			echo "kept database $db"
		fi
	done
	if [ "$out" != "$work" ]; then cp "$work"/*.log "$out"/ 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

say() { echo "== $*"; }
load_average() { cut -d' ' -f1-3 /proc/loadavg; }

say "start: $(uptime)"
say "$(nproc) cores, go $(go env GOVERSION), results in $out"
echo "# start: $(uptime)" >"$out/results.txt"
if [ -n "${BENCH_PG_SOLO:-${RESOURCEAPI_POSTGRES_SOLO:-}}" ]; then
	say "RESOURCEAPI_POSTGRES_SOLO=${BENCH_PG_SOLO:-$RESOURCEAPI_POSTGRES_SOLO}"
	echo "# RESOURCEAPI_POSTGRES_SOLO=${BENCH_PG_SOLO:-$RESOURCEAPI_POSTGRES_SOLO}" >>"$out/results.txt"
fi

# Tools. wrk comes from Debian; the peers are cached outside the repository.
if ! command -v wrk >/dev/null; then
	say "installing wrk"
	timeout 300 apt-get install -y -qq wrk >/dev/null || { timeout 300 apt-get update -qq && timeout 300 apt-get install -y -qq wrk >/dev/null; }
fi
for tool in go psql node npm wrk curl; do
	command -v "$tool" >/dev/null || { echo "peers.sh needs $tool" >&2; exit 1; }
done

say "build"
bin=$work/resourceapi
if [ -n "$profile" ]; then
	# The profiling build: the same server with bench/profile.go.in compiled
	# into package main through an overlay, so the repository is unchanged.
	printf '{"Replace":{"%s":"%s"}}\n' "$repo/cmd/resourceapi/zz_benchprofile.go" "$repo/bench/profile.go.in" >"$work/overlay.json"
	timeout 600 go build -overlay "$work/overlay.json" -o "$bin" ./cmd/resourceapi
	mkdir -p "$out/profiles"
else
	timeout 600 go build -o "$bin" ./cmd/resourceapi
fi
timeout 300 go build -o "$work/bare" ./bench/bare
baseline=${BENCH_BASELINE:-}
if [ -n "$baseline" ]; then
	say "build the baseline $baseline ($(git rev-parse --short "$baseline^{commit}"))"
	mkdir -p "$work/base-src"
	git archive "$baseline" | tar -x -C "$work/base-src"
	(cd "$work/base-src" && timeout 600 go build -o "$work/resourceapi-base" ./cmd/resourceapi)
fi
timeout 300 go build -o "$work/peers" ./bench/peers

no_peers=${BENCH_NO_PEERS:-}
pocketbase=$cache/pocketbase-$pocketbase_version/base
if [ -z "$no_peers" ] && [ ! -x "$pocketbase" ]; then
	say "installing PocketBase $pocketbase_version into $cache"
	mkdir -p "$(dirname "$pocketbase")"
	GOBIN=$(dirname "$pocketbase") timeout 900 go install "github.com/pocketbase/pocketbase/examples/base@$pocketbase_version"
fi
lock_sum=$(cat bench/peers/package.json bench/peers/package-lock.json | sha256sum | cut -c1-16)
postgraphile_dir=$cache/postgraphile-$lock_sum
if [ -z "$no_peers" ] && [ ! -x "$postgraphile_dir/node_modules/.bin/postgraphile" ]; then
	say "installing PostGraphile (npm ci) into $postgraphile_dir"
	rm -rf "$postgraphile_dir"
	mkdir -p "$postgraphile_dir"
	cp bench/peers/package.json bench/peers/package-lock.json "$postgraphile_dir/"
	(cd "$postgraphile_dir" && timeout 600 npm ci --no-audit --no-fund --loglevel=error)
fi
[ -n "$no_peers" ] || say "PocketBase $pocketbase_version, PostGraphile $("$postgraphile_dir/node_modules/.bin/postgraphile" --version 2>/dev/null), $(wrk --version 2>&1 | head -n 1 | cut -d' ' -f1-2)"

# CPU accounting. ticks PID: the process's user and system time, all its
# threads. pg_ticks: every PostgreSQL process's, including the backends that
# exited (the postmaster reaps them: its children's time), read again until
# no child was reaped while the live ones were read, so that none is missed
# or counted twice. busy_ticks: the machine's non-idle time, all cores.
clk_tck=$(getconf CLK_TCK)
ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
postmaster=
if datadir=$(psql -h 127.0.0.1 -U root -d test -Atc "show data_directory" 2>/dev/null) && [ -r "$datadir/postmaster.pid" ]; then
	postmaster=$(head -n 1 "$datadir/postmaster.pid")
fi
pg_ticks() {
	local _ before after live
	if [ -n "$postmaster" ]; then
		for _ in $(seq 20); do
			# The postmaster's own time and its reaped children's; the
			# processes' names are "postgres", without spaces.
			before=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$postmaster/stat")
			live=$(pgrep -P "$postmaster" | sed 's|.*|/proc/&/stat|' | xargs cat 2>/dev/null | awk '{ s += $14 + $15 } END { print s + 0 }')
			after=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$postmaster/stat")
			if [ "$before" = "$after" ]; then
				echo $((after + live))
				return
			fi
		done
	fi
	echo -1
}
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
# pg_stats DB: sessions started and transactions committed on the database.
pg_stats() { psql -h 127.0.0.1 -U root -d test -Atc "select sessions, xact_commit from pg_stat_database where datname = '$1'" | tr '|' ' '; }

new_pg_db() {
	timeout 60 psql -h 127.0.0.1 -U root -d test -q -c "create database $1"
	dbs+=("$1")
}

admin_email=admin@bench.example
admin_password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')

# start_resourceapi NAME DBURL [BINARY]: starts the server ($bin unless
# BINARY) on a free port and sets NAME_url, NAME_pid, NAME_pprof and NAME_key
# (an API key of the admin).
start_resourceapi() {
	local name=$1 dburl=$2 bin=${3:-$bin} port pprof_port key pid
	port=$(free_port)
	pprof_port=$(free_port)
	BENCH_PPROF_ADDR=$([ -n "$profile" ] && echo "127.0.0.1:$pprof_port" || true) \
		RESOURCEAPI_ADDR=127.0.0.1:$port \
		RESOURCEAPI_DATABASE_URL=$dburl \
		RESOURCEAPI_ADMIN_EMAIL=$admin_email \
		RESOURCEAPI_ADMIN_PASSWORD=$admin_password \
		RESOURCEAPI_RATE_LIMIT=${RESOURCEAPI_RATE_LIMIT:-0} \
		RESOURCEAPI_POSTGRES_SOLO=${BENCH_PG_SOLO:-${RESOURCEAPI_POSTGRES_SOLO:-}} \
		"$bin" serve >"$work/resourceapi-$name.log" 2>&1 &
	pid=$!
	pids+=("$pid")
	if ! wait_ready "$pid" "$port"; then
		echo "resourceapi ($name) did not start:" >&2
		tail -n 20 "$work/resourceapi-$name.log" >&2
		exit 1
	fi
	key=$(RESOURCEAPI_DATABASE_URL=$dburl timeout 60 "$bin" apikey create --user "$admin_email" 2>>"$work/resourceapi-$name.log" | tail -n 1)
	printf -v "${name}_url" '%s' "http://127.0.0.1:$port"
	printf -v "${name}_pid" '%s' "$pid"
	printf -v "${name}_pprof" '%s' "$([ -n "$profile" ] && echo "127.0.0.1:$pprof_port" || true)"
	printf -v "${name}_key" '%s' "$key"
	say "resourceapi on $name: 127.0.0.1:$port (pid $pid)"
}

# pg_dsn DB: resourceapi's URL of database DB: over TCP on loopback, or
# over PostgreSQL's Unix socket in the directory BENCH_PG_SOCKET (e.g.
# /var/run/postgresql), which spares each round trip the loopback TCP stack;
# BENCH_PG_PARAMS (e.g. pool_max_conns=64) is added to its query.
pg_dsn() {
	if [ -n "${BENCH_PG_SOCKET:-}" ]; then
		echo "postgres://root@/$1?host=$BENCH_PG_SOCKET&sslmode=disable${BENCH_PG_PARAMS:+&$BENCH_PG_PARAMS}"
	else
		echo "$pg/$1?sslmode=disable${BENCH_PG_PARAMS:+&$BENCH_PG_PARAMS}"
	fi
}

stamp=$(date +%s)_$$
pg_db=resourceapi_peers_$stamp
pgl_db=resourceapi_peers_${stamp}_postgraphile
new_pg_db "$pg_db"
start_resourceapi sqlite "$work/resourceapi.db"
start_resourceapi pg "$(pg_dsn "$pg_db")"

say "seed: $users users with $posts posts each, on SQLite and PostgreSQL"
timeout 600 "$work/peers" seed -url "$sqlite_url" -header "X-API-Key:$sqlite_key" -users "$users" -posts "$posts"
timeout 600 "$work/peers" seed -url "$pg_url" -header "X-API-Key:$pg_key" -users "$users" -posts "$posts"
timeout 300 psql -h 127.0.0.1 -U root -d "$pg_db" -q -c "VACUUM ANALYZE"
if [ -n "$baseline" ]; then
	bpg_db=${pg_db}_baseline
	new_pg_db "$bpg_db"
	start_resourceapi bsqlite "$work/resourceapi-base.db" "$work/resourceapi-base"
	start_resourceapi bpg "$(pg_dsn "$bpg_db")" "$work/resourceapi-base"
	say "seed the baseline $baseline alike"
	timeout 600 "$work/peers" seed -url "$bsqlite_url" -header "X-API-Key:$bsqlite_key" -users "$users" -posts "$posts"
	timeout 600 "$work/peers" seed -url "$bpg_url" -header "X-API-Key:$bpg_key" -users "$users" -posts "$posts"
	timeout 300 psql -h 127.0.0.1 -U root -d "$bpg_db" -q -c "VACUUM ANALYZE"
fi

if [ -z "$no_peers" ]; then
	say "PostGraphile's database: the same users and posts"
	new_pg_db "$pgl_db"
	timeout 60 psql -h 127.0.0.1 -U root -d "$pgl_db" -q <<'SQL'
CREATE TABLE users (
    id    integer PRIMARY KEY,
    name  text    NOT NULL,
    email text    NOT NULL UNIQUE,
    age   integer
);
CREATE TABLE posts (
    id        integer PRIMARY KEY,
    author_id integer NOT NULL REFERENCES users (id),
    title     text    NOT NULL,
    content   text    NOT NULL
);
CREATE INDEX posts_author_id ON posts (author_id);
SQL
	for copy in "users:id, name, email, age" "posts:id, author_id, title, content"; do
		table=${copy%%:*}
		timeout 120 psql -h 127.0.0.1 -U root -d "$pg_db" -q -c "\\copy (SELECT ${copy#*:} FROM $table ORDER BY id) TO STDOUT" |
			timeout 120 psql -h 127.0.0.1 -U root -d "$pgl_db" -q -c "\\copy $table FROM STDIN"
	done
	timeout 300 psql -h 127.0.0.1 -U root -d "$pgl_db" -q -c "VACUUM ANALYZE"

	port=$(free_port)
	jwt_secret=$(head -c 32 /dev/urandom | base64 | tr -d '/+=')
	NODE_ENV=production "$postgraphile_dir/node_modules/.bin/postgraphile" \
		-c "$pg/$pgl_db?sslmode=disable" --host 127.0.0.1 --port "$port" \
		--disable-query-log --jwt-secret "$jwt_secret" >"$work/postgraphile.log" 2>&1 &
	pgl_pid=$!
	pids+=("$pgl_pid")
	wait_listening "$pgl_pid" "$port" || { tail -n 20 "$work/postgraphile.log" >&2; exit 1; }
	pgl_url=http://127.0.0.1:$port
	pgl_token=$("$work/peers" jwt -secret "$jwt_secret")
	say "PostGraphile: 127.0.0.1:$port (pid $pgl_pid)"

	say "PocketBase: $users records"
	port=$(free_port)
	pb_dir=$work/pocketbase
	timeout 60 "$pocketbase" superuser upsert "$admin_email" "$admin_password" --dir "$pb_dir/data" >>"$work/pocketbase.log" 2>&1
	"$pocketbase" serve --http "127.0.0.1:$port" --dir "$pb_dir/data" --hooksDir "$pb_dir/hooks" \
		--migrationsDir "$pb_dir/migrations" --publicDir "$pb_dir/public" --automigrate=false >>"$work/pocketbase.log" 2>&1 &
	pb_pid=$!
	pids+=("$pb_pid")
	wait_listening "$pb_pid" "$port" || { tail -n 20 "$work/pocketbase.log" >&2; exit 1; }
	pb_url=http://127.0.0.1:$port
	pb_token=$(timeout 600 "$work/peers" pocketbase -url "$pb_url" -email "$admin_email" -password "$admin_password" -users "$users")
fi

port=$(free_port)
"$work/bare" -addr "127.0.0.1:$port" 2>>"$work/bare.log" &
bare_pid=$!
pids+=("$bare_pid")
wait_listening "$bare_pid" "$port"
bare_url=http://127.0.0.1:$port

peer_workloads
if [ -n "$no_peers" ]; then
	mine=()
	for w in "${workloads[@]}"; do
		IFS='|' read -r name server rest <<<"$w"
		case $server in pb | pgl) ;; *) mine+=("$w") ;; esac
	done
	workloads=("${mine[@]}")
fi
if [ -n "$baseline" ]; then
	# Each workload of resourceapi, then the same on the baseline.
	all=()
	for w in "${workloads[@]}"; do
		all+=("$w")
		IFS='|' read -r name server rest <<<"$w"
		case $server in sqlite | pg) all+=("base-$name|b$server|$rest") ;; esac
	done
	workloads=("${all[@]}")
fi

selected() { [ -z "$only" ] || [[ ",$only," == *",${1#base-},"* ]]; }

# The floors' databases: plain tables, and resourceapi's schema with the
# data set's number of users (the count, search and index entries a create
# adds to).
floor_clients=${BENCH_FLOOR_CLIENTS:-$((8 * $(nproc)))}
floor_dbs=()
if selected pg-floor || selected pg-floor-schema || selected pg-floor-patch; then
	if ! command -v pgbench >/dev/null; then
		say "no pgbench (Debian's postgresql-client): pg-floor, pg-floor-schema and pg-floor-patch are skipped"
		mine=()
		for w in "${workloads[@]}"; do
			IFS='|' read -r name server rest <<<"$w"
			[ "$server" = floor ] || mine+=("$w")
		done
		workloads=("${mine[@]}")
	else
		say "the floors' databases: plain tables, and resourceapi's schema with $users users"
		floor_plain_db=${pg_db}_floor
		floor_schema_db=${pg_db}_floor_schema
		new_pg_db "$floor_plain_db"
		new_pg_db "$floor_schema_db"
		floor_dbs=("$floor_plain_db" "$floor_schema_db")
		timeout 60 psql -h 127.0.0.1 -U root -d "$floor_plain_db" -q -f bench/pgfloor/plain-setup.sql
		RESOURCEAPI_DATABASE_URL="$pg/$floor_schema_db?sslmode=disable" timeout 300 "$bin" migrate >>"$work/floor.log" 2>&1
		timeout 300 psql -h 127.0.0.1 -U root -d "$floor_schema_db" -q -c "INSERT INTO users (name, email, email_key, age, created_at, updated_at)
			SELECT 'User ' || i, 'user' || i || '@example.com', 'user' || i || '@example.com', 18 + i % 70, now(), now()
			FROM generate_series(1, $users) i" -c "VACUUM ANALYZE"
	fi
fi

# server_of SERVER sets url, pid, auth (a header), db (PostgreSQL database
# whose statistics the run reads, or empty) and pprof.
server_of() {
	pprof=
	db=
	case $1 in
	bare) url=$bare_url pid=$bare_pid auth= ;;
	sqlite) url=$sqlite_url pid=$sqlite_pid auth="X-API-Key: $sqlite_key" pprof=$sqlite_pprof ;;
	pg) url=$pg_url pid=$pg_pid auth="X-API-Key: $pg_key" pprof=$pg_pprof db=$pg_db ;;
	bsqlite) url=$bsqlite_url pid=$bsqlite_pid auth="X-API-Key: $bsqlite_key" ;;
	bpg) url=$bpg_url pid=$bpg_pid auth="X-API-Key: $bpg_key" db=$bpg_db ;;
	pb) url=$pb_url pid=$pb_pid auth="Authorization: $pb_token" ;;
	pgl) url=$pgl_url pid=$pgl_pid auth="Authorization: Bearer $pgl_token" db=$pgl_db ;;
	esac
}

# Before the rounds, each shape once with curl: a 2xx, and for GraphQL data
# without errors; and the search's number of matches.
say "checking every workload once"
fill() { local s=${1//\$\{id\}/42}; s=${s//\$\{pbid\}/u00000000000042}; s=${s//\$\{page\}/7}; s=${s//\$\{age\}/30}; echo "${s//\$\{seq\}/check-$stamp}"; }
for w in "${workloads[@]}"; do
	IFS='|' read -r name server method path body <<<"$w"
	selected "$name" || continue
	[ "$server" != floor ] || continue
	server_of "$server"
	args=(-s -o "$work/check.body" -w '%{http_code}' -X "$method" --max-time 10)
	[ -n "$auth" ] && args+=(-H "$auth")
	[ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$(fill "$body")")
	status=$(curl "${args[@]}" "$url$(fill "$path")")
	if [[ $status != 2* ]] || { [ "$path" = /graphql ] && grep -q '"errors"' "$work/check.body"; }; then
		echo "$name: $method $(fill "$path") answered $status: $(head -c 300 "$work/check.body")" >&2
		exit 1
	fi
done
matches=$(curl -s -H "X-API-Key: $pg_key" "$pg_url/api/users?q=abc&limit=1" | sed -n 's/.*"total":\([0-9]*\).*/\1/p')
say "q=abc matches $matches users on PostgreSQL"

# measure NAME SERVER METHOD PATH BODY ROUND: a warm-up, then the measured
# run, appended to results.txt.
measure() {
	local name=$1 method=$3 path=$4 body=$5 round=$6
	local hdr=() s0 s1 p0 p1 b0 b1 t0 t1 st0 st1 a0 a1 wrk_ms line prof_pid=
	server_of "$2"
	[ -n "$auth" ] && hdr+=(-H "$auth")
	[ -n "$body" ] && hdr+=(-H 'Content-Type: application/json')
	export WRK_METHOD=$method WRK_PATH=$path WRK_BODY=$body WRK_IDS=$users WRK_PAGES=$((users / 20))
	WRK_TAG=w$(date +%s%N) timeout 60 wrk -t1 -c"$conns" -d"$warmup" --timeout 5s -s bench/peers.lua ${hdr[@]+"${hdr[@]}"} "$url" >/dev/null
	if [ -n "$pprof" ] && [ "$round" = 1 ]; then
		local secs=${duration%s}
		curl -s --max-time $((secs + 30)) -o "$out/profiles/$name.pprof" "http://$pprof/debug/pprof/profile?seconds=$((secs > 3 ? secs - 2 : 1))" &
		prof_pid=$!
	fi
	a0=$([ -n "$pprof" ] && curl -s "http://$pprof/debug/allocs-count" || echo "-1 -1")
	st0=$([ -n "$db" ] && pg_stats "$db" || echo "-1 -1")
	s0=$(ticks "$pid") p0=$(pg_ticks) b0=$(busy_ticks) t0=$(date +%s%N)
	TIMEFORMAT='%3U %3S'
	{ time WRK_TAG=m$(date +%s%N) timeout 120 wrk -t1 -c"$conns" -d"$duration" --timeout 5s -s bench/peers.lua \
		${hdr[@]+"${hdr[@]}"} "$url" >"$work/wrk.out"; } 2>"$work/wrk.time"
	b1=$(busy_ticks) t1=$(date +%s%N) s1=$(ticks "$pid") p1=$(pg_ticks)
	st1=$([ -n "$db" ] && pg_stats "$db" || echo "-1 -1")
	a1=$([ -n "$pprof" ] && curl -s "http://$pprof/debug/allocs-count" || echo "-1 -1")
	[ -n "$prof_pid" ] && wait "$prof_pid"
	wrk_ms=$(awk '{ printf "%d", ($1 + $2) * 1000 }' "$work/wrk.time")
	line=$(grep '^WRK ' "$work/wrk.out" | cut -d' ' -f2-)
	read -r ss0 xa0 <<<"$st0"
	read -r ss1 xa1 <<<"$st1"
	read -r ao0 ab0 <<<"$a0"
	read -r ao1 ab1 <<<"$a1"
	local pg_part= stats_part= alloc_part=
	if [ -n "$db" ] && [ "$p0" != -1 ] && [ "$p1" != -1 ]; then pg_part="pg_ticks=$((p1 - p0))"; fi
	if [ "$ss0" != -1 ]; then stats_part="sessions=$((ss1 - ss0)) xacts=$((xa1 - xa0))"; fi
	if [ "$ao0" != -1 ]; then alloc_part="allocs=$((ao1 - ao0)) alloc_bytes=$((ab1 - ab0))"; fi
	echo "round=$round name=$name $line server_ticks=$((s1 - s0)) $pg_part busy_ticks=$((b1 - b0)) busy_ms=$(((t1 - t0) / 1000000)) cores=$(nproc) clk_tck=$clk_tck wrk_ms=$wrk_ms $stats_part $alloc_part load=$(load_average | tr ' ' _)" >>"$out/results.txt"
	printf '%-15s round %s: %s\n' "$name" "$round" "$(tail -n 1 "$out/results.txt" | grep -o 'requests=[0-9]*\|p99_us=[0-9]*\|status=[0-9]*\|load=[^ ]*' | tr '\n' ' ')"
}

# measure_floor NAME SCRIPT ROUND: pgbench with bench/pgfloor/SCRIPT.sql on
# its database, a warm-up, then the measured run, appended to results.txt
# like measure's (pgbench's own CPU as the load generator's; the latencies
# from its per-transaction log).
measure_floor() {
	local name=$1 script=bench/pgfloor/$2.sql round=$3 db p0 p1 b0 b1 t0 t1 st0 st1 done failed lat
	case $2 in plain) db=$floor_plain_db ;; *) db=$floor_schema_db ;; esac
	local args=(-h 127.0.0.1 -U root -n -M prepared -c "$floor_clients" -j 1 -D "users=$users" -f "$script" "$db")
	timeout 60 pgbench "${args[@]}" -T "${warmup%s}" >/dev/null 2>>"$work/floor.log"
	rm -f "$work"/pgbench_log.*
	st0=$(pg_stats "$db")
	p0=$(pg_ticks) b0=$(busy_ticks) t0=$(date +%s%N)
	TIMEFORMAT='%3U %3S'
	{ time timeout 120 pgbench "${args[@]}" -T "${duration%s}" -l --log-prefix="$work/pgbench_log" >"$work/pgbench.out" 2>>"$work/floor.log"; } 2>"$work/wrk.time"
	b1=$(busy_ticks) t1=$(date +%s%N) p1=$(pg_ticks)
	st1=$(pg_stats "$db")
	done=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/pgbench.out")
	failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$work/pgbench.out")
	# Each log line: client, transaction, latency (µs), script, time.
	lat=$(cat "$work"/pgbench_log.* | awk '{ print $3 }' | sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { print "0 0 0"; exit } i = int(NR * 0.99 + 0.5); if (i < 1) i = 1; print v[int((NR + 1) / 2)], v[i], v[NR] }')
	read -r p50 p99 pmax <<<"$lat"
	read -r ss0 xa0 <<<"$st0"
	read -r ss1 xa1 <<<"$st1"
	echo "round=$round name=$name requests=${done:-0} duration_us=$(((t1 - t0) / 1000)) p50_us=$p50 p99_us=$p99 max_us=$pmax status=${failed:-0} server_ticks=0 pg_ticks=$((p1 - p0)) busy_ticks=$((b1 - b0)) busy_ms=$(((t1 - t0) / 1000000)) cores=$(nproc) clk_tck=$clk_tck wrk_ms=$(awk '{ printf "%d", ($1 + $2) * 1000 }' "$work/wrk.time") sessions=$((ss1 - ss0)) xacts=$((xa1 - xa0)) load=$(load_average | tr ' ' _)" >>"$out/results.txt"
	printf '%-15s round %s: %s\n' "$name" "$round" "$(tail -n 1 "$out/results.txt" | grep -o 'requests=[0-9]*\|p99_us=[0-9]*\|status=[0-9]*\|load=[^ ]*' | tr '\n' ' ')"
}

say "load: wrk -t1 -c$conns, $warmup warm-up, $duration measured, $rounds rounds"
for round in $(seq "$rounds"); do
	# Each round's writes (pg-post, pg-patch) leave thousands of new and
	# dead row versions, and this machine's PostgreSQL runs with autovacuum
	# off: without a VACUUM the next round's deep pages read the heap for
	# most index entries they skip (4-6x PostgreSQL's CPU a page;
	# docs/performance.md, "pagerand"). A VACUUM ANALYZE before every round
	# stands in for the autovacuum a production server runs.
	if [ "$round" -gt 1 ]; then
		timeout 300 psql -h 127.0.0.1 -U root -d "$pg_db" -q -c "VACUUM ANALYZE"
		[ -z "$baseline" ] || timeout 300 psql -h 127.0.0.1 -U root -d "$bpg_db" -q -c "VACUUM ANALYZE"
		for db in ${floor_dbs[@]+"${floor_dbs[@]}"}; do timeout 300 psql -h 127.0.0.1 -U root -d "$db" -q -c "VACUUM ANALYZE"; done
	fi
	say "round $round: load average $(load_average)"
	echo "# round $round: $(uptime)" >>"$out/results.txt"
	for w in "${workloads[@]}"; do
		IFS='|' read -r name server method path body <<<"$w"
		selected "$name" || continue
		if [ "$server" = floor ]; then
			measure_floor "$name" "$path" "$round"
			continue
		fi
		measure "$name" "$server" "$method" "$path" "$body" "$round"
	done
done
echo "# end: $(uptime)" >>"$out/results.txt"

say "end: $(uptime)"
"$work/peers" table "$out/results.txt" | tee "$out/table.txt"
