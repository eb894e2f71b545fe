// attnkit: the finiteness check of a row of floats, per target (Highway),
// shared by the forward's kernels (ops-inl.h) and the backward's
// (backward-inl.h). Toggled include guard, as theirs.

#if defined(ATTNKIT_FINITE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNKIT_FINITE_INL_H_
#undef ATTNKIT_FINITE_INL_H_
#else
#define ATTNKIT_FINITE_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <limits>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// True if every value of x [n] is finite (or -inf, with kAllowNegInf). Sums
// x - x, 0 for finite x and NaN for +-inf and NaN, into four sums (one chain
// of adds would wait on each add) and tests them once per 64 vectors: a
// branch per vector costs more than the check.
template <bool kAllowNegInf = false>
HWY_INLINE bool AllFinite(const float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const auto vneg_inf = hn::Set(d, neg_inf);
  const auto diff = [&](size_t i) HWY_ATTR {
    auto v = hn::LoadU(d, x + i);
    if (kAllowNegInf) v = hn::IfThenZeroElse(hn::Eq(v, vneg_inf), v);
    return hn::Sub(v, v);
  };
  size_t i = 0;
  while (i + N <= n) {
    auto s0 = hn::Zero(d), s1 = s0, s2 = s0, s3 = s0;
    const size_t end = std::min(n - n % N, i + 64 * N);
    for (; i + 4 * N <= end; i += 4 * N) {
      s0 = hn::Add(s0, diff(i));
      s1 = hn::Add(s1, diff(i + N));
      s2 = hn::Add(s2, diff(i + 2 * N));
      s3 = hn::Add(s3, diff(i + 3 * N));
    }
    for (; i < end; i += N) s0 = hn::Add(s0, diff(i));
    const auto sum = hn::Add(hn::Add(s0, s1), hn::Add(s2, s3));
    if (!hn::AllTrue(d, hn::Eq(sum, hn::Zero(d)))) return false;
  }
  for (; i < n; ++i) {
    if (!(x[i] - x[i] == 0.0f) && !(kAllowNegInf && x[i] == neg_inf)) return false;
  }
  return true;
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_FINITE_INL_H_
