#!/usr/bin/env bash
# The one test command: type check, lint/format check, dependency rules, unit + integration (bun test),
# browser (Playwright).
# Ends with one line "N passed, N failed" summing every runner.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh || exit 1
export PATH="$PWD/node_modules/.bin:$PATH"
passed=0
failed=0
status=0

current=""
step() { echo; echo "=== $1"; current="$1"; }
log=$(mktemp)
failures=$(mktemp)

# bun test on the given paths; adds its pass and fail counts
bun_tests() {
  bun test --timeout 60000 "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]} p f
  p=$(grep -Eo '^ *[0-9]+ pass$' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  f=$(grep -Eo '^ *[0-9]+ fail$' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f)); [ "$rc" -eq 0 ] || status=1
  grep -E '^\(fail\)' "$log" | sed "s|^|[$current] |" >>"$failures" || true
}

step "tsc --noEmit"
if tsc --noEmit; then passed=$((passed + 1)); else failed=$((failed + 1)); status=1; echo "[tsc] type errors" >>"$failures"; fi

step "biome check"
if biome check --error-on-warnings .; then passed=$((passed + 1)); else failed=$((failed + 1)); status=1; echo "[biome] findings" >>"$failures"; fi

step "dependency rules (.dependency-cruiser.cjs)"
# dependency-cruiser wants Node 22+; Bun runs it (the machine's node may be older)
if bun node_modules/dependency-cruiser/bin/dependency-cruiser.mjs src --config .dependency-cruiser.cjs --output-type err &&
  bun scripts/kernel-names.ts; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); status=1; echo "[dependency rules] violations" >>"$failures"
fi

step "bun test"
bun_tests src tests/unit tests/integration

step "bun test: the integration suites again on a real sqld (TEST_DATABASE=sqld)"
# the suites that exercise the app through makeTestApp mark themselves with a first line
# "// runs on sqld too"; those about the local file adapter itself (WAL, checkpointer), real server
# processes or sqld already do not
mapfile -t sqld_suites < <(grep -l '^// runs on sqld too' tests/integration/*.test.ts)
echo "${#sqld_suites[@]} suites"
TEST_DATABASE=sqld bun_tests "${sqld_suites[@]}"

step "bun test: the Workers entry under wrangler dev (workerd), on sqld and the Upstash REST bridge"
bun_tests tests/workers

step "playwright test"
playwright test 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
p=$(grep -Eo '^ *[0-9]+ passed' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
f=$(grep -Eo '^ *[0-9]+ failed' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
passed=$((passed + p)); failed=$((failed + f)); [ "$rc" -eq 0 ] || status=1
grep -E '^ +[0-9]+\) ' "$log" | sed "s|^ *|[playwright] |" >>"$failures" || true
rm -f "$log"

# what failed, repeated at the end so that the tail of a CI log names it
if [ -s "$failures" ]; then echo; echo "failed:"; sort -u "$failures"; fi
rm -f "$failures"
echo
echo "${passed} passed, ${failed} failed"
exit $status
