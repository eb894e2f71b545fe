// The machine's own limit, measured in the same run as the engines: FMA
// throughput of the best Highway target on one core (16 independent
// accumulators hide the FMA latency). Returns GFLOP/s (2 flops per lane per FMA).
#include <chrono>
#include <cstddef>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/native/peak.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit_bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

double FmaPeakT(size_t iterations) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  V acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = hn::Set(d, 1.0f + i * 1e-3f);
  const V a = hn::Set(d, 0.999999f), b = hn::Set(d, 1e-7f);
  const auto start = std::chrono::steady_clock::now();
  for (size_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < 16; ++i) acc[i] = hn::MulAdd(acc[i], a, b);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  V sum = acc[0];
  for (int i = 1; i < 16; ++i) sum = hn::Add(sum, acc[i]);
  volatile float sink = hn::GetLane(sum);
  (void)sink;
  return 2.0 * 16 * hn::Lanes(d) * static_cast<double>(iterations) / seconds * 1e-9;
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit_bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnkit_bench {
HWY_EXPORT(FmaPeakT);
double FmaPeakGflops(size_t iterations) { return HWY_DYNAMIC_DISPATCH(FmaPeakT)(iterations); }
}  // namespace attnkit_bench
#endif
