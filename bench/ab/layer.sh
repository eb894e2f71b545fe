#!/usr/bin/env bash
# The multi-head layer's paired A/B (weights packed once), natively and in
# WebAssembly, in one run: A = a build of another commit (its source A_SRC),
# B = this tree's. Native: bench/native/layer_ab.cc linked against each
# build's libattnkit_core.a, run alternately by pair.py (ROUNDS processes
# each). Wasm: each build's attnkit-simd.node.cjs beside the JS layer bundled
# from its own source, both loaded in one Node process by
# bench/wasm/layer_ab.mjs. Both print the layer's time split too.
# Usage: bench/ab/layer.sh A_SRC A_NATIVE_BUILD A_WASM_BUILD B_NATIVE_BUILD B_WASM_BUILD [ROUNDS]
#   e.g. bench/ab/layer.sh build/old-src build/old-native build/old-wasm build/native build/wasm 15
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/ab/sides.sh
a_src=$1 a_native=$2 a_wasm=$3 b_native=$4 b_wasm=$5 rounds=${6:-15}
out=build/ab-layer
mkdir -p "$out"
for side in a b; do
  if [[ $side == a ]]; then src=$a_src native=$a_native wasm=$a_wasm; else src=. native=$b_native wasm=$b_wasm; fi
  g++ -O2 -std=c++17 -I "$src" -I "$src/include" -I . -I include bench/native/layer_ab.cc "$native/libattnkit_core.a" -lhwy -lpthread \
    -o "$out/layer-$side"
  wasm_side "$out/wasm-$side" "$src" "$wasm"
done
echo "## native ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), CPU time per call (us), $rounds paired rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/ab/pair.py "$rounds" "$out/layer-a" "$out/layer-b"
echo "# B alone: $("$out/layer-b" | grep '^pack_weights' || echo 'no pack_weights')"
echo "## wasm SIMD128 (Node $(node --version)), CPU time per call (us), $rounds paired rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
node --single-threaded-gc bench/wasm/layer_ab.mjs "$out/wasm-a" "$out/wasm-b" "$rounds"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
