#!/usr/bin/env bash
# npm run bench: native (Google Benchmark) and WebAssembly (Node) benchmarks,
# each engine timed in the same run on the same shapes, one core. Writes
# bench/results/{native,wasm}.json, results.md, gflops.svg and the README table.
# --quick: fewer shapes and repetitions.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0; [[ ${1:-} == --quick ]] && quick=1
bash scripts/setup.sh
missing=()
for pkg in libbenchmark-dev libopenblas-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  sudo=(); [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
[[ -f build/bench/CMakeCache.txt ]] ||
  CXX=g++ cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DATTNKIT_BUILD_TESTS=OFF -DATTNKIT_BUILD_BENCH=ON
cmake --build build/bench -j"$(nproc)"
[[ -f dist/attnkit.mjs ]] || bash scripts/build.sh package
mkdir -p bench/results
filter='.'; reps=5
((quick)) && { filter='FmaPeak|T:(128|512)/|MultiHead|cache:(1024|4096)'; reps=3; }
echo "== native"
# One OpenBLAS thread: every engine runs on one core.
OPENBLAS_NUM_THREADS=1 ./build/bench/attnkit_bench --benchmark_filter="$filter" \
  --benchmark_repetitions=$reps --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.1 \
  --benchmark_out=bench/results/native.json --benchmark_out_format=json
echo "== wasm"
node bench/wasm/bench.mjs $( ((quick)) && echo --quick ) > bench/results/wasm.json
node bench/report.mjs
