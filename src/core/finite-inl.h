// attnkit: the finiteness check of a row of floats, per target (Highway),
// shared by the forward's kernels (ops-inl.h) and the backward's
// (backward-inl.h), alone or as a row is written. Toggled include guard, as
// theirs.

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

// to [n] = op(from [n]), op applied to whole vectors, then to single lanes
// (op(d, v) for a tag d and a vector v of it); returns whether every value
// stored is finite. Checks an output as it is written (the sum of v - v, as
// AllFinite), where a second pass over it would cost as much as the write.
// from may be to (in place).
template <class Op>
HWY_INLINE bool StoreRowFinite(const float* from, size_t n, float* to, const Op& op) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto diff = hn::Zero(d);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = op(d, hn::LoadU(d, from + i));
    hn::StoreU(v, d, to + i);
    diff = hn::Add(diff, hn::Sub(v, v));
  }
  const hn::CappedTag<float, 1> d1;
  auto diff1 = hn::Zero(d1);
  for (; i < n; ++i) {
    const auto v = op(d1, hn::LoadU(d1, from + i));
    hn::StoreU(v, d1, to + i);
    diff1 = hn::Add(diff1, hn::Sub(v, v));
  }
  return hn::AllTrue(d, hn::Eq(diff, hn::Zero(d))) && hn::GetLane(diff1) == 0.0f;
}

// to [n] = from [n]; returns whether every value is finite.
HWY_INLINE bool CopyRowFinite(const float* from, size_t n, float* to) {
  return StoreRowFinite(from, n, to, [](auto, auto v) HWY_ATTR { return v; });
}

// x [n] *= scale (lane for lane the products of ScaleRow without a softcap);
// returns whether every product is finite.
HWY_INLINE bool ScaleRowFinite(float* x, size_t n, float scale) {
  return StoreRowFinite(x, n, x,
                        [scale](auto d, auto v) HWY_ATTR { return hn::Mul(v, hn::Set(d, scale)); });
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_FINITE_INL_H_
