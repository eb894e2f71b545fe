#!/usr/bin/env bash
# npm run bench: native (Google Benchmark) and Node (WebAssembly, JS and the
# peers of bench/peers.mjs) benchmarks, each engine timed in the same run on the
# same shapes, one core. Writes bench/results/{native,wasm}.json, results.md,
# gflops.svg and the tables of docs/benchmarks.md; bench/wasm/small.mjs and attnkit_bench
# --queries time small calls (bench/results/small.json, queries.json);
# bench/wasm/tiles.mjs sweeps the wasm GEMM micro-kernel's tile shapes in Node
# and Chromium (bench/results/tiles.json).
# --quick (also `npm run bench --quick`, which npm passes as npm_config_quick):
# fewer shapes and repetitions (in Node: T = 512 and 2048). bench/report.mjs
# writes the README's and docs' tables only from a fit run (bench/fitness.mjs:
# steady peaks across the rounds, no share of a peak at 100%); an unfit run
# stays in bench/results/ as a record, and the report says why. --backward: only the backward's benchmarks
# (forward + backward of one head and of the multi-head layer, natively against
# PyTorch, in wasm against tfjs-backend-wasm and plain JS: native-backward.json,
# torch.json, backward.json), then the report (from the forward's last results).
# --train: only the training benchmark (the model of docs/model.md trained to
# 90% natively with one thread and all, attnkit_train_bench: train-native.json;
# in Node by the npm package and by the same model in tfjs-backend-wasm, on the
# same batches, bench/wasm/train.mjs: train.json), then the report.
# --language: only the language model's benchmark (issue 32: the GPT of nanoGPT's
# CPU shape on Moby-Dick, one thread per engine, engines stepping in turns):
# natively against PyTorch (bench/language_torch.py driving
# attnkit_language_bench: language-native.json) and in Node against the same
# model in tfjs-backend-wasm (bench/wasm/language.mjs: language-wasm.json); the
# default preset of docs/language.md too (natively beside PyTorch, in Node
# alone), for its time to 2.2 and 2.0; then
# bench/results/language.md (bench/report.mjs --language).
# The peers (onnxruntime-node, onnxruntime-web, tfjs-backend-wasm) are the
# dependencies of bench/package.json, installed here from bench/package-lock.json
# (never by npm test); their ONNX models are written by bench/make_models.py.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0; backward_only=0; train_only=0; language_only=0
[[ ${npm_config_quick:-} == true ]] && quick=1
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    --backward) backward_only=1 ;;
    --train) train_only=1 ;;
    --language) language_only=1 ;;
    *) echo "bench: unknown option $arg (--quick, --backward, --train, --language)" >&2; exit 2 ;;
  esac
done

# Every engine runs as on a user's machine: variables that force a library's
# kernel, cache sizes or threads are removed for the whole run. (This machine
# exports OPENBLAS_CORETYPE=Haswell and OPENBLAS_L2_SIZE=512: OpenBLAS then
# ran its AVX2 kernel with a tiny blocking, ~4x below its default.) Below,
# OPENBLAS_NUM_THREADS=1 is set again on purpose for Google Benchmark (one
# core per engine). The names removed go to bench/results/env.json.
forced=()
while IFS= read -r name; do
  case $name in
    OPENBLAS_*|GOTO_*|GOTOBLAS_*|BLIS_*|MKL_*|NVPL_*|OMP_*|KMP_*|GOMP_*|DNNL_*|ONEDNN_*|ORT_*|ONNXRUNTIME_*|XNNPACK_*|TFJS_*|TF_CPP_*|HWY_*|NODE_OPTIONS|UV_THREADPOOL_SIZE|MALLOC_*|GLIBC_TUNABLES)
      forced+=("$name") ;;
  esac
done < <(compgen -e)
mkdir -p bench/results
{
  printf '{"unset": {'
  sep=''
  for name in "${forced[@]}"; do
    printf '%s"%s": "%s"' "$sep" "$name" "$(printf '%s' "${!name}" | sed 's/[\\"]/\\&/g')"
    sep=', '
  done
  printf '}}\n'
} > bench/results/env.json
if ((${#forced[@]})); then
  echo "bench: unset for this run (forced by the environment): ${forced[*]}"
  unset "${forced[@]}"
fi
bash scripts/setup.sh
missing=()
# python3-torch: the backward's native peer (bench/torch_bench.py), for Debian's python3.
for pkg in libbenchmark-dev libopenblas-dev python3-onnx python3-torch; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "bench: installing Debian packages: ${missing[*]}"
  sudo=(); [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
[[ -f build/bench/CMakeCache.txt ]] ||
  CXX=g++ cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DATTNKIT_BUILD_TESTS=OFF -DATTNKIT_BUILD_BENCH=ON
cmake --build build/bench -j"$(nproc)"
# The wasm package (incremental: a stale dist/ would time old code).
bash scripts/build.sh package

# The wasm machine limit: a SIMD128 mul + add loop, a standalone module (no JS glue).
mkdir -p build/bench-wasm
if [[ ! -f build/bench-wasm/peak.wasm || bench/wasm/peak.cc -nt build/bench-wasm/peak.wasm ]]; then
  echo "bench: emcc bench/wasm/peak.cc"
  NODE_PATH=/usr/share/nodejs emcc -O3 -msimd128 --no-entry bench/wasm/peak.cc -o build/bench-wasm/peak.wasm
fi
# The GEMM micro-kernel's tile shapes (bench/wasm/tiles.cc), standalone as peak.wasm.
if [[ ! -f build/bench-wasm/tiles.wasm || bench/wasm/tiles.cc -nt build/bench-wasm/tiles.wasm ]]; then
  echo "bench: emcc bench/wasm/tiles.cc"
  NODE_PATH=/usr/share/nodejs emcc -std=c++17 -O3 -msimd128 --no-entry --profiling-funcs \
    -sBINARYEN_EXTRA_PASSES=--one-caller-inline-max-function-size=0 \
    bench/wasm/tiles.cc -o build/bench-wasm/tiles.wasm
fi

# The peers, from the lockfile, only when bench/node_modules is missing or stale.
# bench/.npmrc sets ignore-scripts: onnxruntime-node ships its CPU binary for
# linux x64 in its npm tarball; its postinstall would only fetch CUDA libraries
# from outside the npm registry (ONNXRUNTIME_NODE_INSTALL=skip says so too).
if [[ ! -f bench/node_modules/.package-lock.json || bench/package-lock.json -nt bench/node_modules/.package-lock.json ]]; then
  echo "bench: npm ci in bench/"
  (cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund)
fi
# Debian's python3-onnx is importable by Debian's python3 (not by another python3 on PATH).
/usr/bin/python3 bench/make_models.py bench/models

mkdir -p bench/results
# The forward's benchmarks; the backward's (FwdBwd, Bwd, MultiHeadTrain) run below.
fwd='^BM_(FmaPeak|Attnkit|OpenBlas|Loop|AttnkitThreads|AttnkitMultiHead|AttnkitDecode|OpenBlasMultiHead|OpenBlasDecode)(/|$)'
filter=$fwd; reps=5
((quick)) && { filter='^BM_(FmaPeak|(Attnkit|OpenBlas|Loop)/T:(128|512)/|(Attnkit|OpenBlas)MultiHead(/|$)|(Attnkit|OpenBlas)Decode/cache:(1024|4096)/)'; reps=3; }
bwd_filter='^BM_(FmaPeak|AttnkitFwdBwd|AttnkitBwd|AttnkitMultiHeadTrain)(/|$)'
((quick)) && bwd_filter='^BM_(FmaPeak|Attnkit(FwdBwd|Bwd)/T:(128|512)/|AttnkitMultiHeadTrain)'
cpu=$(taskset -pc $$ | sed -E 's/.*: ([0-9]+).*/\1/')  # the first CPU this script may use
backward() {
  echo "== native backward: attnkit forward for training + backward"
  OPENBLAS_NUM_THREADS=1 taskset -c "$cpu" ./build/bench/attnkit_bench --benchmark_filter="$bwd_filter" \
    --benchmark_repetitions=$reps --benchmark_enable_random_interleaving=true \
    --benchmark_report_aggregates_only=true --benchmark_min_time=0.1 \
    --benchmark_out=bench/results/native-backward.json --benchmark_out_format=json
  echo "== native backward: PyTorch (Debian's python3-torch), one thread, paired with attnkit"
  # Debian's python3 (the one python3-torch installs into), one core as the others;
  # a run of attnkit's benchmark of the same shape after each PyTorch round.
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 taskset -c "$cpu" /usr/bin/python3 bench/torch_bench.py \
    --attnkit ./build/bench/attnkit_bench $( ((quick)) && echo --quick ) > bench/results/torch.json
  echo "== node backward: attnkit wasm, tfjs-backend-wasm, plain JS"
  taskset -c "$cpu" node --expose-gc --single-threaded-gc bench/wasm/backward.mjs \
    $( ((quick)) && echo --quick ) > bench/results/backward.json
}
train() {
  echo "== native training: the model to 90%, one thread and every thread"
  # Not pinned: the second run uses every thread of the machine.
  ./build/bench/attnkit_train_bench $( ((quick)) && echo --quick ) > bench/results/train-native.json
  echo "== node training: attnkit wasm and tfjs-backend-wasm, the same model and batches"
  taskset -c "$cpu" node --expose-gc --single-threaded-gc bench/wasm/train.mjs \
    $( ((quick)) && echo --quick ) > bench/results/train.json
}
language() {
  echo "== language model: attnkit native and PyTorch (Debian's python3-torch), one thread, in turns"
  # The text both native engines read: Moby-Dick as bench/wasm/language.mjs joins it.
  node bench/wasm/language.mjs --write-text build/bench/moby-dick.txt
  # One core for both processes (the driver and attnkit_language_bench, its child).
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 taskset -c "$cpu" /usr/bin/python3 bench/language_torch.py \
    --attnkit ./build/bench/attnkit_language_bench --text build/bench/moby-dick.txt \
    --preset nanogpt,default $( ((quick)) && echo --quick ) > bench/results/language-native.json
  echo "== language model: attnkit wasm and tfjs-backend-wasm, the same model and batches"
  taskset -c "$cpu" node --expose-gc --single-threaded-gc bench/wasm/language.mjs \
    $( ((quick)) && echo --quick ) > bench/results/language-wasm.json
  node bench/report.mjs --language
}
if ((backward_only || train_only || language_only)); then
  ((backward_only)) && backward
  ((train_only)) && train
  ((language_only)) && language
  if ((backward_only || train_only)); then node bench/report.mjs; fi
  exit 0
fi
echo "== native"
# One OpenBLAS thread: every engine runs on one core.
OPENBLAS_NUM_THREADS=1 ./build/bench/attnkit_bench --benchmark_filter="$filter" \
  --benchmark_repetitions=$reps --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.1 \
  --benchmark_out=bench/results/native.json --benchmark_out_format=json
echo "== node: attnkit wasm and native, plain JS, onnxruntime-node, onnxruntime-web, tfjs-backend-wasm"
# On one core (taskset, from util-linux): attnkit native runs in a child process
# that Node waits on, and on a core of its own it started each round from an
# idle core (on this VM, rounds up to 1.5x slower than in Node's own process).
# --expose-gc --single-threaded-gc: bench.mjs collects garbage before each timed
# call, on Node's main thread, so that no GC thread shares the core with it.
taskset -c "$cpu" node --expose-gc --single-threaded-gc bench/wasm/bench.mjs $( ((quick)) && echo --quick ) \
  > bench/results/wasm.json
echo "== native: 1..9 queries against 64, 256, 1024 keys"
taskset -c "$cpu" ./build/bench/attnkit_bench --queries $( ((quick)) && echo 9 || echo 21 ) > bench/results/queries.json
echo "== native: small calls through the C++ API against a plain C++ loop"
taskset -c "$cpu" ./build/bench/attnkit_bench --small $( ((quick)) && echo 9 || echo 21 ) > bench/results/small-native.json
echo "== node: small calls (attnkit wasm through the package, plain JS)"
taskset -c "$cpu" node --single-threaded-gc bench/wasm/small.mjs $( ((quick)) && echo --quick ) \
  > bench/results/small.json
echo "== node + chromium: the wasm GEMM micro-kernel's tile shapes against the SIMD128 peak"
# Pinned as the other wasm runs; Chromium's processes inherit the pinning.
tiles_args=(); [[ -x ${CHROMIUM:-/usr/bin/chromium} ]] && tiles_args+=(--chromium)
taskset -c "$cpu" node bench/wasm/tiles.mjs $( ((quick)) && echo --quick ) "${tiles_args[@]}" \
  > bench/results/tiles.json
echo "== node, chromium: the worker API's added cost (attnkit/worker against the synchronous call)"
# Not pinned to one core: the worker thread and the main thread each need one.
node bench/wasm/async.mjs $( ((quick)) && echo --quick ) > bench/results/async.json
backward
train
language
node bench/report.mjs
