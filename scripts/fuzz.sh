#!/usr/bin/env bash
# Runs the libFuzzer target for a bounded time (default 600 s; first argument
# overrides). The corpus grows in build/fuzz-corpus; crashes are written to
# build/fuzz-artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
bash scripts/setup.sh
bash scripts/build.sh fuzz
mkdir -p build/fuzz-corpus build/fuzz-artifacts
echo "== fuzz for ${seconds}s"
rc=0
./build/asan/attnkit_fuzz -max_total_time="$seconds" -rss_limit_mb=4096 -print_final_stats=1 \
  -artifact_prefix=build/fuzz-artifacts/ build/fuzz-corpus >build/fuzz.log 2>&1 || rc=$?
# The progress lines are many; show the rest (stats, or the crash report).
grep -vE '^#[0-9]+ +(NEW|REDUCE|pulse|INITED)|NEW_FUNC' build/fuzz.log | tail -60
if ((rc)); then
  echo "fuzz: FAILED (exit $rc); the input that failed is in build/fuzz-artifacts/" >&2
else
  echo "fuzz: no crash, sanitizer report or NaN in ${seconds}s"
fi
exit "$rc"
