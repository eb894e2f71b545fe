#!/usr/bin/env bash
# npm test: installs what is missing, builds every variant and runs every
# suite, then prints a summary. Suites:
#   native  Catch2 via CTest, Release, every compiled Highway target
#   asan    the same suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   wasm    the same suite compiled to WebAssembly (SIMD128), run under node
#   node    the npm package (dist/): node:test harness in tests/js, including
#           the pack-and-install tests (Node ESM/CJS, import map page, Vite app)
#   browser the web page (web/, built by Vite) in headless Chromium, Firefox ESR
#           and WebKitGTK, tests/browser
#   fuzz    the libFuzzer target for ATTNKIT_FUZZ_SECONDS (default 30)
#   format  clang-format and Prettier leave every source as it is
#           (scripts/format.sh --check)
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1

declare -a names results times
total_pass=0
total_fail=0

# Sets cpu to the CPU seconds (user + system) of this script's finished
# children so far: the machine's work (on two cores the run takes at least
# half of it). `times` runs in this shell: a subshell, $(...) or a pipeline,
# has no children.
cpu=0
cpu_seconds() {
  times >build/times.txt
  cpu=$(awk 'END { t = 0; for (i = 1; i <= NF; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] } printf "%d", t }' \
    build/times.txt)
}

# Each suite's build and run since the last suite was recorded: wall and CPU seconds.
suite_start=$SECONDS
suite_cpu=0
record() {
  cpu_seconds
  names+=("$1"); results+=("$2"); times+=("$((SECONDS - suite_start))s, CPU $((cpu - suite_cpu))s")
  suite_start=$SECONDS; suite_cpu=$cpu
}

# Runs build/$1's CTest suite into the log $2.
ctest_suite() {
  # glibc fills each allocation with a byte pattern: a kernel that reads a
  # workspace it never wrote (they are not zeroed) gets garbage, not zeros.
  MALLOC_PERTURB_=165 ctest --test-dir "build/$1" --output-on-failure -j"$(nproc)" >"$2" 2>&1
}

# Records the counts of the CTest log $2 as suite $1.
record_ctest() {
  local line pass=0 fail=0
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$2" | tail -1)
  if [[ $line =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    fail=${BASH_REMATCH[1]}
    pass=$((BASH_REMATCH[2] - fail))
  else
    fail=1  # ctest found no tests or did not finish
  fi
  record "$1" "$pass passed, $fail failed"
  total_pass=$((total_pass + pass)); total_fail=$((total_fail + fail))
}

# Builds and runs build/$1's CTest suite and records its counts.
run_ctest() {
  local variant=$1 log="build/ctest-$1.log"
  echo "== test $variant"
  if ! bash scripts/build.sh "$variant"; then
    record "$variant" "BUILD FAILED"; total_fail=$((total_fail + 1)); return
  fi
  ctest_suite "$variant" "$log"
  cat "$log"
  record_ctest "$variant" "$log"
}

# Test files run at once: the cores, at least 2, at most 4.
test_files_at_once() {
  local n
  n=$(nproc)
  echo $((n < 2 ? 2 : n > 4 ? 4 : n))
}

# Runs `node --test` on a folder and records its counts (TAP "# pass N").
run_node() {
  local suite=$1 dir=$2 log="build/node-$1.tap"
  echo "== test $suite"
  # Files side by side (Node's default, one less than the cores, is one file
  # on two cores): the browser files wait on pages more than they compute, and
  # the sanitizer's build takes what they leave.
  node --test --test-concurrency="$(test_files_at_once)" \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$log" "$dir"
  local pass fail cancelled
  pass=$(grep -E '^# pass [0-9]+' "$log" | tail -1 | awk '{print $3}')
  fail=$(grep -E '^# fail [0-9]+' "$log" | tail -1 | awk '{print $3}')
  # A test cancelled (its suite's hook failed, or its file ended early) did not pass.
  cancelled=$(grep -E '^# cancelled [0-9]+' "$log" | tail -1 | awk '{print $3}')
  [[ -n $pass && -n $fail ]] || { pass=0; fail=1; }
  fail=$((fail + ${cancelled:-0}))
  [[ $pass -gt 0 ]] || fail=$((fail + 1))  # a suite that ran nothing has failed
  record "$suite" "$pass passed, $fail failed"
  total_pass=$((total_pass + pass)); total_fail=$((total_fail + fail))
}

# The sanitizer build is the longest (clang compiling the kernels with ASan
# and UBSan): it runs in the background at low
# priority from the start, filling the cores the other suites leave idle, and
# its tests run there as soon as it is done (the same priority: the other
# suites' pages are never slowed by them); their counts are read at the end.
mkdir -p build
asan_build_start=$SECONDS
(
  renice -n 15 -p "$BASHPID" >/dev/null
  bash scripts/build.sh asan >build/asan-build.log 2>&1 || exit 1
  echo "asan build finished $((SECONDS - asan_build_start))s after it started" >>build/asan-build.log
  ctest_suite asan build/ctest-asan.log
  exit 0
) &
asan_pid=$!

echo "== test format"
if bash scripts/format.sh --check; then
  record format "1 passed, 0 failed"; total_pass=$((total_pass + 1))
else
  record format "0 passed, 1 failed"; total_fail=$((total_fail + 1))
fi

run_ctest native
run_ctest wasm


if bash scripts/build.sh package; then
  run_node node tests/js
  echo "== build web"
  # Vite strips types without checking them: tsc checks the page's TypeScript first.
  if npx tsc --noEmit -p web/tsconfig.json && npx vite build web --logLevel warn; then
    run_node browser tests/browser
  else
    record browser "BUILD FAILED"; total_fail=$((total_fail + 1))
  fi
else
  record node "BUILD FAILED"; total_fail=$((total_fail + 1))
fi

# The sanitizer suite: built and run in the background (see above).
echo "== test asan (in the background from ${asan_build_start}s into the run)"
if wait "$asan_pid"; then
  tail -1 build/asan-build.log
  cat build/ctest-asan.log
  record_ctest asan build/ctest-asan.log
else
  tail -40 build/asan-build.log
  record asan "BUILD FAILED"; total_fail=$((total_fail + 1))
fi

echo "== test fuzz"
if bash scripts/fuzz.sh "${ATTNKIT_FUZZ_SECONDS:-30}"; then
  record fuzz "1 passed, 0 failed"; total_pass=$((total_pass + 1))
else
  record fuzz "0 passed, 1 failed"; total_fail=$((total_fail + 1))
fi

# Each failing test with its error, last, where a log's tail shows it: node's
# TAP blocks up to the stack, ctest's list of failed tests.
failures() {
  local log
  for log in build/node-node.tap build/node-browser.tap; do
    [[ -f $log ]] || continue
    awk '/^ *not ok [0-9]+ - /{on=1; n=0; print; next}
         on && /^ *(stack|\.\.\.)/{on=0}
         on && n++ < 30{print}' "$log"
  done
  for log in build/ctest-native.log build/ctest-wasm.log build/ctest-asan.log; do
    [[ -f $log ]] && sed -n '/The following tests FAILED/,$p' "$log"
  done
}
if ((total_fail)); then
  echo
  echo "== failures"
  failures
fi

echo
echo "== summary"
for i in "${!names[@]}"; do printf '  %-8s %-24s %s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"; done
echo "  (asan: built and run in the background; its row is the wait for it, and all of its CPU)"
cpu_seconds
echo "  total    $((SECONDS / 60)) min $((SECONDS % 60)) s, CPU ${cpu}s"
echo "summary: $total_pass passed, $total_fail failed"
((total_fail == 0))
