// The machine's own limit, measured in the same run as the engines: FMA
// throughput on one core (16 independent accumulators hide the FMA latency),
// at the widest vector of the best Highway target or at a given width (512,
// 256 or 128 bits, each run with that target's FMA instructions), so that every
// forced target is compared with the peak of its own width. GFLOP/s count 2
// flops per lane per FMA.
#include <chrono>
#include <cstddef>

#include "bench/native/harness.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/native/peak.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit_bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Independent FMA chains: enough to cover FMA latency x ports on any core (5 x
// 2 at most), few enough that they, a and b stay in AVX2's 16 registers. (With
// 16 chains one spilled there, and its store-to-load round trip each iteration
// held a 2-FMA-port core to 60% of its peak.)
constexpr int kChains = 12;

// acc[kChains] of `d`'s width: acc = acc * a + b, `iterations` times.
// Returns GFLOP/s over the wall time or, with cpu_time, over this thread's CPU time.
template <class D>
double FmaLoop(D d, size_t iterations, bool cpu_time) {
  using V = hn::Vec<D>;
  V acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = hn::Set(d, 1.0f + i * 1e-3f);
  const V a = hn::Set(d, 0.999999f), b = hn::Set(d, 1e-7f);
  const double cpu0 = harness::ThreadCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  for (size_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kChains; ++i) acc[i] = hn::MulAdd(acc[i], a, b);
  }
  const double seconds =
      cpu_time ? harness::ThreadCpuSeconds() - cpu0
               : std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  V sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = hn::Add(sum, acc[i]);
  volatile float sink = hn::GetLane(sum);
  (void)sink;
  return 2.0 * kChains * hn::Lanes(d) * static_cast<double>(iterations) / seconds * 1e-9;
}

double FmaPeakT(size_t iterations) { return FmaLoop(hn::ScalableTag<float>(), iterations, false); }

// bits: 0 for the widest vector of this target; 0 GFLOP/s if this target has no
// vector of that width.
double FmaPeakCpuT(size_t iterations, size_t bits) {
  const size_t widest = hn::Lanes(hn::ScalableTag<float>()) * 32;
  if (bits == 0 || bits == widest) return FmaLoop(hn::ScalableTag<float>(), iterations, true);
  if (bits == 256 && widest > 256) return FmaLoop(hn::CappedTag<float, 8>(), iterations, true);
  if (bits == 128 && widest > 128) return FmaLoop(hn::CappedTag<float, 4>(), iterations, true);
  return 0.0;
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit_bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnkit_bench {
HWY_EXPORT(FmaPeakT);
HWY_EXPORT(FmaPeakCpuT);
double FmaPeakGflops(size_t iterations) { return HWY_DYNAMIC_DISPATCH(FmaPeakT)(iterations); }
double FmaPeakCpuGflops(size_t iterations, size_t bits) {
  return HWY_DYNAMIC_DISPATCH(FmaPeakCpuT)(iterations, bits);
}
}  // namespace attnkit_bench
#endif
