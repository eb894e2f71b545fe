#!/usr/bin/env bash
# npm run bench [-- FLAGS]: attnkit's benchmarks, every engine timed in the same
# run on the same shapes, one core; results in bench/results/ (docs/benchmarks.md
# says how to ask a question). Run with --help for the flags.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  cat <<'USAGE'
Usage: npm run bench [-- FLAGS]   (or bash scripts/bench.sh FLAGS)

  --quick          fewer shapes, repetitions and rounds (npm run bench --quick too)
  --full           gpt2: every shape of issue 44 (prefill of 16 to 1024 tokens,
                   generation after 16 and 512; several minutes more)
  --only PARTS     run only these parts (comma-separated), then the report:
                     native    attnkit against OpenBLAS and a C++ loop (Google Benchmark):
                               native.json
                     node      attnkit wasm and native, plain JS and the peers
                               (onnxruntime-node/-web, tfjs-backend-wasm) in Node: wasm.json
                     queries   1..9 queries against 64, 256, 1024 keys, natively: queries.json
                     small     small calls, natively and through the package:
                               small-native.json, small.json
                     tiles     the wasm GEMM micro-kernel's tile shapes (Node, Chromium): tiles.json
                     async     the worker API's added cost (Node, Chromium): async.json
                     backward  forward + backward against PyTorch, tfjs, plain JS:
                               native-backward.json, torch.json, backward.json
                     train     the model of docs/model.md trained to 90%: train-native.json,
                               train.json
                     language  the GPT on Moby-Dick against PyTorch and tfjs:
                               language-native.json, language-wasm.json, language.md
                     gpt2      GPT-2 small (random weights) against PyTorch and
                               onnxruntime-web, prefill and generation; opening it in
                               Chromium (memory): gpt2.json, gpt2-chromium.json, gpt2.md
                     page      the web page's control changes at its largest layer, and
                               the default language preset to 2.0 nats/char on 1 and 2
                               threads (Chromium; needs only the package): page.json,
                               page-threads.json
                   (default: all of them, then bench/report.mjs)
  --ab REV         the paired A/B of revision REV (A) against this tree (B), natively
                   and in wasm (bench/ab/ab.sh); --only names the question:
                   backward, heads, layer or small (default: small)
  --rounds N       --ab: paired rounds (default per question; --quick: 3)
  --native, --wasm --ab: that platform only
  --processes      --ab in wasm: each side alone in a process of its own per round
                   (backward, heads, layer), as natively
  --help           this text

Examples:
  npm run bench -- --quick --only small          the small calls, fewer rounds
  npm run bench -- --only gpt2 --full             GPT-2 small, every shape
  npm run bench -- --ab main --only layer        the layer, main against this tree
  node bench/report.mjs                          the report again from bench/results/*.json
USAGE
}
quick=0 full=0 only='' ab='' rounds='' platform=()
[[ ${npm_config_quick:-} == true ]] && quick=1
while (($#)); do
  case $1 in
    --quick) quick=1 ;;
    --full) full=1 ;;
    --only) only=${2:?--only: expected a comma-separated list}; shift ;;
    --ab) ab=${2:?--ab: expected a revision}; shift ;;
    --rounds) rounds=${2:?--rounds: expected a number}; shift ;;
    --native | --wasm | --processes) platform+=("$1") ;;
    -h | --help) usage; exit 0 ;;
    *) echo "bench: unknown option $1 (--help lists them)" >&2; exit 2 ;;
  esac
  shift
done
if [[ -n $ab ]]; then
  ((quick)) && rounds=${rounds:-3}
  exec bash bench/ab/ab.sh "${only:-small}" "$ab" ${rounds:+--rounds "$rounds"} "${platform[@]}"
fi
parts=(native node queries small tiles async backward train language gpt2 page)
for part in ${only//,/ }; do
  [[ " ${parts[*]} " == *" $part "* ]] ||
    { echo "bench: --only: unknown part '$part' (${parts[*]})" >&2; exit 2; }
done
# wants PART: whether this run times PART (the function part_PART below).
wants() { [[ -z $only || ",$only," == *",$1,"* ]]; }
# bench_builds: whether a part this run times needs more than the package: the native
# benchmarks, the standalone wasm modules, the peers and Debian's benchmark packages.
bench_builds=0
for part in "${parts[@]}"; do
  [[ $part != page ]] && wants "$part" && bench_builds=1
done
quick_flag() { ((quick)) && echo --quick || true; }

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
# The wasm package (incremental: a stale dist/ would time old code).
bash scripts/build.sh package
if ((bench_builds)); then
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
    CXX=g++ cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DATTNKIT_BUILD_TESTS=OFF -DATTNKIT_BUILD_BENCH=ON \
      $(command -v ccache >/dev/null && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake --build build/bench -j"$(nproc)"

  # The wasm machine limit (a SIMD128 mul + add loop) and the GEMM micro-kernel's
  # tile shapes: standalone modules (no JS glue) built by bench/CMakeLists.txt.
  [[ -f build/bench-wasm/CMakeCache.txt ]] ||
    emcmake cmake -S bench -B build/bench-wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build/bench-wasm -j"$(nproc)"

  # The peers, from the lockfile, only when bench/node_modules is missing or stale.
  # onnxruntime-node is the top-level package's devDependency (installed by
  # setup.sh above; the top-level .npmrc says how).
  if [[ ! -f bench/node_modules/.package-lock.json || bench/package-lock.json -nt bench/node_modules/.package-lock.json ]]; then
    echo "bench: npm ci in bench/"
    (cd bench && npm ci --no-audit --no-fund)
  fi
  # Debian's python3-onnx is importable by Debian's python3 (not by another python3 on PATH).
  /usr/bin/python3 bench/make_models.py bench/models
fi

mkdir -p bench/results
# The forward's benchmarks; the backward's (FwdBwd, Bwd, MultiHeadTrain) run below.
fwd='^BM_(FmaPeak|Attnkit|OpenBlas|Loop|AttnkitThreads|AttnkitMultiHead|AttnkitDecode|OpenBlasMultiHead|OpenBlasDecode)(/|$)'
filter=$fwd; reps=5
((quick)) && { filter='^BM_(FmaPeak|(Attnkit|OpenBlas|Loop)/T:(128|512)/|(Attnkit|OpenBlas)MultiHead(/|$)|(Attnkit|OpenBlas)Decode/cache:(1024|4096)/)'; reps=3; }
bwd_filter='^BM_(FmaPeak|AttnkitFwdBwd|AttnkitBwd|AttnkitMultiHeadTrain)(/|$)'
((quick)) && bwd_filter='^BM_(FmaPeak|Attnkit(FwdBwd|Bwd)/T:(128|512)/|AttnkitMultiHeadTrain)'
cpu=$(taskset -pc $$ | sed -E 's/.*: ([0-9]+).*/\1/')  # the first CPU this script may use
calls=21; ((quick)) && calls=9
part_native() {
  echo "== native"
  # One OpenBLAS thread: every engine runs on one core.
  OPENBLAS_NUM_THREADS=1 ./build/bench/attnkit_bench --benchmark_filter="$filter" \
    --benchmark_repetitions=$reps --benchmark_enable_random_interleaving=true \
    --benchmark_report_aggregates_only=true --benchmark_min_time=0.1 \
    --benchmark_out=bench/results/native.json --benchmark_out_format=json
}
part_node() {
  echo "== node: attnkit wasm and native, plain JS, onnxruntime-node, onnxruntime-web, tfjs-backend-wasm"
  # On one core (taskset, from util-linux): attnkit native runs in a child process
  # that Node waits on, and on a core of its own it started each round from an
  # idle core (on this VM, rounds up to 1.5x slower than in Node's own process).
  # --expose-gc --single-threaded-gc: bench.mjs collects garbage before each timed
  # call, on Node's main thread, so that no GC thread shares the core with it.
  taskset -c "$cpu" node --expose-gc --single-threaded-gc bench/wasm/bench.mjs $(quick_flag) \
    > bench/results/wasm.json
}
part_queries() {
  echo "== native: 1..9 queries against 64, 256, 1024 keys"
  taskset -c "$cpu" ./build/bench/attnkit_bench --queries $calls > bench/results/queries.json
}
part_small() {
  echo "== native: small calls through the C++ API against a plain C++ loop"
  taskset -c "$cpu" ./build/bench/attnkit_bench --small $calls > bench/results/small-native.json
  echo "== node: small calls (attnkit wasm through the package, plain JS)"
  taskset -c "$cpu" node --single-threaded-gc bench/wasm/small.mjs $(quick_flag) \
    > bench/results/small.json
}
part_tiles() {
  echo "== node + chromium: the wasm GEMM micro-kernel's tile shapes against the SIMD128 peak"
  # Pinned as the other wasm runs; Chromium's processes inherit the pinning.
  local args=(); [[ -x ${CHROMIUM:-/usr/bin/chromium} ]] && args+=(--chromium)
  taskset -c "$cpu" node bench/wasm/tiles.mjs $(quick_flag) "${args[@]}" > bench/results/tiles.json
}
part_async() {
  echo "== node, chromium: the worker API's added cost (attnkit/worker against the synchronous call)"
  # Not pinned to one core: the worker thread and the main thread each need one.
  node bench/wasm/async.mjs $(quick_flag) > bench/results/async.json
}
part_backward() {
  echo "== native backward: attnkit forward for training + backward"
  OPENBLAS_NUM_THREADS=1 taskset -c "$cpu" ./build/bench/attnkit_bench --benchmark_filter="$bwd_filter" \
    --benchmark_repetitions=$reps --benchmark_enable_random_interleaving=true \
    --benchmark_report_aggregates_only=true --benchmark_min_time=0.1 \
    --benchmark_out=bench/results/native-backward.json --benchmark_out_format=json
  echo "== native backward: PyTorch (Debian's python3-torch), one thread, paired with attnkit"
  # Debian's python3 (the one python3-torch installs into), one core as the others;
  # a run of attnkit's benchmark of the same shape after each PyTorch round.
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 taskset -c "$cpu" /usr/bin/python3 bench/torch_bench.py \
    --attnkit ./build/bench/attnkit_bench $(quick_flag) > bench/results/torch.json
  echo "== node backward: attnkit wasm, tfjs-backend-wasm, plain JS"
  taskset -c "$cpu" node --expose-gc --single-threaded-gc bench/wasm/backward.mjs \
    $(quick_flag) > bench/results/backward.json
}
part_train() {
  echo "== native training: the model to 90%, one thread and every thread"
  # Not pinned: the second run uses every thread of the machine.
  ./build/bench/attnkit_train_bench $(quick_flag) > bench/results/train-native.json
  echo "== node training: attnkit wasm and tfjs-backend-wasm, the same model and batches"
  taskset -c "$cpu" node --expose-gc --single-threaded-gc bench/wasm/train.mjs \
    $(quick_flag) > bench/results/train.json
}
part_language() {
  echo "== language model: attnkit native and PyTorch (Debian's python3-torch), one thread, in turns"
  # The text both native engines read: Moby-Dick as bench/wasm/language.mjs joins it.
  node bench/wasm/language.mjs --write-text build/bench/moby-dick.txt
  # One core for both processes (the driver and attnkit_language_bench, its child).
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 taskset -c "$cpu" /usr/bin/python3 bench/language_torch.py \
    --attnkit ./build/bench/attnkit_language_bench --text build/bench/moby-dick.txt \
    --preset nanogpt,default $(quick_flag) > bench/results/language-native.json
  echo "== language model: attnkit wasm and tfjs-backend-wasm, the same model and batches"
  # tfjs-backend-wasm takes ~1.8 s a step: 200 steps time it and check its losses,
  # where training it to 2.0 nats/char would take half an hour.
  taskset -c "$cpu" node --expose-gc --single-threaded-gc bench/wasm/language.mjs \
    --peer-steps 200 $(quick_flag) > bench/results/language-wasm.json
}
part_gpt2() {
  echo "== gpt2: GPT-2 small, attnkit wasm and native, onnxruntime-web, PyTorch (1 and every thread), in turns"
  # Pinned as the other Node runs; the script widens PyTorch's all-threads child to every core.
  local args=(); ((full)) && args+=(--full)
  taskset -c "$cpu" node --expose-gc --single-threaded-gc bench/wasm/gpt2.mjs $(quick_flag) "${args[@]}" \
    > bench/results/gpt2.json
  echo "== gpt2: opening its checkpoint in Chromium (memory), its prefill and generation in the page"
  taskset -c "$cpu" node bench/wasm/gpt2-chromium.mjs > bench/results/gpt2-chromium.json
}
part_page() {
  echo "== chromium: the page's control changes at T = 64, d_model = 128, 8 heads"
  # The page as users get it, built from this tree's package (incremental). Not
  # pinned: the page's renderer, browser and compositor run side by side, as on a
  # user's machine.
  npx vite build web --logLevel warn
  node bench/wasm/page.mjs $(quick_flag) > bench/results/page.json
  echo "== chromium: the default language preset to 2.0 nats/char on 1 and 2 threads"
  node bench/wasm/page.mjs --to-2 "$( ((quick)) && echo 1 || echo 2)" > bench/results/page-threads.json
}
for part in "${parts[@]}"; do
  wants "$part" || continue
  "part_$part"
done
# The report: only language.md (gpt2.md) when only the language model (GPT-2) ran.
case $only in
  language) node bench/report.mjs --language ;;
  gpt2) node bench/report.mjs --gpt2 ;;
  *) node bench/report.mjs ;;
esac
