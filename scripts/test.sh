#!/usr/bin/env bash
# The one test command: type check, lint/format check, dependency rules, unit + integration (bun test),
# browser (Playwright).
# Ends with one line "N passed, N failed" summing every runner.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh || exit 1
export PATH="$PWD/node_modules/.bin:$PATH"
# the demo's forex trades at weekends too (servers the suites spawn seed it so): no test depends on the day
export DEMO_WEEKEND_TRADING=1
passed=0
failed=0
status=0

current=""
step() { echo; echo "=== $1"; current="$1"; }
log=$(mktemp)
failures=$(mktemp)

# bun test on the given paths into a log of its own (so that two can run at once), its exit code beside it
bun_run() {
  local out=$1; shift
  bun test --timeout 60000 "$@" >"$out" 2>&1
  echo $? >"$out.rc"
}

# prints a finished run's log and adds its pass and fail counts
bun_collect() {
  local out=$1 rc p f
  cat "$out"
  rc=$(cat "$out.rc")
  p=$(grep -Eo '^ *[0-9]+ pass$' "$out" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  f=$(grep -Eo '^ *[0-9]+ fail$' "$out" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f)); [ "$rc" -eq 0 ] || status=1
  grep -E '^\(fail\)' "$out" | sed "s|^|[$current] |" >>"$failures" || true
  rm -f "$out" "$out.rc"
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

# Suites that mostly wait (a dependency stopped for 45 s, a 60 s load at a fixed rate, wrangler's start)
# run beside the ones that mostly compute: the two cores are both busy and the command ends minutes sooner.
# Each pair is independent: its own servers on free ports, its own databases, nothing shared but the CPU.
waiting=(tests/integration/faults.test.ts tests/integration/scale-soak.test.ts)
mapfile -t computing < <(find src tests/unit tests/integration -name '*.test.ts' | sort | grep -v -F -x "${waiting[@]/#/-e}")
runs=$(mktemp -d)

step "bun test (unit and integration; beside it: the fault and soak suites of the scale-out shape)"
bun_run "$runs/waiting" "${waiting[@]}" &
bun_run "$runs/computing" "${computing[@]}"
wait
bun_collect "$runs/computing"
current="bun test: faults and soak"
bun_collect "$runs/waiting"

step "bun test: the integration suites again on a real sqld (TEST_DATABASE=sqld); beside it, the Workers entry under wrangler dev (workerd) on sqld and the Upstash REST bridge"
# the suites that exercise the app through makeTestApp mark themselves with a first line
# "// runs on sqld too"; those about the local file adapter itself (WAL, checkpointer), real server
# processes or sqld already do not
mapfile -t sqld_suites < <(grep -l '^// runs on sqld too' tests/integration/*.test.ts)
echo "${#sqld_suites[@]} suites on sqld"
bun_run "$runs/workers" tests/workers &
TEST_DATABASE=sqld bun_run "$runs/sqld" "${sqld_suites[@]}"
wait
bun_collect "$runs/sqld"
current="bun test: the Workers entry"
bun_collect "$runs/workers"
rmdir "$runs"

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
