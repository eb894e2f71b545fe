#!/usr/bin/env bash
# The head layouts' paired A/B, natively and in WebAssembly, in one run: A = a
# build of another commit, B = this tree's. Native: bench/native/heads_ab.cc
# linked against each build's libattnkit_core.a (A compiled with
# -DATTNKIT_AB_OLD_API when its API has no HeadLayout), run alternately by
# pair.py. Wasm: each side's own JS layer (bundled from its source: the
# layouts are handled there) beside its build's attnkit-simd.node.cjs, both
# loaded in one Node process by bench/wasm/heads_ab.mjs.
# Usage: bench/ab/heads.sh A_SRC A_NATIVE_BUILD A_WASM_BUILD B_NATIVE_BUILD B_WASM_BUILD [ROUNDS]
#   e.g. bench/ab/heads.sh build/old-src build/old-native build/old-wasm build/native build/wasm 11
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/ab/sides.sh
a_src=$1 a_native=$2 a_wasm=$3 b_native=$4 b_wasm=$5 rounds=${6:-11}
out=build/ab-heads
mkdir -p "$out"
for side in a b; do
  if [[ $side == a ]]; then src=$a_src native=$a_native wasm=$a_wasm; else src=. native=$b_native wasm=$b_wasm; fi
  old=()
  cat "$src/src/core/multihead.h" "$src/include/attnkit/multihead.h" 2>/dev/null | grep -q "enum class HeadLayout" || old=(-DATTNKIT_AB_OLD_API)
  g++ -O2 -std=c++17 "${old[@]}" -I "$src" -I "$src/include" -I . -I include bench/native/heads_ab.cc "$native/libattnkit_core.a" \
    -lhwy -lpthread -o "$out/ab-$side"
  wasm_side "$out/wasm-$side" "$src" "$wasm"
done
echo "## host $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo "## native, CPU time (us per call or per head), $rounds paired rounds, load $(cut -d' ' -f1 /proc/loadavg)"
python3 bench/ab/pair.py "$rounds" "$out/ab-a" "$out/ab-b"
echo "## wasm SIMD128 (Node $(node --version)), CPU time (us per call or per head), $rounds paired rounds, load $(cut -d' ' -f1 /proc/loadavg)"
node --single-threaded-gc bench/wasm/heads_ab.mjs "$out/wasm-a" "$out/wasm-b" "$rounds"
echo "## load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
