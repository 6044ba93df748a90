#!/usr/bin/env bash
# Checks /graphql with third-party clients: builds the binary, starts it on a
# free port with a fresh SQLite database and an admin API key made with the
# command line, then runs the graphql-http server audit (audit.mjs) and,
# unless --audit-only is given, a graphql-ws subscription (subscribe.mjs)
# that receives userCreated after a GraphQL create.
# Installs the clients with npm ci when node_modules is missing. Exits
# non-zero when any check fails.
set -euo pipefail
cd "$(dirname "$0")"
only_audit=false
[ "${1:-}" = "--audit-only" ] && only_audit=true
if [ ! -d node_modules ]; then
	npm ci --no-audit --no-fund >/dev/null
fi
work=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
(cd ../.. && go build -o "$work/resourceapi" ./cmd/resourceapi)
export RESOURCEAPI_DATABASE_URL="$work/db.sqlite"
export RESOURCEAPI_ADMIN_EMAIL=admin@clients.example
export RESOURCEAPI_ADMIN_PASSWORD=clients-check-password
export RESOURCEAPI_ACCESS_LOG=false
export RESOURCEAPI_RATE_LIMIT=0
"$work/resourceapi" migrate 2>/dev/null
RESOURCEAPI_ADDR=127.0.0.1:0 "$work/resourceapi" serve 2>"$work/server.log" &
pid=$!
addr=""
for _ in $(seq 100); do
	addr=$(sed -n 's/.*msg=listening addr=\([^ ]*\).*/\1/p' "$work/server.log" | head -1)
	[ -n "$addr" ] && break
	kill -0 "$pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
	sleep 0.1
done
[ -n "$addr" ] || { echo "the server did not start" >&2; cat "$work/server.log" >&2; exit 1; }
key=$("$work/resourceapi" apikey create --user "$RESOURCEAPI_ADMIN_EMAIL" | tail -1)
echo "server at http://$addr"
status=0
node audit.mjs "http://$addr/graphql" || status=1
if ! $only_audit; then
	node subscribe.mjs "ws://$addr/graphql" "$key" || status=1
fi
exit $status
