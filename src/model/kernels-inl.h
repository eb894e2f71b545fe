// attnkit model: per-target SIMD kernels (Highway) of kernels.h. Included by
// kernels.cc once per target through foreach_target.h, hence the toggled
// include guard. Rows are float32; n counts elements. Full vectors, then a
// one-lane loop for the tail, as the core's kernels.

#if defined(ATTNKIT_MODEL_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNKIT_MODEL_KERNELS_INL_H_
#undef ATTNKIT_MODEL_KERNELS_INL_H_
#else
#define ATTNKIT_MODEL_KERNELS_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "attnkit/matrix.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "src/model/kernels.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace model {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DF1 = hn::CappedTag<float, 1>;  // one lane, for the tails

// f(d, i) for i = 0, N, 2N, ... with full vectors of d = DF, then each lane
// of the tail with d = DF1.
template <class Func>
HWY_INLINE void ForEachVector(size_t n, const Func& f) {
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) f(d, i);
  const DF1 d1;
  for (; i < n; ++i) f(d1, i);
}

// The sum over i of the lanes of f(d, i) (as ForEachVector calls it). Two
// accumulators hide the latency of the adds.
template <class Func>
HWY_INLINE float SumOfVectors(size_t n, const Func& f) {
  const DF d;
  const size_t N = hn::Lanes(d);
  auto sum0 = hn::Zero(d), sum1 = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    sum0 = hn::Add(sum0, f(d, i));
    sum1 = hn::Add(sum1, f(d, i + N));
  }
  for (; i + N <= n; i += N) sum0 = hn::Add(sum0, f(d, i));
  const DF1 d1;
  auto tail = hn::Zero(d1);
  for (; i < n; ++i) tail = hn::Add(tail, f(d1, i));
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(sum0, sum1))) + hn::GetLane(tail);
}

// y [n] += x [n].
HWY_INLINE void AddRow(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, size_t n) {
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR {
    hn::StoreU(hn::Add(hn::LoadU(d, y + i), hn::LoadU(d, x + i)), d, y + i);
  });
}

// x [N, d] = token_embedding [V, d] rows + position_embedding [T, d] rows.
void EmbedT(const int32_t* HWY_RESTRICT tokens, size_t T, ConstMatrixView te, ConstMatrixView pe,
            MatrixView x) {
  for (size_t r = 0; r < x.rows; ++r) {
    const float* HWY_RESTRICT a = te.Row(size_t(tokens[r]));
    const float* HWY_RESTRICT b = pe.Row(r % T);
    float* HWY_RESTRICT out = x.Row(r);
    ForEachVector(x.cols, [&](auto d, size_t i) HWY_ATTR {
      hn::StoreU(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
    });
  }
}

// Rows of dx [N, d] added into the embedding rows EmbedT read.
void EmbedBackwardT(const int32_t* HWY_RESTRICT tokens, size_t T, ConstMatrixView dx, MatrixView te,
                    MatrixView pe) {
  for (size_t r = 0; r < dx.rows; ++r) {
    AddRow(dx.Row(r), te.Row(size_t(tokens[r])), dx.cols);
    AddRow(dx.Row(r), pe.Row(r % T), dx.cols);
  }
}

void AddToT(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, size_t n) { AddRow(x, y, n); }

// y [N, n] += bias [n] on every row.
void AddBiasT(const float* HWY_RESTRICT bias, MatrixView y) {
  for (size_t r = 0; r < y.rows; ++r) AddRow(bias, y.Row(r), y.cols);
}

// sums [n] = sum over r of dy [N, n] row r.
void ColumnSumsT(ConstMatrixView dy, float* HWY_RESTRICT sums) {
  std::fill(sums, sums + dy.cols, 0.0f);
  for (size_t r = 0; r < dy.rows; ++r) AddRow(dy.Row(r), sums, dy.cols);
}

double SumOfSquaresT(const float* HWY_RESTRICT x, size_t n) {
  return SumOfVectors(n, [&](auto d, size_t i) HWY_ATTR {
    const auto v = hn::LoadU(d, x + i);
    return hn::Mul(v, v);
  });
}

// Per row of x [N, d]: two passes for the mean and the variance (a single
// pass of sum and sum of squares loses the variance to cancellation when the
// mean is large), then one for y.
void LayerNormT(ConstMatrixView x, const float* HWY_RESTRICT gain, const float* HWY_RESTRICT bias,
                float epsilon, MatrixView y, float* HWY_RESTRICT mean, float* HWY_RESTRICT rstd) {
  const size_t n = x.cols;
  for (size_t r = 0; r < x.rows; ++r) {
    const float* HWY_RESTRICT row = x.Row(r);
    float* HWY_RESTRICT out = y.Row(r);
    const float mu =
        SumOfVectors(n, [&](auto d, size_t i) HWY_ATTR { return hn::LoadU(d, row + i); }) /
        float(n);
    const float var = SumOfVectors(n,
                                   [&](auto d, size_t i) HWY_ATTR {
                                     const auto c = hn::Sub(hn::LoadU(d, row + i), hn::Set(d, mu));
                                     return hn::Mul(c, c);
                                   }) /
                      float(n);
    const float rs = 1.0f / std::sqrt(var + epsilon);
    mean[r] = mu;
    rstd[r] = rs;
    ForEachVector(n, [&](auto d, size_t i) HWY_ATTR {
      const auto xhat = hn::Mul(hn::Sub(hn::LoadU(d, row + i), hn::Set(d, mu)), hn::Set(d, rs));
      hn::StoreU(hn::MulAdd(xhat, hn::LoadU(d, gain + i), hn::LoadU(d, bias + i)), d, out + i);
    });
  }
}

// Per row, with xhat = (x - mean) rstd and g = dy gain:
//   dx += rstd (g - mean(g) - xhat mean(g xhat)), dgain += dy xhat, dbias += dy.
// With kParams also dgain and dbias in the same pass (one thread); without,
// dx alone (a band of rows), LayerNormBackwardParamsT doing the rest.
template <bool kParams>
HWY_INLINE void LayerNormBackwardPart(ConstMatrixView x, const float* HWY_RESTRICT mean,
                                      const float* HWY_RESTRICT rstd,
                                      const float* HWY_RESTRICT gain, ConstMatrixView dy,
                                      MatrixView dx, float* HWY_RESTRICT dgain,
                                      float* HWY_RESTRICT dbias) {
  const size_t n = x.cols;
  for (size_t r = 0; r < x.rows; ++r) {
    const float* HWY_RESTRICT xr = x.Row(r);
    const float* HWY_RESTRICT dyr = dy.Row(r);
    const float mu = mean[r], rs = rstd[r];
    const auto xhat = [&](auto d, size_t i) HWY_ATTR {
      return hn::Mul(hn::Sub(hn::LoadU(d, xr + i), hn::Set(d, mu)), hn::Set(d, rs));
    };
    float* HWY_RESTRICT dxr = dx.Row(r);
    const float mean_g =
        SumOfVectors(
            n, [&](auto d, size_t i)
                   HWY_ATTR { return hn::Mul(hn::LoadU(d, dyr + i), hn::LoadU(d, gain + i)); }) /
        float(n);
    const float mean_gx = SumOfVectors(n,
                                       [&](auto d, size_t i) HWY_ATTR {
                                         const auto g =
                                             hn::Mul(hn::LoadU(d, dyr + i), hn::LoadU(d, gain + i));
                                         return hn::Mul(g, xhat(d, i));
                                       }) /
                          float(n);
    ForEachVector(n, [&](auto d, size_t i) HWY_ATTR {
      const auto dyv = hn::LoadU(d, dyr + i);
      const auto xh = xhat(d, i);
      const auto g = hn::Mul(dyv, hn::LoadU(d, gain + i));
      // rstd (g - mean_g - xhat mean_gx)
      const auto centred = hn::Sub(hn::NegMulAdd(xh, hn::Set(d, mean_gx), g), hn::Set(d, mean_g));
      hn::StoreU(hn::MulAdd(centred, hn::Set(d, rs), hn::LoadU(d, dxr + i)), d, dxr + i);
      if constexpr (kParams) {
        hn::StoreU(hn::MulAdd(dyv, xh, hn::LoadU(d, dgain + i)), d, dgain + i);
        hn::StoreU(hn::Add(dyv, hn::LoadU(d, dbias + i)), d, dbias + i);
      }
    });
  }
}

void LayerNormBackwardT(ConstMatrixView x, const float* HWY_RESTRICT mean,
                        const float* HWY_RESTRICT rstd, const float* HWY_RESTRICT gain,
                        ConstMatrixView dy, MatrixView dx, float* HWY_RESTRICT dgain,
                        float* HWY_RESTRICT dbias) {
  LayerNormBackwardPart<true>(x, mean, rstd, gain, dy, dx, dgain, dbias);
}

// dx alone, for a band of rows.
void LayerNormBackwardDxT(ConstMatrixView x, const float* HWY_RESTRICT mean,
                          const float* HWY_RESTRICT rstd, const float* HWY_RESTRICT gain,
                          ConstMatrixView dy, MatrixView dx) {
  LayerNormBackwardPart<false>(x, mean, rstd, gain, dy, dx, nullptr, nullptr);
}

// dgain and dbias alone, for a band of columns (x, dy, dgain, dbias its
// views): each column's sums over the rows, in the rows' order, held in
// registers (the operations of LayerNormBackwardPart<true>, the same sums).
void LayerNormBackwardParamsT(ConstMatrixView x, const float* HWY_RESTRICT mean,
                              const float* HWY_RESTRICT rstd, ConstMatrixView dy,
                              float* HWY_RESTRICT dgain, float* HWY_RESTRICT dbias) {
  ForEachVector(x.cols, [&](auto d, size_t i) HWY_ATTR {
    auto g = hn::LoadU(d, dgain + i), b = hn::LoadU(d, dbias + i);
    for (size_t r = 0; r < x.rows; ++r) {
      const auto dyv = hn::LoadU(d, dy.Row(r) + i);
      const auto xh =
          hn::Mul(hn::Sub(hn::LoadU(d, x.Row(r) + i), hn::Set(d, mean[r])), hn::Set(d, rstd[r]));
      g = hn::MulAdd(dyv, xh, g);
      b = hn::Add(dyv, b);
    }
    hn::StoreU(g, d, dgain + i);
    hn::StoreU(b, d, dbias + i);
  });
}

// GELU's tanh approximation: inner(u) = sqrt(2/pi) (u + 0.044715 u^3),
// GELU(u) = u/2 (1 + tanh(inner)),
// GELU'(u) = (1 + t)/2 + u/2 (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 u^2), t = tanh(inner).
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;
// Below this inner, the gate s < e^-80 and GELU(u) is 0 to within |u| 2e-35.
constexpr float kGeluClosed = -40.0f;

// The gate s = (1 + tanh(inner)) / 2 = 1 / (1 + exp(-2 inner)) per lane, and
// 1 - s = exp(-2 inner) s in *rest (without the cancellation of 1 - s where s
// is near 1): one Exp and one division, where Tanh takes an Expm1, a division
// and more. s = 0, 1 - s = 1 where inner < kGeluClosed (exp(-2 inner) would
// overflow). In these terms GELU(u) = u s and, as (1 - t^2) / 2 = 2 s (1 - s),
// GELU'(u) = s + 2 u s (1 - s) sqrt(2/pi) (1 + 3 0.044715 u^2).
template <class D, class V = hn::Vec<D>>
HWY_INLINE V GeluGate(D d, V u, V* rest) {
  const V one = hn::Set(d, 1.0f);
  const V inner = hn::Mul(hn::Mul(u, hn::Set(d, kGeluScale)),
                          hn::MulAdd(hn::Mul(u, u), hn::Set(d, kGeluCubic), one));
  const V e = hn::Exp(d, hn::Mul(inner, hn::Set(d, -2.0f)));
  const auto closed = hn::Lt(inner, hn::Set(d, kGeluClosed));
  const V s = hn::IfThenZeroElse(closed, hn::Div(one, hn::Add(one, e)));
  *rest = hn::IfThenElse(closed, one, hn::Mul(e, s));
  return s;
}

void GeluT(ConstMatrixView u, MatrixView out) {
  for (size_t r = 0; r < u.rows; ++r) {
    const float* HWY_RESTRICT ur = u.Row(r);
    float* HWY_RESTRICT o = out.Row(r);
    ForEachVector(u.cols, [&](auto d, size_t i) HWY_ATTR {
      const auto v = hn::LoadU(d, ur + i);
      hn::Vec<decltype(d)> rest;
      hn::StoreU(hn::Mul(v, GeluGate(d, v, &rest)), d, o + i);
    });
  }
}

void GeluBackwardT(ConstMatrixView u, MatrixView dd) {
  for (size_t r = 0; r < u.rows; ++r) {
    const float* HWY_RESTRICT ur = u.Row(r);
    float* HWY_RESTRICT g = dd.Row(r);
    ForEachVector(u.cols, [&](auto d, size_t i) HWY_ATTR {
      const auto v = hn::LoadU(d, ur + i);
      hn::Vec<decltype(d)> rest;  // 1 - s
      const auto s = GeluGate(d, v, &rest);
      const auto d_inner =
          hn::Mul(hn::Set(d, kGeluScale),
                  hn::MulAdd(hn::Mul(v, v), hn::Set(d, 3 * kGeluCubic), hn::Set(d, 1.0f)));
      // s + 2 u s (1 - s) d_inner
      const auto slope = hn::MulAdd(hn::Mul(hn::Mul(hn::Add(v, v), s), rest), d_inner, s);
      hn::StoreU(hn::Mul(hn::LoadU(d, g + i), slope), d, g + i);
    });
  }
}

// Per scored row: max, e = exp(row - max) and its sum, then
// dlogits = (e / sum - onehot) * inv_scored; the row's loss, losses [N], is
// log(sum) + max - row[target] (0 for a row not scored).
void SoftmaxCrossEntropyT(ConstMatrixView logits, const int32_t* HWY_RESTRICT targets,
                          float inv_scored, MatrixView dlogits, double* HWY_RESTRICT losses) {
  const size_t V = logits.cols;
  for (size_t r = 0; r < logits.rows; ++r) {
    const float* row = logits.Row(r);
    float* out = dlogits.Row(r);
    losses[r] = 0;
    if (targets[r] < 0) {
      ForEachVector(V, [&](auto d, size_t i) HWY_ATTR { hn::StoreU(hn::Zero(d), d, out + i); });
      continue;
    }
    const float target_logit = row[targets[r]];
    const DF d;
    const size_t N = hn::Lanes(d);
    auto vmax = hn::Set(d, row[0]);
    size_t i = 0;
    for (; i + N <= V; i += N) vmax = hn::Max(vmax, hn::LoadU(d, row + i));
    float max = hn::GetLane(hn::MaxOfLanes(d, vmax));
    for (; i < V; ++i) max = std::max(max, row[i]);
    const float sum = SumOfVectors(V, [&](auto dv, size_t i) HWY_ATTR {
      const auto e = hn::Exp(dv, hn::Sub(hn::LoadU(dv, row + i), hn::Set(dv, max)));
      hn::StoreU(e, dv, out + i);
      return e;
    });
    const float scale = inv_scored / sum;
    ForEachVector(V, [&](auto dv, size_t i) HWY_ATTR {
      hn::StoreU(hn::Mul(hn::LoadU(dv, out + i), hn::Set(dv, scale)), dv, out + i);
    });
    out[targets[r]] -= inv_scored;
    losses[r] = std::log(double(sum)) + double(max) - double(target_logit);
  }
}

void AdamWUpdateT(const kernels::AdamWStep& s, const float* HWY_RESTRICT g, float* HWY_RESTRICT w,
                  float* HWY_RESTRICT m, float* HWY_RESTRICT v, size_t n) {
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR {
    const auto gv = hn::Mul(hn::LoadU(d, g + i), hn::Set(d, s.clip));
    const auto mv =
        hn::MulAdd(hn::Set(d, s.beta1), hn::LoadU(d, m + i), hn::Mul(hn::Set(d, 1 - s.beta1), gv));
    const auto vv = hn::MulAdd(hn::Set(d, s.beta2), hn::LoadU(d, v + i),
                               hn::Mul(hn::Set(d, 1 - s.beta2), hn::Mul(gv, gv)));
    hn::StoreU(mv, d, m + i);
    hn::StoreU(vv, d, v + i);
    const auto update =
        hn::Div(hn::Mul(mv, hn::Set(d, s.c1)),
                hn::Add(hn::Sqrt(hn::Mul(vv, hn::Set(d, s.c2))), hn::Set(d, s.epsilon)));
    const auto wv = hn::LoadU(d, w + i);
    // w - decay w - lr update
    hn::StoreU(hn::NegMulAdd(hn::Set(d, s.lr), update, hn::NegMulAdd(hn::Set(d, s.decay), wv, wv)),
               d, w + i);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace model
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_MODEL_KERNELS_INL_H_
