#!/usr/bin/env bash
# The small calls' paired A/B, natively and in WebAssembly, in one run, with
# the plain loops of issue #35 timed in the same rounds: A = a build of
# another commit, B = this tree's. Native: bench/ab/small_ab.cc linked against
# each build's libattnkit_core.a, run alternately by pair.py (ROUNDS processes
# each); then, per shape, the plain C++ loop's time over attnkit's in the B
# runs (above 1: attnkit is faster). Wasm: bench/ab/small_ab.mjs with each
# build's attnkit-simd.node.cjs beside the same bundled JS layer.
# Usage: bench/ab/small.sh A_SRC A_NATIVE_BUILD A_WASM_BUILD B_NATIVE_BUILD B_WASM_BUILD [ROUNDS]
#   e.g. bench/ab/small.sh build/main-src build/main-native build/main-wasm build/native build/wasm 21
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/ab/sides.sh
a_src=$1 a_native=$2 a_wasm=$3 b_native=$4 b_wasm=$5 rounds=${6:-21}
out=build/ab-small
mkdir -p "$out"
for side in a b; do
  if [[ $side == a ]]; then src=$a_src native=$a_native wasm=$a_wasm; else src=. native=$b_native wasm=$b_wasm; fi
  # The attnkit headers of the side's own tree first; the bench's from this one.
  g++ -O2 -std=c++17 -I "$src" -I "$src/include" -I . -I include bench/ab/small_ab.cc "$native/libattnkit_core.a" -lhwy \
    -lpthread -o "$out/small-ab-$side"
  wasm_side "$out/wasm-$side" . "$wasm"
done
echo "## native, CPU time per call (us), $rounds paired rounds, load $(cut -d' ' -f1 /proc/loadavg)"
python3 bench/ab/pair.py "$rounds" "$out/small-ab-a" "$out/small-ab-b" | tee "$out/native.txt"
echo "## native: the plain C++ loop's time over attnkit's (B), above 1: attnkit is faster"
python3 - "$out/native.txt" <<'PY'
import sys
b = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) > 4 and parts[1] == "A" and parts[3] == "B":
        b[parts[0]] = float(parts[4])
for name, us in b.items():
    if not name.startswith("plain_") and "plain_" + name in b:
        print(f"{name:28s} attnkit {us:9.3f} us  plain C++ {b['plain_' + name]:9.3f} us"
              f"  plain/attnkit {b['plain_' + name] / us:.2f}")
PY
echo "## wasm SIMD128 (Node $(node --version)), CPU time per call (us), $rounds paired rounds, load $(cut -d' ' -f1 /proc/loadavg)"
node --single-threaded-gc bench/ab/small_ab.mjs "$out/wasm-a" "$out/wasm-b" "$rounds"
