#!/usr/bin/env bash
# Validates OpenAPI documents with @apidevtools/swagger-parser (the version
# pinned in package-lock.json), a second validator beside the Go tests'
# kin-openapi. Usage: validate.sh openapi.json...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
docs=()
for f in "$@"; do
	docs+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here/package.json" "$here/package-lock.json" "$tmp/"
(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
cd "$tmp" && node --input-type=module -e '
import SwaggerParser from "@apidevtools/swagger-parser";
let failed = false;
for (const file of process.argv.slice(1)) {
  try {
    const api = await SwaggerParser.validate(file);
    console.log(`${file}: valid OpenAPI ${api.openapi}, ${Object.keys(api.paths).length} paths`);
  } catch (err) {
    console.error(`${file}: ${err.message}`);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);
' "${docs[@]}"
