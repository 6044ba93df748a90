#!/usr/bin/env bash
# Validates an OpenAPI document with @apidevtools/swagger-parser (the
# version pinned in package-lock.json), a second validator beside the Go
# tests' kin-openapi. Usage: validate.sh openapi.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
doc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here/package.json" "$here/package-lock.json" "$tmp/"
(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
cd "$tmp" && node --input-type=module -e '
import SwaggerParser from "@apidevtools/swagger-parser";
const api = await SwaggerParser.validate(process.argv[1]);
console.log(`${process.argv[1]}: valid OpenAPI ${api.openapi}, ${Object.keys(api.paths).length} paths`);
' "$doc"
