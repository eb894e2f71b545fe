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

# Seconds since the last suite was recorded: each suite's build and run.
suite_start=$SECONDS
record() {
  names+=("$1"); results+=("$2"); times+=("$((SECONDS - suite_start))s")
  suite_start=$SECONDS
}

# Runs ctest in build/$1 and records its counts.
run_ctest() {
  local variant=$1 log="build/ctest-$1.log"
  echo "== test $variant"
  if ! bash scripts/build.sh "$variant"; then
    record "$variant" "BUILD FAILED"; total_fail=$((total_fail + 1)); return
  fi
  # glibc fills each allocation with a byte pattern: a kernel that reads a
  # workspace it never wrote (they are not zeroed) gets garbage, not zeros.
  MALLOC_PERTURB_=165 ctest --test-dir "build/$variant" --output-on-failure -j"$(nproc)" 2>&1 \
    | tee "$log"
  local line pass=0 fail=0
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
  if [[ $line =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    fail=${BASH_REMATCH[1]}
    pass=$((BASH_REMATCH[2] - fail))
  else
    fail=1  # ctest found no tests or did not finish
  fi
  record "$variant" "$pass passed, $fail failed"
  total_pass=$((total_pass + pass)); total_fail=$((total_fail + fail))
}

# Runs `node --test` on a folder and records its counts (TAP "# pass N").
run_node() {
  local suite=$1 dir=$2 log="build/node-$1.tap"
  echo "== test $suite"
  node --test --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$log" "$dir"
  local pass fail
  pass=$(grep -E '^# pass [0-9]+' "$log" | tail -1 | awk '{print $3}')
  fail=$(grep -E '^# fail [0-9]+' "$log" | tail -1 | awk '{print $3}')
  [[ -n $pass && -n $fail ]] || { pass=0; fail=1; }
  [[ $pass -gt 0 ]] || fail=$((fail + 1))  # a suite that ran nothing has failed
  record "$suite" "$pass passed, $fail failed"
  total_pass=$((total_pass + pass)); total_fail=$((total_fail + fail))
}

# The sanitizer build is the longest (clang compiling the backward's kernels
# for every target with ASan and UBSan): it runs in the background at low
# priority from the start, filling the cores the other suites leave idle, and
# its tests run once it is done.
mkdir -p build
asan_build_start=$SECONDS
nice -n 15 bash scripts/build.sh asan >build/asan-build.log 2>&1 &
asan_build_pid=$!

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

# The sanitizer suite: its build ran in the background (see above).
echo "== build asan (background, started ${asan_build_start}s into the run)"
if wait "$asan_build_pid"; then
  asan_build_time=$((SECONDS - asan_build_start))
  echo "asan build finished ${asan_build_time}s after it started"
  run_ctest asan
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

echo
echo "== summary"
for i in "${!names[@]}"; do printf '  %-8s %-24s %s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"; done
echo "  (the asan build ran in the background for ${asan_build_time:-?}s; its row is the wait and the tests)"
echo "  total    $((SECONDS / 60)) min $((SECONDS % 60)) s"
echo "summary: $total_pass passed, $total_fail failed"
((total_fail == 0))
