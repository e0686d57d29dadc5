#!/bin/sh
# Lints the OpenAPI document the server publishes (docs/api.md#openapi-document) with Redocly
# (its recommended rules) and Spectral (the `spectral:oas` ruleset). Both are fetched by npx
# into its cache, never into package.json, so the first run needs the network.
# Usage: sh scripts/lint-openapi.sh   (exit status 1 when either linter reports an error)
set -eu
cd "$(dirname "$0")/.."
node node_modules/typescript/bin/tsc -p tsconfig.build.json
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
node scripts/dump-openapi.mjs "$TMP/openapi.json"
printf 'extends: ["spectral:oas"]\n' > "$TMP/spectral.yaml"
status=0
echo "== redocly lint (recommended)"
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true npx --yes @redocly/cli@latest lint --format=stylish "$TMP/openapi.json" || status=1
echo "== spectral lint (spectral:oas)"
npx --yes @stoplight/spectral-cli lint --ruleset "$TMP/spectral.yaml" "$TMP/openapi.json" || status=1
exit $status
