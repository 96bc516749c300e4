#!/usr/bin/env bash
# Installs npm dependencies when missing or older than the lock file (Bun itself comes from npm).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x node_modules/.bin/bun ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
# the affiliate cabinet's front end (web/affiliate) is built from its committed sources
if [ ! -f web/affiliate/dist/bundle.js ] || [ -n "$(find web/affiliate/src -newer web/affiliate/dist/bundle.js -print -quit)" ]; then
  node_modules/.bin/bun scripts/build-web.ts
fi
