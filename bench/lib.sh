# bench/lib.sh: what the bench scripts share. Source it from bash with
# "set -euo pipefail"; it defines functions only.

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

# wait_ready PID PORT waits until resourceapi (process PID) on PORT answers
# /readyz with 200: it binds its port before it makes the first admin
# (which the scripts use at once), and serves only after.
wait_ready() {
	local _
	for _ in $(seq 600); do
		if ! kill -0 "$1" 2>/dev/null; then return 1; fi
		if curl -fsS -o /dev/null "http://127.0.0.1:$2/readyz" 2>/dev/null; then return 0; fi
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

# new_db ENGINE sets dburl to a fresh database: a file in $work for sqlite,
# a new database on the local PostgreSQL for postgres (its name in pgdb, for
# drop_db).
new_db() {
	case $1 in
	sqlite)
		dburl="$work/resourceapi.db"
		;;
	postgres)
		pgdb="resourceapi_bench_$(date +%s)_$$"
		psql -h 127.0.0.1 -U root -d test -q -c "create database $pgdb"
		dburl="postgres://root@127.0.0.1:5432/$pgdb?sslmode=disable"
		;;
	*)
		return 2
		;;
	esac
}

# drop_db drops the database new_db made on PostgreSQL, unless BENCH_KEEP is
# set.
drop_db() {
	if [ -n "${pgdb:-}" ] && [ -z "${BENCH_KEEP:-}" ]; then
		psql -h 127.0.0.1 -U root -d test -q -c "drop database if exists $pgdb" || true
	fi
}

# ratio FILE A B TARGET prints scenario A's req/s against scenario B's, both
# from load's text lines in FILE, with the TARGET percentage (none when 0).
ratio() {
	local a b
	a=$(rps "$1" "$2")
	b=$(rps "$1" "$3")
	if [ -n "$a" ] && [ -n "$b" ]; then
		awk -v a="$a" -v b="$b" -v x="$2" -v y="$3" -v t="$4" \
			'BEGIN { printf "== %s vs %s: %.0f vs %.0f req/s (%.0f%%", x, y, a, b, 100 * a / b; if (t) printf ", target %d%%", t; print ")" }'
	fi
}

# start_server BINARY starts resourceapi serve from BINARY on a free loopback
# port with the database of new_db ($dburl), a known first admin
# ($admin_email, $admin_password) and rate limiting off unless
# RESOURCEAPI_RATE_LIMIT says otherwise (a run would otherwise measure 429s);
# the access log stays at the server's default, as in production, but goes
# to $work/server.log. It sets server_pid and base, and exits the script if
# the server does not start.
start_server() {
	port=$(free_port)
	admin_email=admin@bench.example
	admin_password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
	echo "== $(basename "$1") on 127.0.0.1:$port, $engine, log $work/server.log"
	RESOURCEAPI_ADDR=127.0.0.1:$port \
		RESOURCEAPI_DATABASE_URL=$dburl \
		RESOURCEAPI_ADMIN_EMAIL=$admin_email \
		RESOURCEAPI_ADMIN_PASSWORD=$admin_password \
		RESOURCEAPI_RATE_LIMIT=${RESOURCEAPI_RATE_LIMIT:-0} \
		"$1" serve >"$work/server.log" 2>&1 &
	server_pid=$!
	if ! wait_ready "$server_pid" "$port"; then
		echo "resourceapi did not start:" >&2
		cat "$work/server.log" >&2
		exit 1
	fi
	base=http://127.0.0.1:$port
}

# peer_workloads sets workloads to the shapes bench/peers.sh measures (and
# bench/statements.sh traces), in the order each round runs them (writes
# last, so that the reads of every round see the same rows), each
# "name|server|method|path|body". Servers: bare, sqlite and pg (resourceapi),
# pb (PocketBase), pgl (PostGraphile), and floor: pgbench on PostgreSQL
# alone, running the script bench/pgfloor/PATH.sql (no HTTP, no resourceapi
# process; see bench/peers.sh). See bench/peers.lua for ${id}, ${pbid},
# ${page}, ${age} and ${seq}.
peer_workloads() {
	user_post='{"name":"Load ${seq}","email":"load-${seq}@load.test","age":30}'
	gql_get='{"query":"query($id: ID!) { user(id: $id) { name email } }","variables":{"id":"${id}"}}'
	workloads=(
		"bare|bare|GET|/api/users/\${id}|"
		"pg-get|pg|GET|/api/users/\${id}|"
		"pg-gql-get|pg|POST|/graphql|$gql_get"
		'pgl-get|pgl|POST|/graphql|{"query":"query($id: Int!) { userById(id: $id) { name email } }","variables":{"id":${id}}}'
		'pg-gql-list|pg|POST|/graphql|{"query":"{ users(limit: 20) { id name posts { title } } }"}'
		'pgl-list|pgl|POST|/graphql|{"query":"{ allUsers(first: 20, orderBy: PRIMARY_KEY_ASC) { nodes { id name postsByAuthorId { nodes { title } } } } }"}'
		"pg-page3|pg|GET|/api/users?page=3&limit=20|"
		"pg-page-rand|pg|GET|/api/users?page=\${page}&limit=20|"
		"pg-search|pg|GET|/api/users?q=abc&sort=name&order=desc&limit=20|"
		"pg-search-none|pg|GET|/api/users?q=qzx&sort=name&order=desc&limit=20|"
		"pg-search-all|pg|GET|/api/users?q=example&sort=name&order=desc&limit=20|"
		"sqlite-get|sqlite|GET|/api/users/\${id}|"
		"pb-get|pb|GET|/api/collections/people/records/\${pbid}|"
		"sqlite-gql-get|sqlite|POST|/graphql|$gql_get"
		'sqlite-gql-list|sqlite|POST|/graphql|{"query":"{ users(limit: 20) { id name posts { title } } }"}'
		"sqlite-page3|sqlite|GET|/api/users?page=3&limit=20|"
		"pg-floor|floor|-|plain|"
		"pg-floor-schema|floor|-|schema|"
		"pg-post|pg|POST|/api/users|$user_post"
		"pg-patch|pg|PATCH|/api/users/\${id}|"'{"age":${age}}'
		"pg-floor-patch|floor|-|schema-patch|"
		"sqlite-post|sqlite|POST|/api/users|$user_post"
		"pb-post|pb|POST|/api/collections/people/records|$user_post"
	)
}
