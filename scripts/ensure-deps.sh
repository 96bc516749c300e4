#!/usr/bin/env bash
# Installs npm dependencies when missing or older than the lock file (Bun itself comes from npm).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x node_modules/.bin/bun ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
