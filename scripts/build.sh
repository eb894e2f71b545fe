#!/usr/bin/env bash
# Configures and builds one or more variants of attnkit, each in its own folder:
#   native  build/native  Release, Highway dynamic dispatch (AVX-512 ... scalar)
#   asan    build/asan    AddressSanitizer + UndefinedBehaviorSanitizer
#   wasm    build/wasm    Emscripten, WebAssembly SIMD128; tests run under node
#   fuzz    build/fuzz    clang libFuzzer target with ASan + UBSan
# Usage: scripts/build.sh [native|asan|wasm|fuzz]...   (default: native)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

build() {
  local variant=$1
  case "$variant" in
    native)
      [[ -f build/native/CMakeCache.txt ]] ||
        CXX=g++ cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release
      cmake --build build/native -j"$jobs" ;;
    asan)
      [[ -f build/asan/CMakeCache.txt ]] ||
        CXX=g++ cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNKIT_SANITIZE=ON
      cmake --build build/asan -j"$jobs" ;;
    wasm)
      # emcmake's default test emulator passes a flag Node 20 rejects: use plain node.
      [[ -f build/wasm/CMakeCache.txt ]] ||
        emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release \
          -DCMAKE_CROSSCOMPILING_EMULATOR="$(command -v node)"
      cmake --build build/wasm -j"$jobs" ;;
    fuzz)
      [[ -f build/fuzz/CMakeCache.txt ]] ||
        CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNKIT_FUZZ=ON
      cmake --build build/fuzz -j"$jobs" ;;
    *) echo "build: unknown variant '$variant' (native, asan, wasm, fuzz)" >&2; return 2 ;;
  esac
}

(($#)) || set -- native
for v in "$@"; do
  echo "== build $v"
  build "$v"
done
