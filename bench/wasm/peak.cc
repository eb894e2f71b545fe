// The WebAssembly machine limit, measured in the same run as the engines:
// SIMD128 mul + add throughput (SIMD128 has no fused multiply-add; relaxed SIMD
// is not available with this toolchain). N independent f32x4 accumulators hide
// the latency of the mul -> add chain; V8 maps each to an xmm register, so N
// must stay below the 16 that x86-64 has without spilling. Counted as 2 flops
// per lane per mul + add, the same convention as 4 * T * T * d for attention.
// And the limit of reading memory (readsum). Built by bench/CMakeLists.txt
// (emcmake, scripts/bench.sh): -O3 -msimd128 --no-entry -> build/bench-wasm/peak.wasm
// (standalone: no imports, no JS glue); bench/wasm/bench.mjs times it.
#include <stddef.h>
#include <stdint.h>
#include <wasm_simd128.h>

namespace {

template <int N>
float MulAddLoop(int iterations, float a_value, float b_value) {
  v128_t acc[N];
  for (int i = 0; i < N; ++i) acc[i] = wasm_f32x4_splat(1.0f + 1e-3f * i);
  const v128_t a = wasm_f32x4_splat(a_value), b = wasm_f32x4_splat(b_value);
  for (int it = 0; it < iterations; ++it) {
#pragma clang loop unroll(full)
    for (int i = 0; i < N; ++i) acc[i] = wasm_f32x4_add(wasm_f32x4_mul(acc[i], a), b);
  }
  v128_t sum = acc[0];
  for (int i = 1; i < N; ++i) sum = wasm_f32x4_add(sum, acc[i]);
  return wasm_f32x4_extract_lane(sum, 0) + wasm_f32x4_extract_lane(sum, 3);
}

}  // namespace

// Each returns a value that depends on every accumulator, so no work is dropped.
// flops = 2 * 4 * N * iterations.
extern "C" {
__attribute__((export_name("muladd8"))) float MulAdd8(int n, float a, float b) {
  return MulAddLoop<8>(n, a, b);
}
__attribute__((export_name("muladd10"))) float MulAdd10(int n, float a, float b) {
  return MulAddLoop<10>(n, a, b);
}
__attribute__((export_name("muladd12"))) float MulAdd12(int n, float a, float b) {
  return MulAddLoop<12>(n, a, b);
}
__attribute__((export_name("muladd14"))) float MulAdd14(int n, float a, float b) {
  return MulAddLoop<14>(n, a, b);
}

// Memory's read limit: the sum of `bytes` bytes (a multiple of 128) of this
// module's memory past its data, read as f32x4 into 8 independent
// accumulators, the way a one-row product streams a model's weights. The
// first call grows the memory to hold them and writes them (pages never
// written would all read the one zero page); returns -1 if it cannot grow.
__attribute__((export_name("readsum"))) float ReadSum(unsigned bytes) {
  extern unsigned char __heap_base;
  const uintptr_t base = (reinterpret_cast<uintptr_t>(&__heap_base) + 127) & ~uintptr_t{127};
  const size_t have = __builtin_wasm_memory_size(0) * 65536;
  if (base + bytes > have) {
    if (__builtin_wasm_memory_grow(0, (base + bytes - have + 65535) / 65536) == size_t(-1)) {
      return -1;
    }
    float* fill = reinterpret_cast<float*>(base);
    for (size_t i = 0; i < bytes / 4; ++i) fill[i] = 1e-9f * float(i % 1000);
  }
  const v128_t* p = reinterpret_cast<const v128_t*>(base);
  v128_t acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = wasm_f32x4_splat(0.0f);
  for (size_t i = 0; i < bytes / 16; i += 8) {
#pragma clang loop unroll(full)
    for (int j = 0; j < 8; ++j) acc[j] = wasm_f32x4_add(acc[j], p[i + j]);
  }
  v128_t sum = acc[0];
  for (int j = 1; j < 8; ++j) sum = wasm_f32x4_add(sum, acc[j]);
  return wasm_f32x4_extract_lane(sum, 0) + wasm_f32x4_extract_lane(sum, 3);
}
}
