// attnkit: per-target SIMD kernels (Highway). Included by dispatch.cc once per
// target through foreach_target.h, hence the toggled include guard. All
// pointers are float32, row-major; n counts elements. Unless said otherwise
// inputs and outputs must not alias (HWY_RESTRICT).

#if defined(ATTNKIT_OPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNKIT_OPS_INL_H_
#undef ATTNKIT_OPS_INL_H_
#else
#define ATTNKIT_OPS_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "attnkit/matrix.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "src/core/finite-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DF1 = hn::CappedTag<float, 1>;  // one lane, for the tails

// In WebAssembly, the kernels of decoding whose loops are small run as
// functions of their own: inlined deep in a caller, V8 unrolls such loops and
// spills their accumulators (see GemmRowsOutOfLine below); out of line they
// run as with node --no-wasm-loop-unrolling. (inline: one definition for
// every file that includes this header.)
#undef ATTNKIT_OUT_OF_LINE_IN_WASM
#if HWY_TARGET == HWY_WASM
#define ATTNKIT_OUT_OF_LINE_IN_WASM inline HWY_NOINLINE
#else
#define ATTNKIT_OUT_OF_LINE_IN_WASM HWY_INLINE
#endif

// a [n] . b [n]. Two independent accumulators hide FMA latency (4 cycles, 2
// ports); more did not help at the head sizes attention uses (d_k <= 256).
HWY_INLINE float Dot(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, size_t n) {
  const DF d;
  const size_t N = hn::Lanes(d);
  auto sum0 = hn::Zero(d);
  auto sum1 = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    sum0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), sum0);
    sum1 = hn::MulAdd(hn::LoadU(d, a + i + N), hn::LoadU(d, b + i + N), sum1);
  }
  for (; i + N <= n; i += N) {
    sum0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), sum0);
  }
  const DF1 d1;
  auto tail = hn::Zero(d1);
  for (; i < n; ++i) {
    tail = hn::MulAdd(hn::LoadU(d1, a + i), hn::LoadU(d1, b + i), tail);
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(sum0, sum1))) + hn::GetLane(tail);
}

#if HWY_TARGET != HWY_SCALAR
// The 128-bit blocks of v [Lanes(d)] added together: [4].
template <class D>
HWY_INLINE hn::Vec<hn::Full128<float>> SumOfBlocks(D, hn::Vec<D> v) {
  if constexpr (hn::MaxLanes(D()) > 4) {
    const hn::Half<D> dh;
    return SumOfBlocks(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  } else {
    return v;
  }
}

// [sum of v0's lanes, v1's, v2's, v3's] [4], with one transposition instead
// of four horizontal sums. Within each 128-bit block, with vr = [r0 r1 r2 r3]:
//   s01 = [00+02, 10+12, 01+03, 11+13], s23 likewise for v2 and v3;
//   their 64-bit halves interleaved and added: [sum v0, sum v1, sum v2, sum v3];
// then the blocks are added (SumOfBlocks).
template <class D, class V = hn::Vec<D>>
HWY_INLINE hn::Vec<hn::Full128<float>> SumOfLanes4(D d, V v0, V v1, V v2, V v3) {
  const hn::Repartition<uint64_t, D> d64;
  const auto s01 =
      hn::BitCast(d64, hn::Add(hn::InterleaveLower(d, v0, v1), hn::InterleaveUpper(d, v0, v1)));
  const auto s23 =
      hn::BitCast(d64, hn::Add(hn::InterleaveLower(d, v2, v3), hn::InterleaveUpper(d, v2, v3)));
  return SumOfBlocks(d, hn::Add(hn::BitCast(d, hn::InterleaveLower(d64, s01, s23)),
                                hn::BitCast(d, hn::InterleaveUpper(d64, s01, s23))));
}
#endif

// out [n]: out[j] = q [d] . row j [d] of rows (rows `stride` floats apart).
// Four rows at a time share the loads of q and end in one SumOfLanes4: per
// row, Dot's horizontal sum costs as much as its d / Lanes FMAs (4 with
// AVX-512 at d = 64). The scores of decoding and of traces (Scores in
// steps-inl.h). With kRows > 4 (a multiple of 4), kRows rows at a time
// first: more streams of memory at once, for the long products of one row
// (a decoding step's unembedding, kVecMatRows rows). Each row's sum is the
// same whatever kRows: its own accumulator, its own SumOfLanes4; the last
// n % 4 rows take Dot.
template <size_t kRows = 4>
ATTNKIT_OUT_OF_LINE_IN_WASM void DotRows(const float* HWY_RESTRICT q,
                                         const float* HWY_RESTRICT rows, size_t stride, size_t n,
                                         size_t d, float* HWY_RESTRICT out) {
  static_assert(kRows % 4 == 0, "DotRows takes rows four at a time");
  size_t j = 0;
#if HWY_TARGET != HWY_SCALAR
  const DF df;
  const hn::Full128<float> d4;
  const size_t N = hn::Lanes(df);
  if constexpr (kRows > 4) {
    for (; j + kRows <= n; j += kRows) {
      const float* HWY_RESTRICT r[kRows];
      hn::Vec<DF> s[kRows];
      for (size_t k = 0; k < kRows; ++k) {
        r[k] = rows + (j + k) * stride;
        s[k] = hn::Zero(df);
      }
      size_t i = 0;
      for (; i + N <= d; i += N) {
        const auto qv = hn::LoadU(df, q + i);
        for (size_t k = 0; k < kRows; ++k) s[k] = hn::MulAdd(qv, hn::LoadU(df, r[k] + i), s[k]);
      }
      for (size_t k = 0; k < kRows; k += 4) {
        hn::StoreU(SumOfLanes4(df, s[k], s[k + 1], s[k + 2], s[k + 3]), d4, out + j + k);
      }
      for (; i < d; ++i) {
        for (size_t k = 0; k < kRows; ++k) out[j + k] += q[i] * r[k][i];
      }
    }
  }
  for (; j + 4 <= n; j += 4) {
    const float* HWY_RESTRICT r0 = rows + j * stride;
    const float* HWY_RESTRICT r1 = r0 + stride;
    const float* HWY_RESTRICT r2 = r1 + stride;
    const float* HWY_RESTRICT r3 = r2 + stride;
    auto s0 = hn::Zero(df), s1 = hn::Zero(df), s2 = hn::Zero(df), s3 = hn::Zero(df);
    size_t i = 0;
    for (; i + N <= d; i += N) {
      const auto qv = hn::LoadU(df, q + i);
      s0 = hn::MulAdd(qv, hn::LoadU(df, r0 + i), s0);
      s1 = hn::MulAdd(qv, hn::LoadU(df, r1 + i), s1);
      s2 = hn::MulAdd(qv, hn::LoadU(df, r2 + i), s2);
      s3 = hn::MulAdd(qv, hn::LoadU(df, r3 + i), s3);
    }
    hn::StoreU(SumOfLanes4(df, s0, s1, s2, s3), d4, out + j);
    for (; i < d; ++i) {
      out[j] += q[i] * r0[i];
      out[j + 1] += q[i] * r1[i];
      out[j + 2] += q[i] * r2[i];
      out[j + 3] += q[i] * r3[i];
    }
  }
#endif
  for (; j < n; ++j) out[j] = Dot(q, rows + j * stride, d);
}

// y [n] += s * x [n].
HWY_INLINE void MulAddRow(float s, const float* HWY_RESTRICT x, float* HWY_RESTRICT y, size_t n) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const auto vs = hn::Set(d, s);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::MulAdd(vs, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, y + i);
  }
  const DF1 d1;
  const auto vs1 = hn::Set(d1, s);
  for (; i < n; ++i) {
    hn::StoreU(hn::MulAdd(vs1, hn::LoadU(d1, x + i), hn::LoadU(d1, y + i)), d1, y + i);
  }
}

// y [n] += w[0] * x row 0 + ... + w[rows - 1] * x row (rows - 1), x [rows, n]
// with rows `stride` floats apart: the sums of MulAddRow row after row, in the
// same order. y is kept in registers, four vectors at a time, across all the
// rows, instead of being loaded and stored once per row.
ATTNKIT_OUT_OF_LINE_IN_WASM void AddWeightedRows(const float* HWY_RESTRICT w, size_t rows,
                                                 const float* HWY_RESTRICT x, size_t stride,
                                                 float* HWY_RESTRICT y, size_t n) {
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    auto y0 = hn::LoadU(d, y + i), y1 = hn::LoadU(d, y + i + N);
    auto y2 = hn::LoadU(d, y + i + 2 * N), y3 = hn::LoadU(d, y + i + 3 * N);
    const float* HWY_RESTRICT xr = x + i;
    for (size_t j = 0; j < rows; ++j, xr += stride) {
      const auto wj = hn::Set(d, w[j]);
      y0 = hn::MulAdd(wj, hn::LoadU(d, xr), y0);
      y1 = hn::MulAdd(wj, hn::LoadU(d, xr + N), y1);
      y2 = hn::MulAdd(wj, hn::LoadU(d, xr + 2 * N), y2);
      y3 = hn::MulAdd(wj, hn::LoadU(d, xr + 3 * N), y3);
    }
    hn::StoreU(y0, d, y + i);
    hn::StoreU(y1, d, y + i + N);
    hn::StoreU(y2, d, y + i + 2 * N);
    hn::StoreU(y3, d, y + i + 3 * N);
  }
  for (; i + N <= n; i += N) {
    auto yv = hn::LoadU(d, y + i);
    for (size_t j = 0; j < rows; ++j)
      yv = hn::MulAdd(hn::Set(d, w[j]), hn::LoadU(d, x + j * stride + i), yv);
    hn::StoreU(yv, d, y + i);
  }
  const DF1 d1;
  for (; i < n; ++i) {
    auto yv = hn::LoadU(d1, y + i);
    for (size_t j = 0; j < rows; ++j)
      yv = hn::MulAdd(hn::Set(d1, w[j]), hn::LoadU(d1, x + j * stride + i), yv);
    hn::StoreU(yv, d1, y + i);
  }
}

// The rows of B a one-row product, c = a B (AddVecMat) or a B^T (DotRows),
// reads at a time: so many streams of memory keep a decoding step's weights,
// far larger than the caches, streaming; more spill the registers (16 of
// them in WebAssembly and AVX2, where AddVecMat keeps its weights in memory
// operands, DotRows its sums in registers).
#if HWY_TARGET == HWY_WASM
constexpr size_t kVecMatRows = 16;
#else
constexpr size_t kVecMatRows = 12;
#endif
constexpr size_t kDotRowsOfOneRow = 12;

// y [n] += w [rows] x [rows, n] (rows `stride` floats apart), the sums of
// AddWeightedRows in the same order, but reading x in its memory order:
// kRows rows at a time, each a stream from left to right, with y (in the
// first level of cache) loaded and stored once per kRows rows. For an x far
// larger than the caches (the weights of a decoding step's products) this
// keeps the memory streaming: AddWeightedRows walks down x's columns, one
// cache line per row, a page apart when rows are long, which the hardware's
// prefetchers do not follow.
template <size_t kRows>
ATTNKIT_OUT_OF_LINE_IN_WASM void AddVecMat(const float* HWY_RESTRICT w, size_t rows,
                                           const float* HWY_RESTRICT x, size_t stride,
                                           float* HWY_RESTRICT y, size_t n) {
  const DF d;
  const DF1 d1;
  const size_t N = hn::Lanes(d);
  size_t j = 0;
  for (; j + kRows <= rows; j += kRows) {
    hn::Vec<DF> wv[kRows];
    const float* HWY_RESTRICT xr[kRows];
    for (size_t r = 0; r < kRows; ++r) {
      wv[r] = hn::Set(d, w[j + r]);
      xr[r] = x + (j + r) * stride;
    }
    size_t i = 0;
    for (; i + N <= n; i += N) {
      auto v = hn::LoadU(d, y + i);
      for (size_t r = 0; r < kRows; ++r) v = hn::MulAdd(wv[r], hn::LoadU(d, xr[r] + i), v);
      hn::StoreU(v, d, y + i);
    }
    for (; i < n; ++i) {
      auto v = hn::LoadU(d1, y + i);
      for (size_t r = 0; r < kRows; ++r) {
        v = hn::MulAdd(hn::Set(d1, w[j + r]), hn::LoadU(d1, xr[r] + i), v);
      }
      hn::StoreU(v, d1, y + i);
    }
  }
  for (; j < rows; ++j) MulAddRow(w[j], x + j * stride, y, n);
}

// x [n] = 0, in whole vectors and the tail in one masked store where the
// target has them (else single lanes). A plain loop becomes a call to memset,
// which costs more than these stores for the short rows of small calls.
HWY_INLINE void ZeroRow(float* HWY_RESTRICT x, size_t n) {
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Zero(d), d, x + i);
#if HWY_MEM_OPS_MIGHT_FAULT
  const DF1 d1;
  for (; i < n; ++i) hn::StoreU(hn::Zero(d1), d1, x + i);
#else
  if (i < n) hn::SafeFillN(n - i, 0.0f, d, x + i);
#endif
}

// to [n] = from [n].
HWY_INLINE void CopyRow(const float* HWY_RESTRICT from, size_t n, float* HWY_RESTRICT to) {
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::LoadU(d, from + i), d, to + i);
  for (; i < n; ++i) to[i] = from[i];
}

// One vector step of ScaleRow: s * scale, then softcap * tanh(s / softcap);
// with `slope`, the softcap's derivative there, 1 - tanh^2, into *slope
// (1 without a softcap).
template <class D, class V>
HWY_INLINE V ScaleCap(D d, V v, float scale, float softcap, V* slope = nullptr) {
  v = hn::Mul(v, hn::Set(d, scale));
  if (softcap > 0.0f) {
    // Div, not Mul by 1/softcap: for a subnormal softcap the reciprocal is inf
    // and 0 * inf would be NaN.
    const auto cap = hn::Set(d, softcap);
    const V t = hn::Tanh(d, hn::Div(v, cap));
    if (slope) *slope = hn::NegMulAdd(t, t, hn::Set(d, 1.0f));
    v = hn::Mul(cap, t);
  } else if (slope) {
    *slope = hn::Set(d, 1.0f);
  }
  return v;
}

// x [n] in place: x * scale, then soft-capped when softcap > 0. With slope
// [n] (not null), also the softcap's derivative 1 - tanh^2 per entry, which
// the backward's ScaleSoftcapGrad multiplies in. Whole vectors, then single
// lanes; with kShortRows (the short rows of small heads: d_v = 8 with
// AVX-512) 8 and 4 lanes before single ones where the vectors are wider.
// Every lane the same product either way. The long rows keep two plain
// loops: the fused kernel rescales its output rows once per key tile, and the
// extra steps there slowed its inner loop.
template <bool kShortRows = false>
HWY_INLINE void ScaleRow(float* HWY_RESTRICT x, size_t n, float scale, float softcap,
                         float* HWY_RESTRICT slope = nullptr) {
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  hn::Vec<DF> g;
  for (; i + N <= n; i += N) {
    hn::StoreU(ScaleCap(d, hn::LoadU(d, x + i), scale, softcap, slope ? &g : nullptr), d, x + i);
    if (slope) hn::StoreU(g, d, slope + i);
  }
  if constexpr (kShortRows && HWY_LANES(float) > 8) {
    const hn::CappedTag<float, 8> d8;
    hn::Vec<decltype(d8)> g8;
    if (i + 8 <= n) {
      hn::StoreU(ScaleCap(d8, hn::LoadU(d8, x + i), scale, softcap, slope ? &g8 : nullptr), d8,
                 x + i);
      if (slope) hn::StoreU(g8, d8, slope + i);
      i += 8;
    }
  }
  if constexpr (kShortRows && HWY_LANES(float) > 4) {
    const hn::CappedTag<float, 4> d4;
    hn::Vec<decltype(d4)> g4;
    if (i + 4 <= n) {
      hn::StoreU(ScaleCap(d4, hn::LoadU(d4, x + i), scale, softcap, slope ? &g4 : nullptr), d4,
                 x + i);
      if (slope) hn::StoreU(g4, d4, slope + i);
      i += 4;
    }
  }
  const DF1 d1;
  hn::Vec<DF1> g1;
  for (; i < n; ++i) {
    hn::StoreU(ScaleCap(d1, hn::LoadU(d1, x + i), scale, softcap, slope ? &g1 : nullptr), d1,
               x + i);
    if (slope) hn::StoreU(g1, d1, slope + i);
  }
}

// The max of x [n] into *max (-inf for n = 0). Returns false if x holds NaN
// or +inf, or, unless kAllowNegInf, -inf. With kWholeVectors, x has room for
// whole vectors (the short rows of the small-shape kernel): its last lanes
// are read as one vector, those past n ignored, instead of one at a time.
// Out of line in wasm: inlined in the fused kernel, which has more live
// values than V8's 15 vector registers, its accumulators would live on the
// stack.
template <bool kAllowNegInf = true, bool kWholeVectors = false>
ATTNKIT_OUT_OF_LINE_IN_WASM bool RowMax(const float* HWY_RESTRICT x, size_t n, float* max) {
  static_assert(!(kAllowNegInf && kWholeVectors), "whole vectors take the test 0 * v below");
  const DF d;
  const DF1 d1;
  const size_t N = hn::Lanes(d);
  const float kInf = std::numeric_limits<float>::infinity();
  auto vmax = hn::Set(d, -kInf);
  auto vmax1 = hn::Set(d1, -kInf);
  size_t i = 0;
  if constexpr (!kAllowNegInf) {
    // 0 * v is NaN for v = NaN or +-inf, else 0: one FMA per vector and one
    // test per row, rather than a test per vector as below.
    const auto zero = hn::Zero(d);
    auto bad = zero;
    for (; i + N <= n; i += N) {
      const auto v = hn::LoadU(d, x + i);
      bad = hn::MulAdd(v, zero, bad);
      vmax = hn::Max(vmax, v);
    }
    if (kWholeVectors && i < n) {
      const auto visible = hn::FirstN(d, n - i);
      const auto v = hn::LoadU(d, x + i);
      bad = hn::MulAdd(hn::IfThenElseZero(visible, v), zero, bad);
      vmax = hn::Max(vmax, hn::IfThenElse(visible, v, hn::Set(d, -kInf)));
      i = n;
    }
    if (!hn::AllTrue(d, hn::Eq(bad, zero))) return false;
  }
  // v < +inf is false for NaN and +inf; |v| < +inf also for -inf.
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, x + i);
    const auto m = kAllowNegInf ? v : hn::Abs(v);
    if (!hn::AllTrue(d, hn::Lt(m, hn::Set(d, kInf)))) return false;
    vmax = hn::Max(vmax, v);
  }
  for (; i < n; ++i) {
    const auto v = hn::LoadU(d1, x + i);
    const auto m = kAllowNegInf ? v : hn::Abs(v);
    if (!hn::AllTrue(d1, hn::Lt(m, hn::Set(d1, kInf)))) return false;
    vmax1 = hn::Max(vmax1, v);
  }
  // Decide "all -inf" on the lanes themselves: EMU128's MaxOfLanes starts
  // from the lowest finite float and would report -FLT_MAX for them.
  if (hn::AllTrue(d, hn::Eq(vmax, hn::Set(d, -kInf))) && hn::GetLane(vmax1) == -kInf) {
    *max = -kInf;
  } else {
    *max = std::max(hn::GetLane(hn::MaxOfLanes(d, vmax)), hn::GetLane(vmax1));
  }
  return true;
}

// Below this, exp(x) is subnormal: ExpSubtractSum gives 0 there instead.
// Subnormal weights would be negligible (< 1.2e-38 of the row's largest) yet
// slow every later multiply on x86 (microcode assists, ~100 cycles each);
// peaked rows (large logits) are full of them.
constexpr float kExpFlushBelow = -87.0f;

// exp(v) per lane for v <= 88, and 0 where v < kExpFlushBelow (also for
// v = -inf and NaN). Softmax only takes exp of scores minus their max (<= 0).
// As Cephes' expf: v = n ln2 + r with n = round(v / ln2) and |r| <= ln2 / 2
// (ln2 in two parts, Cody & Waite), e^r ~ 1 + r + r^2 q(r), and 2^n added to
// the exponent bits. q is a cubic fitted for the least maximum relative error
// on |r| <= ln2 / 2 (1.05e-7; scripts/fit_exp.py). Relative error <= 1.9e-7
// (3.1 ulp) on [-87, 0], against double exp. Cephes' degree-7 polynomial
// gives 1.4 ulp but costs two more FMAs per lane, on the hottest loop of
// softmax. About 14 operations, where hn::Exp, valid over all floats, takes
// about 27. Above -87, n >= -126, so the result is a normal float.
template <class D, class V>
HWY_INLINE V ExpFlushed(D d, V v) {
  const hn::RebindToSigned<D> di;
  // z = 1.5 * 2^23 + n: the low bits of z are n as an integer.
  const V kMagic = hn::Set(d, 12582912.0f);
  const V z = hn::MulAdd(v, hn::Set(d, 1.44269504088896341f), kMagic);
  const V n = hn::Sub(z, kMagic);
  V r = hn::MulAdd(n, hn::Set(d, -0.693359375f), v);
  r = hn::MulAdd(n, hn::Set(d, 2.12194440e-4f), r);
  V p = hn::Set(d, 8.31252709e-3f);
  p = hn::MulAdd(p, r, hn::Set(d, 4.18901145e-2f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.66671142e-1f));
  p = hn::MulAdd(p, r, hn::Set(d, 4.99992311e-1f));
  p = hn::Add(hn::MulAdd(p, hn::Mul(r, r), r), hn::Set(d, 1.0f));  // e^r
  const V e = hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(hn::BitCast(di, z))));
  return hn::IfThenElseZero(hn::Ge(v, hn::Set(d, kExpFlushBelow)), e);
}

// 2^v per lane for v <= 127, and 0 where v < -126 (2^v would be subnormal,
// see kExpFlushBelow; also for v = -inf and NaN). v = n + r with n = round(v)
// and |r| <= 1/2, both exact, 2^r ~ 1 + r p(r), and n added to the exponent
// bits. p is a quartic fitted for the least maximum relative error on |r| <=
// 1/2 (9.1e-8; 1.9e-7 evaluated in float32; scripts/fit_exp.py --base 2).
// No Cody-Waite split: v - n is exact.
template <class D, class V>
HWY_INLINE V Exp2Flushed(D d, V v) {
  const hn::RebindToSigned<D> di;
  // z = 1.5 * 2^23 + n: the low bits of z are n as an integer.
  const V kMagic = hn::Set(d, 12582912.0f);
  const V z = hn::Add(v, kMagic);
  const V r = hn::Sub(v, hn::Sub(z, kMagic));
  V p = hn::Set(d, 1.32647238e-3f);
  p = hn::MulAdd(p, r, hn::Set(d, 9.67151299e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 5.55073358e-2f));
  p = hn::MulAdd(p, r, hn::Set(d, 2.40222424e-1f));
  p = hn::MulAdd(p, r, hn::Set(d, 6.93147004e-1f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.0f));  // 2^r
  const V e = hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(hn::BitCast(di, z))));
  return hn::IfThenElseZero(hn::Ge(v, hn::Set(d, -126.0f)), e);
}

// exp(v) = 2^(v log2(e)) per lane for v <= 88, and 0 where v < -87.3 (as
// ExpFlushed): the fused kernel's exp. Relative error <= 1.9e-7 + |v| * 6e-8
// (the rounding of v log2(e)), so less accurate than ExpFlushed only far
// below the row max, where the weights are < e^-20. In wasm, which has no
// FMA, it takes 4 fewer operations per vector and 3 fewer constants.
template <class D, class V>
HWY_INLINE V ExpViaExp2(D d, V v) {
  return Exp2Flushed(d, hn::Mul(v, hn::Set(d, 1.44269504088896341f)));
}

// x [n] = exp(x - max) in place (ExpFlushed, or with kViaExp2 ExpViaExp2),
// flushed to 0 below kExpFlushBelow; returns the sum: whole vectors, then the
// last lanes one by one. exp(-inf) = 0 exactly. With kWholeVectors, x has
// room for whole vectors: the last lanes are computed as one vector, zeros
// past n. (XNNPACK calls this raddstoreexpminusmax.)
template <bool kViaExp2 = false, bool kWholeVectors = false>
HWY_INLINE float ExpSubtractSum(float* HWY_RESTRICT x, size_t n, float max) {
  const auto exp = [](auto d, auto v) HWY_ATTR {
    if constexpr (kViaExp2) {
      return ExpViaExp2(d, v);
    } else {
      return ExpFlushed(d, v);
    }
  };
  const DF d;
  const DF1 d1;
  const size_t N = hn::Lanes(d);
  auto vsum = hn::Zero(d);
  auto vsum1 = hn::Zero(d1);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto e = exp(d, hn::Sub(hn::LoadU(d, x + i), hn::Set(d, max)));
    vsum = hn::Add(vsum, e);
    hn::StoreU(e, d, x + i);
  }
  float tail = 0.0f;
  if (kWholeVectors && i < n) {
    const auto e = exp(d, hn::Sub(hn::LoadU(d, x + i), hn::Set(d, max)));
    hn::StoreU(hn::IfThenElseZero(hn::FirstN(d, n - i), e), d, x + i);
    // The last lanes added in order, as the loop below adds them; a plain
    // float sum, which the compiler unrolls (one-lane vectors it does not).
    for (; i < n; ++i) tail += x[i];
  }
  for (; i < n; ++i) {
    const auto e = exp(d1, hn::Sub(hn::LoadU(d1, x + i), hn::Set(d1, max)));
    vsum1 = hn::Add(vsum1, e);
    hn::StoreU(e, d1, x + i);
  }
  return hn::GetLane(hn::SumOfLanes(d, vsum)) + (hn::GetLane(vsum1) + tail);
}

// Row softmax of x [n] in place, numerically stable: p_j = exp(x_j - max) /
// sum. -inf entries (masked) get exactly 0; a row of only -inf becomes all
// zeros. Returns false if the row holds NaN or +inf (overflowed scores).
// Exp is ExpFlushed (3.1 ulp on [-87, 0]; 0 below kExpFlushBelow).
HWY_INLINE bool SoftmaxRow(float* HWY_RESTRICT x, size_t n) {
  const float kInf = std::numeric_limits<float>::infinity();
  // Reject NaN / +inf (v < +inf is false for both) while finding the max.
  float max;
  if (!RowMax(x, n, &max)) return false;
  if (max == -kInf) {  // fully masked: zeros, not NaN from -inf - -inf
    ZeroRow(x, n);
    return true;
  }
  // sum >= 1: the max entry contributes exp(0) = 1.
  const float inv = 1.0f / ExpSubtractSum(x, n, max);
  ScaleRow(x, n, inv, 0.0f);
  return true;
}

// k steps per pointer advance in GemmTile (its kUnroll, 1 or 4), so that
// most loads use constant offsets: natively four steps keep more independent
// multiply-adds in flight over a long K. In wasm one step: LLVM orders each
// accumulator's products of all the steps together, which keeps the B rows
// of all of them live, and V8, which keeps 15 of x86's 16 vector registers
// for values, then spills an accumulator of the 4 x 2 tile to the stack every
// iteration. Products whose tiles run a short K take one step everywhere
// (kGemmShortK, e.g. the backward's, see backward-inl.h): the four-step loop
// and its register copies cost more than they save there.
#if HWY_TARGET == HWY_WASM
constexpr size_t kGemmUnroll = 1;
#else
constexpr size_t kGemmUnroll = 4;
#endif
constexpr size_t kGemmShortK = 1;

// A matrix [rows, cols] stored in panels of `width` columns (the last may be
// narrower): panel p is [rows, width] at data + p * panel_stride, with rows
// `stride` floats apart. A plain row-major matrix is one panel (Whole).
struct PanelView {
  const float* data;
  size_t width, stride, panel_stride;

  static PanelView Whole(ConstMatrixView m) {
    return {m.data, std::numeric_limits<size_t>::max(), m.stride, 0};
  }
};

// How GemmTile reads A [M, K]: element (i, k) at A.data[i * kRowStep + k *
// kColStep], both known at compile time; or, with kRowStep = 0, rows A.stride
// floats apart (known at run time) and kColStep = 1. With both known, one
// pointer (one index in wasm) serves all rows of a register tile: A packed
// k-major [K, kRows] is GemmA<1, kRows>, rows a constant S floats apart
// GemmA<S, 1>. With a pointer per row, V8 advances kRows indices per k step
// in the wasm GEMM loop.
template <size_t kRowStep, size_t kColStep>
struct GemmA {
  static_assert(kRowStep != 0 || kColStep == 1, "rows at run time: contiguous columns");
  static constexpr size_t kRow = kRowStep, kCol = kColStep;
};
using GemmARows = GemmA<0, 1>;  // row-major, rows A.stride apart
// A^T read in place: the view A [M, K] is the transpose of a row-major [K, M]
// matrix, element (i, k) at A.data[i + k * A.stride] (kColStep 0: A.stride,
// known at run time). C = A^T B then needs no transposed copy of A.
using GemmATransposed = GemmA<1, 0>;

// One register tile of C = A B (or C += A B with kAccumulate):
// C rows [i, i + kRows), columns [j, j + kCols * Lanes(d)), from A [M, K]
// (read as Layout says, see GemmA) and B's columns [j, j + kCols * Lanes(d))
// at b [K, kCols * Lanes(d)], rows `stride` floats apart. The kRows x kCols
// accumulators stay in registers for the whole K loop: per k, kCols loads of
// B and kRows broadcasts of A feed kRows * kCols FMAs. 4 x 2 fits the 16
// registers of SSE4/AVX2 and the WASM target. Returns true if every value
// stored is finite: checked on the accumulators before they are stored (adds,
// off the FMA ports), so that a product needs no second pass over C.
template <size_t kRows, size_t kCols, bool kAccumulate, class Layout, size_t kUnroll, class D>
HWY_INLINE bool GemmTile(D d, ConstMatrixView A, const float* HWY_RESTRICT b, size_t stride,
                         MatrixView C, size_t i, size_t j) {
  static_assert(kUnroll == 1 || kUnroll == 4, "GemmTile takes 1 or 4 steps at a time");
  using V = hn::Vec<D>;
  const size_t N = hn::Lanes(d);
  V acc[kRows][kCols];
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t c = 0; c < kCols; ++c) {
      acc[r][c] = kAccumulate ? hn::LoadU(d, C.Row(i + r) + j + c * N) : hn::Zero(d);
    }
  }
  // One pointer per row, or with the layout known at compile time one for all.
  constexpr bool kOnePointer = Layout::kRow != 0;
  constexpr size_t kPointers = kOnePointer ? 1 : kRows;
  const size_t col_step = Layout::kCol != 0 ? Layout::kCol : A.stride;  // see GemmATransposed
  const size_t advance = kOnePointer ? col_step : 1;                    // per k step
  const float* a[kPointers];
  for (size_t r = 0; r < kPointers; ++r) {
    a[r] = kOnePointer ? A.data + i * Layout::kRow : A.Row(i + r);
  }
  // One step: acc[r][:] += a[r][u] * B row (k + u). The pointers advance once
  // per kUnroll steps (see kGemmUnroll).
  const auto step = [&](size_t u, const float* HWY_RESTRICT brow) HWY_ATTR {
    V bv[kCols];
    for (size_t c = 0; c < kCols; ++c) bv[c] = hn::LoadU(d, brow + c * N);
    for (size_t r = 0; r < kRows; ++r) {
      const V av = hn::Set(d, kOnePointer ? a[0][r * Layout::kRow + u * col_step] : a[r][u]);
      for (size_t c = 0; c < kCols; ++c) acc[r][c] = hn::MulAdd(av, bv[c], acc[r][c]);
    }
  };
  // The loop ends on a[0]: no counter of its own.
  const float* const a_end = a[0] + A.cols / kUnroll * kUnroll * advance;
  while (a[0] != a_end) {
    step(0, b);
    if constexpr (kUnroll > 1) {
      step(1, b + stride);
      step(2, b + 2 * stride);
      step(3, b + 3 * stride);
    }
    for (size_t r = 0; r < kPointers; ++r) a[r] += kUnroll * advance;
    b += kUnroll * stride;
  }
  for (size_t k = A.cols / kUnroll * kUnroll; k < A.cols; ++k) {
    step(0, b);
    for (size_t r = 0; r < kPointers; ++r) a[r] += advance;
    b += stride;
  }
  // acc - acc is 0 for finite values and NaN for +-inf and NaN.
  V sum = hn::Zero(d);
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t c = 0; c < kCols; ++c) {
      sum = hn::Add(sum, hn::Sub(acc[r][c], acc[r][c]));
      hn::StoreU(acc[r][c], d, C.Row(i + r) + j + c * N);
    }
  }
  return hn::AllTrue(d, hn::Eq(sum, hn::Zero(d)));
}

// C rows [i, i + kRows) = (or +=) A rows [i, i + kRows) B, all columns, B
// [K, C.cols] in panels: panel by panel, tiles of two vectors, then one, then
// 8 and 4 lanes (targets with wider vectors), then single lanes. Returns true
// if every value stored is finite.
template <size_t kRows, bool kAccumulate, class Layout, size_t kUnroll>
HWY_INLINE bool GemmRowsInline(ConstMatrixView A, const PanelView& B, MatrixView C, size_t i) {
  const DF d;
  const DF1 d1;
  const size_t N = hn::Lanes(d);
  const float* panel = B.data;
  bool finite = true;
  for (size_t j0 = 0; j0 < C.cols; panel += B.panel_stride) {
    const size_t w = std::min(B.width, C.cols - j0);
    size_t j = 0;
    for (; j + 2 * N <= w; j += 2 * N) {
      finite &=
          GemmTile<kRows, 2, kAccumulate, Layout, kUnroll>(d, A, panel + j, B.stride, C, i, j0 + j);
    }
    for (; j + N <= w; j += N) {
      finite &=
          GemmTile<kRows, 1, kAccumulate, Layout, kUnroll>(d, A, panel + j, B.stride, C, i, j0 + j);
    }
    // Narrower vectors for the rest (e.g. d_v = 8 with AVX-512): single lanes
    // would take a pass over A per column.
    if constexpr (HWY_LANES(float) > 8) {
      const hn::CappedTag<float, 8> d8;
      for (; j + 8 <= w; j += 8) {
        finite &= GemmTile<kRows, 1, kAccumulate, Layout, kUnroll>(d8, A, panel + j, B.stride, C, i,
                                                                   j0 + j);
      }
    }
    if constexpr (HWY_LANES(float) > 4) {
      const hn::CappedTag<float, 4> d4;
      for (; j + 4 <= w; j += 4) {
        finite &= GemmTile<kRows, 1, kAccumulate, Layout, kUnroll>(d4, A, panel + j, B.stride, C, i,
                                                                   j0 + j);
      }
    }
    for (; j < w; ++j) {
      finite &= GemmTile<kRows, 1, kAccumulate, Layout, kUnroll>(d1, A, panel + j, B.stride, C, i,
                                                                 j0 + j);
    }
    j0 += w;
  }
  return finite;
}

#if HWY_TARGET == HWY_WASM
// In WebAssembly, GemmRows runs in a function of its own. V8's optimizing
// compiler (TurboFan; V8 11.3 in Node 20) unrolls every innermost wasm loop
// smaller than 50 * (depth + 1) graph nodes, depth being the number of loops
// around it, at least twice (src/compiler/loop-unrolling.h). Inlined into the
// fused kernel, GemmTile's k loop sits several loops deep and is unrolled
// three times; with an exit test after each copy, TurboFan places each copy's
// arithmetic after all of its loads, and the accumulators spill to the stack.
// Here, one loop deep, it is unrolled at most twice and its accumulators stay
// in registers (with one k step per iteration, see kGemmUnroll). HWY_NOINLINE
// holds off LLVM; wasm-opt inlines any function that has a single caller
// unless told not to (src/bindings/CMakeLists.txt does; the wasm test binary
// does not), so storing and accumulating calls share this one: C = A B with A
// read as StoreA says, or C += A B with A read as AccumulateA says (see GemmA).
template <size_t kRows, class StoreA, class AccumulateA, size_t kUnroll>
HWY_NOINLINE bool GemmRowsOutOfLine(bool accumulate, ConstMatrixView A, const PanelView& B,
                                    MatrixView C, size_t i) {
  if (accumulate) return GemmRowsInline<kRows, true, AccumulateA, kUnroll>(A, B, C, i);
  return GemmRowsInline<kRows, false, StoreA, kUnroll>(A, B, C, i);
}
#endif

// C rows [i, i + kRows) = A rows [i, i + kRows) B (StoreA's layout), or +=
// (kAccumulate, AccumulateA's layout); GemmRowsInline, called out of line in
// WebAssembly (see above): callers that store and accumulate name the same
// pair of layouts, so that they share one function. kUnroll: see
// kGemmUnroll. Returns true if every value stored is finite.
template <size_t kRows, bool kAccumulate, class StoreA = GemmARows, class AccumulateA = GemmARows,
          size_t kUnroll = kGemmUnroll>
HWY_INLINE bool GemmRows(ConstMatrixView A, const PanelView& B, MatrixView C, size_t i) {
#if HWY_TARGET == HWY_WASM
  return GemmRowsOutOfLine<kRows, StoreA, AccumulateA, kUnroll>(kAccumulate, A, B, C, i);
#else
  using Layout = std::conditional_t<kAccumulate, AccumulateA, StoreA>;
  return GemmRowsInline<kRows, kAccumulate, Layout, kUnroll>(A, B, C, i);
#endif
}

// Rows of C per register tile: with 32 vector registers (AVX-512) 8 rows x 2
// vectors of accumulators fit; with 16 (SSE4, AVX2, WASM) 4 x 2 do.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr size_t kGemmRows = 8;
#else
constexpr size_t kGemmRows = 4;
#endif

// C [M, N] = A [M, K] B [K, N] (or C += A B with kAccumulate), kGemmRows rows
// at a time, A read as StoreA (AccumulateA) says (see GemmA: the backward
// reads P and dS transposed, MatMulTransposedA reads A^T in place), B in
// panels. C must not alias A or B. Operands padded to whole vectors (the
// backward's) take no single-lane column tail. kUnroll: k steps per pointer
// advance (see kGemmUnroll). Returns true if every value of C is finite.
template <bool kAccumulate = false, class StoreA = GemmARows, class AccumulateA = GemmARows,
          size_t kUnroll = kGemmUnroll>
HWY_INLINE bool MatMul(ConstMatrixView A, const PanelView& B, MatrixView C) {
  bool finite = true;
  size_t i = 0;
  for (; i + kGemmRows <= A.rows; i += kGemmRows) {
    finite &= GemmRows<kGemmRows, kAccumulate, StoreA, AccumulateA, kUnroll>(A, B, C, i);
  }
  if (kGemmRows > 4 && i + 4 <= A.rows) {
    finite &= GemmRows<4, kAccumulate, StoreA, AccumulateA, kUnroll>(A, B, C, i);
    i += 4;
  }
  switch (A.rows - i) {
    case 3:
      finite &= GemmRows<3, kAccumulate, StoreA, AccumulateA, kUnroll>(A, B, C, i);
      break;
    case 2:
      finite &= GemmRows<2, kAccumulate, StoreA, AccumulateA, kUnroll>(A, B, C, i);
      break;
    case 1:
      finite &= GemmRows<1, kAccumulate, StoreA, AccumulateA, kUnroll>(A, B, C, i);
      break;
    default:
      break;
  }
  return finite;
}

// C [M, N] = A [M, K] B [K, N] (or +=), B row-major, A read as Layout says.
// Returns true if every value of C is finite.
template <bool kAccumulate = false, class Layout = GemmARows>
HWY_INLINE bool MatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  return MatMul<kAccumulate, Layout, Layout>(A, PanelView::Whole(B), C);
}

// The panel width of PackPanels: two vectors, the width of a GEMM register tile.
HWY_INLINE size_t GemmPanelWidth() { return 2 * hn::Lanes(DF()); }

// Packs B [K, N] into panels of W = GemmPanelWidth() columns, dst [ceil(N /
// W), K, W]: panel p holds columns [p W, p W + W) with its rows contiguous,
// so that a register tile of MatMulPanels reads one stream from top to bottom
// instead of W columns of rows N floats apart. The last panel's columns past N
// are never written nor read. Row by row across the panels, B read in memory
// order; a whole panel's row copied as two vectors of a width known here (a
// copy of a width known only at run time is compiled to a call of memcpy per
// row, which in WebAssembly costs more than the row). Out of line in wasm, as
// PackPanelsTransposed: one call per kMaxPanel columns, and one copy in the
// module instead of one per product.
ATTNKIT_OUT_OF_LINE_IN_WASM PanelView PackPanels(ConstMatrixView B, float* HWY_RESTRICT dst) {
  const DF d;
  const size_t N = hn::Lanes(d), W = 2 * N, K = B.rows, whole = B.cols / W * W;
  for (size_t k = 0; k < K; ++k) {
    const float* HWY_RESTRICT row = B.Row(k);
    for (size_t j = 0; j < whole; j += W) {
      float* HWY_RESTRICT to = dst + j * K + k * W;
      hn::StoreU(hn::LoadU(d, row + j), d, to);
      hn::StoreU(hn::LoadU(d, row + j + N), d, to + N);
    }
    if (whole < B.cols) CopyRow(row + whole, B.cols - whole, dst + whole * K + k * W);
  }
  return {dst, W, W, K * W};
}

// Packs B^T for B [N, K] into panels as PackPanels packs a [K, N] matrix:
// panel p holds rows [p W, p W + W) of B as its columns, so that C = A B^T
// runs on the register tiles of MatMulPanels instead of a dot product (and a
// sum across lanes) per value of C.
ATTNKIT_OUT_OF_LINE_IN_WASM PanelView PackPanelsTransposed(ConstMatrixView B,
                                                           float* HWY_RESTRICT dst) {
  const size_t W = GemmPanelWidth(), K = B.cols;
  for (size_t j = 0; j < B.rows; j += W) {
    const size_t w = std::min(W, B.rows - j);
    float* HWY_RESTRICT panel = dst + j * K;
    for (size_t c = 0; c < w; ++c) {
      const float* HWY_RESTRICT row = B.Row(j + c);
      for (size_t k = 0; k < K; ++k) panel[k * W + c] = row[k];
    }
  }
  return {dst, W, W, K * W};
}

// n rounded up to whole vectors of this target: the keys (rows or columns)
// of a packed operand that the GEMMs read, in tiles of whole vectors.
// Padding past it is never read, so a short sequence packs and clears no
// more than that.
HWY_INLINE size_t WholeVectors(size_t n) {
  const size_t N = hn::Lanes(DF());
  return (n + N - 1) / N * N;
}

// dst: src^T * scale for src [rows, cols], in blocks [cols, kb]: row j of
// src is column j % kb of block j / kb, the layout of PackPanelsTransposed
// (kb = GemmPanelWidth()) and of the fused kernel's packed queries (kb = the
// rows of a block, QueriesA). Nothing else of dst is written. Transposes 4 x 4
// blocks in 128-bit vectors (every SIMD target has them) when kb is a
// multiple of 4, the last rows one at a time: one strided scalar store per
// value cost as much as a short call's matrix products. Out of line: run
// once per block or head, it gains nothing inlined (and inlined with a
// block's constant rows, GCC warns about the scalar tail such a block never
// runs).
inline HWY_NOINLINE void TransposeScaled(ConstMatrixView src, float scale, size_t kb,
                                         float* HWY_RESTRICT dst) {
  const size_t rows = src.rows, cols = src.cols;
  size_t j = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::CappedTag<float, 4> d4;
  const auto vscale = hn::Set(d4, scale);
  for (; kb % 4 == 0 && j + 4 <= rows; j += 4) {
    float* HWY_RESTRICT block = dst + j / kb * cols * kb + j % kb;
    size_t c = 0;
    for (; c + 4 <= cols; c += 4) {
      const auto r0 = hn::LoadU(d4, src.Row(j) + c), r1 = hn::LoadU(d4, src.Row(j + 1) + c);
      const auto r2 = hn::LoadU(d4, src.Row(j + 2) + c), r3 = hn::LoadU(d4, src.Row(j + 3) + c);
      const auto t0 = hn::InterleaveLower(d4, r0, r1), t1 = hn::InterleaveLower(d4, r2, r3);
      const auto t2 = hn::InterleaveUpper(d4, r0, r1), t3 = hn::InterleaveUpper(d4, r2, r3);
      hn::StoreU(hn::Mul(hn::ConcatLowerLower(d4, t1, t0), vscale), d4, block + c * kb);
      hn::StoreU(hn::Mul(hn::ConcatUpperUpper(d4, t1, t0), vscale), d4, block + (c + 1) * kb);
      hn::StoreU(hn::Mul(hn::ConcatLowerLower(d4, t3, t2), vscale), d4, block + (c + 2) * kb);
      hn::StoreU(hn::Mul(hn::ConcatUpperUpper(d4, t3, t2), vscale), d4, block + (c + 3) * kb);
    }
    for (; c < cols; ++c) {
      for (size_t k = 0; k < 4; ++k) block[c * kb + k] = src(j + k, c) * scale;
    }
  }
#endif
  // The last rows (every row on the scalar target), one at a time.
  for (; j < rows; ++j) {
    float* HWY_RESTRICT column = dst + j / kb * cols * kb + j % kb;
    for (size_t c = 0; c < cols; ++c) column[c * kb] = src(j, c) * scale;
  }
}

// dst: src^T * scale for src [keys, cols], in blocks [cols, kb] (kb a
// multiple of the lanes; see TransposeScaled), zeros past the last key up to
// whole vectors, the most a GEMM reads. The packed keys of the fused kernel
// (K^T, kb = GemmPanelWidth()) and of the backward (K^T and V^T). The padding
// is cleared one vector per row of the block before the keys are written
// over it: runs of a few floats each became a call to memset apiece, which
// cost a small head as much as its products.
HWY_INLINE void PackTransposed(ConstMatrixView src, float scale, size_t kb,
                               float* HWY_RESTRICT dst) {
  const size_t rows = src.rows, cols = src.cols;
  const size_t end = WholeVectors(rows);
  if (rows < end) {
    // The last vector [end - N, end) lies in one block (kb is a multiple of
    // the lanes).
    const DF d;
    const size_t start = end - hn::Lanes(d);
    float* HWY_RESTRICT block = dst + start / kb * cols * kb + start % kb;
    for (size_t c = 0; c < cols; ++c) hn::StoreU(hn::Zero(d), d, block + c * kb);
  }
  TransposeScaled(src, scale, kb, dst);
}

// C [M, N] = A [M, K] B with B [K, N] in panels (see PackPanels), A read as
// Layout says. Panel by panel, so that one panel [K, W] stays in cache for all
// the rows of A; the sums are those of MatMul, in the same order. Returns true
// if every value of C is finite.
template <class Layout = GemmARows>
HWY_INLINE bool MatMulPanels(ConstMatrixView A, const PanelView& B, MatrixView C) {
  bool finite = true;
  for (size_t j = 0; j < C.cols; j += B.width) {
    const size_t w = std::min(B.width, C.cols - j);
    finite &= MatMul<false, Layout>(
        A, ConstMatrixView(B.data + j / B.width * B.panel_stride, A.cols, w, B.stride),
        C.Block(0, C.rows, j, w));
  }
  return finite;
}

// C [M, N] = A [M, K] B for B [K, N] (with `transposed`, B^T for B [N, K]),
// B packed `group` columns (a multiple of W = GemmPanelWidth()) at a time
// into `panels` [group / W, K, W] just before every row of A runs over each
// of their panels: the panels are read back from cache, no packed copy of
// all of B is written to memory and read again, and every row of B is read
// in whole cache lines. The panels and sums of PackPanels
// (PackPanelsTransposed) then MatMulPanels. Returns true if every value of C
// is finite.
template <class Layout = GemmARows>
HWY_INLINE bool MatMulPackingPanels(ConstMatrixView A, ConstMatrixView B, bool transposed,
                                    size_t group, float* HWY_RESTRICT panels, MatrixView C) {
  const size_t K = A.cols;
  bool finite = true;
  for (size_t j0 = 0; j0 < C.cols; j0 += group) {
    const size_t n = std::min(group, C.cols - j0);
    const PanelView p = transposed ? PackPanelsTransposed(B.Block(j0, n, 0, K), panels)
                                   : PackPanels(B.Block(0, K, j0, n), panels);
    finite &= MatMulPanels<Layout>(A, p, C.Block(0, C.rows, j0, n));
  }
  return finite;
}

// C [M, N] = A [M, K] B^T with B [N, K]: C[i, j] = A row i . B row j.
HWY_INLINE void MatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  for (size_t i = 0; i < A.rows; ++i)
    DotRows(A.Row(i), B.Row(0), B.stride, B.rows, A.cols, C.Row(i));
}

// True if every value of m is finite (or -inf, with kAllowNegInf). Out of
// line in wasm: inlined several times into the backward, its loops made V8
// spill the registers of the kernel's loops.
template <bool kAllowNegInf = false>
ATTNKIT_OUT_OF_LINE_IN_WASM bool AllFinite(ConstMatrixView m) {
  for (size_t r = 0; r < m.rows; ++r) {
    if (!AllFinite<kAllowNegInf>(m.Row(r), m.cols)) return false;
  }
  return true;
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_OPS_INL_H_
