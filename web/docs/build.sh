#!/usr/bin/env bash
# Rebuilds the documentation page's copy of Swagger UI (http/docs) from the
# swagger-ui-dist version pinned in package-lock.json. Run it after changing
# that version, and commit what it changes in http/docs; the server embeds
# that folder. The page's own files, http/docs/index.html, init.js and
# page.css, are edited by hand.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../../http/docs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here/package.json" "$here/package-lock.json" "$tmp/"
(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
node "$here/build.mjs" "$tmp/node_modules/swagger-ui-dist" "$out"
ls -l "$out"
