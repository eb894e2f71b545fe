#!/usr/bin/env bash
# The backward's paired A/B, natively and in WebAssembly, in one run: A = a
# build of another commit, B = this tree's. Native: bench/native/backward_ab.cc
# linked against each build's libattnkit_core.a and libattnkit_model.a, run
# alternately by pair.py (ROUNDS processes each). Wasm: each build's
# attnkit-simd.node.cjs beside the same bundled JS layer, both loaded in one
# Node process by bench/wasm/backward_ab.mjs.
# Usage: bench/ab/run.sh A_SRC A_NATIVE_BUILD A_WASM_BUILD B_NATIVE_BUILD B_WASM_BUILD [ROUNDS]
#   e.g. bench/ab/run.sh build/old-src build/old-native build/old-wasm build/native build/wasm 21
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/ab/sides.sh
a_src=$1 a_native=$2 a_wasm=$3 b_native=$4 b_wasm=$5 rounds=${6:-21}
out=build/ab
mkdir -p "$out"
for side in a b; do
  if [[ $side == a ]]; then src=$a_src native=$a_native wasm=$a_wasm; else src=. native=$b_native wasm=$b_wasm; fi
  g++ -O2 -std=c++17 -I "$src" -I "$src/include" -I . -I include bench/native/backward_ab.cc "$native/libattnkit_model.a" \
    "$native/libattnkit_core.a" -lhwy -lpthread -o "$out/ab-$side"
  wasm_side "$out/wasm-$side" . "$wasm"
done
echo "## native, CPU time per call (us), $rounds paired rounds, load $(cut -d' ' -f1 /proc/loadavg)"
python3 bench/ab/pair.py "$rounds" "$out/ab-a" "$out/ab-b"
echo "## wasm SIMD128 (Node $(node --version)), CPU time per call (us), $rounds paired rounds, load $(cut -d' ' -f1 /proc/loadavg)"
node --single-threaded-gc bench/wasm/backward_ab.mjs "$out/wasm-a" "$out/wasm-b" "$rounds"
