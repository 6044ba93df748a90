#!/usr/bin/env bash
# Rebuilds GraphiQL into graph/graphiql/, which the binary embeds (package
# graph, go:embed): the npm packages of package-lock.json (installed with
# npm ci when node_modules is missing), bundled and minified by esbuild into
# one script and one stylesheet, with index.html beside them. Nothing in the
# result loads from outside the server: fonts and images are data: URIs.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -d node_modules ]; then
	npm ci --no-audit --no-fund
fi
out=../../graph/graphiql
rm -rf "$out"
mkdir -p "$out"
./node_modules/.bin/esbuild index.jsx --bundle --minify --format=iife --target=es2020 \
	--define:process.env.NODE_ENV='"production"' --legal-comments=none \
	--loader:.woff2=dataurl --loader:.png=dataurl --loader:.svg=dataurl \
	--outfile="$out/graphiql.js"
cp index.html "$out/index.html"
# Fail the build if anything would load from elsewhere.
if grep -Eo '(src|href)=["'"'"']https?://|url\((["'"'"'])?https?://|@import +["'"'"']?https?://' "$out"/*.css "$out"/*.html; then
	echo "the bundle refers to another origin" >&2
	exit 1
fi
ls -l "$out"
