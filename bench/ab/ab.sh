#!/usr/bin/env bash
# The paired A/B of two revisions (scripts/bench.sh --ab REV --only QUESTION):
# A = revision REV, B = this tree, natively and in WebAssembly, in one run.
#   QUESTION  backward  the backward and the training forward (one head, the
#                       model's training step, the pool)
#             heads     the head layouts (bshd, bhsd) against one head
#             layer     the multi-head layer and its time split
#             small     the small calls, with the plain loops in the same rounds
#             gpt2      GPT-2 small's prefill and tokens through the Generator
#                       (native only here)
# A's source is an export of REV (git archive) in build/ab/src-REV. Both sides
# are built the same way: natively by bench/CMakeLists.txt as a project of its
# own (-DATTNKIT_SOURCE: REV's export, or this tree), which compiles this
# tree's bench/native/QUESTION_ab.cc against that source's library; in wasm by
# that source's own CMake (Emscripten, the SIMD128 Node module). Native:
# bench/ab/pair.mjs runs the two programs alternately, one process per round
# and side. Wasm: bench/wasm/QUESTION_ab.mjs loads both modules into one Node
# process, each beside a bundled JS layer (the side's own for heads and layer,
# whose JS handles the layouts; this tree's for the others), once with A loaded
# first and once with B: B's speed is the geometric mean of the two runs' B/A.
# --own-js: each wasm side beside its own JS layer (a REV whose argument
# words differ from this tree's: the whole call, JS and wasm, is compared).
# --processes (backward, heads, layer): each wasm side alone in a process of
# its own per round (bench/wasm/QUESTION_ab.mjs --side DIR), paired by
# bench/ab/pair.mjs as natively: two modules in one process share its heap and
# memory, which can move a row by several percent whatever the code.
# Node runs with glibc's malloc thresholds fixed: by default they move with the
# heap's history, and a side whose result buffers happen to be trimmed back to
# the system takes page faults the other does not.
# Usage: bench/ab/ab.sh QUESTION REV [--rounds N] [--native | --wasm] [--own-js] [--processes]
set -euo pipefail
cd "$(dirname "$0")/../.."
question=${1:?QUESTION: backward, heads, layer, small or gpt2} rev=${2:?REV: the revision to compare with}
shift 2
rounds='' native=1 wasm=1 own=0 processes=0
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift ;;
    --native) wasm=0 ;;
    --wasm) native=0 ;;
    --own-js) own=1 ;;
    --processes) processes=1 ;;
    *) echo "ab.sh: unknown option $1 (--rounds N, --native, --wasm, --own-js, --processes)" >&2; exit 2 ;;
  esac
  shift
done
case $question in
  backward | small) rounds=${rounds:-21} own_js=0 ;;
  heads) rounds=${rounds:-11} own_js=1 ;;
  layer) rounds=${rounds:-15} own_js=1 ;;
  # wasm: bench/wasm/gpt2_ab.mjs DIST_A DIST_B (two package builds' dist/ folders).
  gpt2) rounds=${rounds:-7} own_js=0 wasm=0 ;;
  *) echo "ab.sh: QUESTION: expected backward, heads, layer, small or gpt2, got '$question'" >&2; exit 2 ;;
esac
commit=$(git rev-parse --short "$rev^{commit}")
out=build/ab
src_a=$out/src-$commit
if [[ ! -f $src_a/CMakeLists.txt ]]; then
  echo "ab: exporting $rev ($commit) to $src_a"
  mkdir -p "$src_a"
  git archive "$commit" | tar -x -C "$src_a"
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "## A = $rev ($commit), B = this tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ', modified'))"
echo "## host $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"

# native_side NAME SOURCE: bench/CMakeLists.txt against SOURCE's library.
native_side() {
  local dir=$out/native-$1
  [[ -f $dir/CMakeCache.txt ]] ||
    CXX=g++ cmake -S bench -B "$dir" -DATTNKIT_SOURCE="$(realpath "$2")" "${launcher[@]}" >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target "attnkit_ab_$question" >/dev/null
}
# wasm_side NAME SOURCE JS_ROOT: SOURCE's SIMD128 Node module beside JS_ROOT's
# JS layer, bundled, in $out/wasm-NAME/side.
wasm_side() {
  local dir=$out/wasm-$1
  [[ -f $dir/CMakeCache.txt ]] ||
    emcmake cmake -S "$2" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DATTNKIT_BUILD_TESTS=OFF \
      "${launcher[@]}" >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target attnkit_module_node >/dev/null
  mkdir -p "$dir/side"
  npx esbuild "$3/src/js/node.js" --bundle --format=cjs --platform=node --log-level=warning \
    '--define:__ATTNKIT_VERSION__="ab"' '--external:./*.node.cjs' \
    --outfile="$dir/side/attnkit.node.cjs"
  cp "$dir/src/bindings/attnkit-simd.node.cjs" "$dir/side/"
}

if ((native)); then
  native_side "$commit" "$src_a"
  native_side this .
  echo "## native, $rounds paired rounds (one process per round and side), load $(load)"
  node bench/ab/pair.mjs "$rounds" "$out/native-$commit/attnkit_ab_$question" \
    "$out/native-this/attnkit_ab_$question"
fi
if ((wasm)); then
  js_a=.
  ((own_js || own)) && js_a=$src_a
  wasm_side "$commit" "$src_a" "$js_a"
  wasm_side this . .
  export GLIBC_TUNABLES=glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432
  if ((processes)); then
    [[ $question == small ]] && { echo "ab.sh: --processes: small has no --side" >&2; exit 2; }
    echo "## wasm SIMD128 (Node $(node --version)), $rounds paired rounds, one process per round and side, load $(load)"
    side="node --single-threaded-gc bench/wasm/${question}_ab.mjs --side"
    node bench/ab/pair.mjs "$rounds" "$side $out/wasm-$commit/side" "$side $out/wasm-this/side"
    echo "## load at the end $(load)"
    exit 0
  fi
  # Both load orders (see bench/lib/paired.mjs): the one loaded second runs slower.
  for order in AB BA; do
    echo "## wasm SIMD128 (Node $(node --version)), $rounds paired rounds in one process," \
      "${order:0:1} loaded first, load $(load)"
    ATTNKIT_AB_LOAD_ORDER=$order node --single-threaded-gc "bench/wasm/${question}_ab.mjs" \
      "$out/wasm-$commit/side" "$out/wasm-this/side" "$rounds" | tee "$out/wasm-$order.txt"
  done
  echo "## wasm, both load orders"
  node bench/ab/orders.mjs "$out/wasm-AB.txt" "$out/wasm-BA.txt"
fi
echo "## load at the end $(load)"
