// The WebAssembly machine limit, measured in the same run as the engines:
// SIMD128 mul + add throughput (SIMD128 has no fused multiply-add; relaxed SIMD
// is not available with this toolchain). N independent f32x4 accumulators hide
// the latency of the mul -> add chain; V8 maps each to an xmm register, so N
// must stay below the 16 that x86-64 has without spilling. Counted as 2 flops
// per lane per mul + add, the same convention as 4 * T * T * d for attention.
// Built by bench/CMakeLists.txt (emcmake, scripts/bench.sh): -O3 -msimd128
// --no-entry -> build/bench-wasm/peak.wasm
// (standalone: no imports, no JS glue); bench/wasm/bench.mjs times it.
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
}
