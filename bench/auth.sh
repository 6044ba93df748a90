#!/usr/bin/env bash
# bench/auth.sh [sqlite|postgres]: what authentication costs. Builds
# resourceapi with the benchnoauth tag, whose only difference is that a
# request without a credential is served as the first admin instead of
# refused, starts it on a fresh database, seeds users, and runs the get
# scenario (one user by a random id) in one server process with no
# credential (the baseline), an API key, a JWT from the password grant and
# HTTP Basic, then the token endpoint's password and client credentials
# grants. It ends with each credential's req/s against the baseline.
#
# Settings (environment): BENCH_DURATION (10s), BENCH_CONNS (64),
# BENCH_USERS (10000), BENCH_KEEP=1 keeps the temporary directory and the
# PostgreSQL database. RESOURCEAPI_* variables pass through to the server.
# Never deploy a benchnoauth binary: it serves anyone as an admin.
set -euo pipefail
cd "$(dirname "$0")/.."

engine=${1:-sqlite}
duration=${BENCH_DURATION:-10s}
conns=${BENCH_CONNS:-64}
users=${BENCH_USERS:-10000}

work=$(mktemp -d /tmp/resourceapi-auth.XXXXXX)
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
echo "== build (-tags benchnoauth)"
go build -tags benchnoauth -o "$work/resourceapi" ./cmd/resourceapi
go build -o "$work/load" ./bench/load

if ! new_db "$engine"; then
	echo "usage: $0 [sqlite|postgres]" >&2
	exit 2
fi

start_server "$work/resourceapi"

# Credentials, all of the first admin: an API key and an OAuth client made
# with the CLI beside the running server, a JWT from the password grant.
cli() { RESOURCEAPI_DATABASE_URL=$dburl "$work/resourceapi" "$@" 2>>"$work/server.log"; }
key=$(cli apikey create --user "$admin_email" | tail -n 1)
client=$(cli client create --name bench --grant password --grant client_credentials)
client_id=$(awk '$1 == "client_id:" { print $2 }' <<<"$client")
client_secret=$(awk '$1 == "client_secret:" { print $2 }' <<<"$client")
jwt=$(curl -sf "$base/oauth/token" -d grant_type=password --data-urlencode "username=$admin_email" \
	--data-urlencode "password=$admin_password" -d client_id="$client_id" -d client_secret="$client_secret" |
	sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
if [ -z "$key" ] || [ -z "$client_id" ] || [ -z "$client_secret" ] || [ -z "$jwt" ]; then
	echo "could not make the credentials; see $work/server.log" >&2
	exit 1
fi
basic=$(printf '%s:%s' "$admin_email" "$admin_password" | base64 | tr -d '\n')

echo "== seed: $users users"
"$work/load" -url "$base" -c "$conns" -d 1ms -seed "$users" -header "X-API-Key:$key" -scenario get >/dev/null
if [ -n "${pgdb:-}" ]; then
	psql -h 127.0.0.1 -U root -d "$pgdb" -q -c "VACUUM ANALYZE"
fi

echo "== load: c=$conns d=$duration, $users users"
: >"$work/auth.txt"
# run NAME [FLAGS...] runs one scenario and names its line NAME.
run() {
	local name=$1
	shift
	"$work/load" -url "$base" -c "$conns" -d "$duration" -users "$users" "$@" |
		awk -v n="$name" '{ $1 = sprintf("%-14s", n); print }' | tee -a "$work/auth.txt"
}
run none -scenario get
run apikey -header "X-API-Key:$key" -scenario get
run jwt -header "Authorization:Bearer $jwt" -scenario get
run basic -header "Authorization:Basic $basic" -scenario get
run token-password -client "$client_id:$client_secret" -login "$admin_email:$admin_password" -scenario token-password
run token-client -client "$client_id:$client_secret" -scenario token-client
# The baseline again: how much the machine drifted over the run.
run none-again -scenario get
echo "resourceapi memory after load: $(memory "$server_pid")"

# The targets of issue 6, each against the unauthenticated GET of the same
# run: API key and JWT at least 85% of it, HTTP Basic at least 70%.
ratio "$work/auth.txt" apikey none 85
ratio "$work/auth.txt" jwt none 85
ratio "$work/auth.txt" basic none 70
