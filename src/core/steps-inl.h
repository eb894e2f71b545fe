// attnkit: the steps of attention, each under its own name, per target
// (toggled include guard). For one head, Q [T_q, d_k], K [T_k, d_k],
// V [T_k, d_v]:
//   Project       Q, K, V = X W_Q, X W_K, X W_V (and out = merged heads W_O)
//   Scores        s_ij = q_i . k_j
//   ScaleSoftcap  s = softcap * tanh(s * scale / softcap), or s * scale
//   VisibleKeys   keys j >= this bound (key padding, causal) -> -inf
//   ApplyMasks    the per-cell masks: boolean -> -inf, additive -> + mask
//   SoftmaxRow    w_i = exp(s_i - max) / sum (or its unnormalised half,
//                 SoftmaxUnnormalised, for the online softmax of the fused and
//                 split-K paths)
//   WeightedSumV  o_i = sum_j w_ij v_j
// The trace path (trace-inl.h) applies them one query row at a time, the
// split-K decode path (decode-inl.h) one key chunk at a time, and the fused
// kernel (flash-inl.h) in tiles, where Scores and WeightedSumV are GEMMs on
// packed keys (ScoresTile, WeightedSumVTile). Heads are strided views into
// the projections (HeadTask), so the attention path never copies heads apart
// (SplitHeads in multihead.h is the standalone op for callers).

#if defined(ATTNKIT_STEPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNKIT_STEPS_INL_H_
#undef ATTNKIT_STEPS_INL_H_
#else
#define ATTNKIT_STEPS_INL_H_
#endif

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "hwy/highway.h"
#include "src/core/internal.h"
#include "src/core/ops-inl.h"
#include "src/core/plan.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

// Project: runs the rows of `work` of the projections, dst = src W (W packed
// in panels first into packed[i] where the plan gave it room, else read in
// place), then checks that nothing overflowed. Returns false if something
// did. Each task owns its rows of dst.
HWY_INLINE bool Project(ThreadPool* pool, const std::vector<internal::Projection>& projections,
                        const std::vector<float*>& packed,
                        const std::vector<internal::ProjectionWork>& work) {
  std::vector<PanelView> panels(projections.size());
  for (size_t i = 0; i < projections.size(); ++i) {
    if (packed[i]) panels[i] = PackPanels(projections[i].W, packed[i]);
  }
  std::atomic<bool> ok{true};
  internal::ParallelFor(pool, work.size(), [&](size_t w, size_t) HWY_ATTR {
    const internal::ProjectionWork& pw = work[w];
    const internal::Projection& p = projections[pw.index];
    const size_t rows = pw.end - pw.begin;
    const ConstMatrixView src = p.src.Block(pw.begin, rows, 0, p.src.cols);
    const MatrixView dst = p.dst.Block(pw.begin, rows, 0, p.dst.cols);
    if (packed[pw.index]) {
      MatMulPanels(src, panels[pw.index], dst);
    } else {
      MatMul<false>(src, p.W, dst);
    }
    if (!AllFinite(dst)) ok.store(false, std::memory_order_relaxed);
  });
  return ok.load();
}

// Whether every value of m is finite (or -inf, with kAllowNegInf): the
// lean paths' check of their inputs, one pass over a contiguous matrix as a
// single row, so that the short rows of a small call are not each a tail.
// Out of line in wasm: one copy for every input checked.
template <bool kAllowNegInf = false>
ATTNKIT_OUT_OF_LINE_IN_WASM bool AllFiniteFlat(ConstMatrixView m) {
  if (m.stride == m.cols) return AllFinite<kAllowNegInf>(m.data, m.rows * m.cols);
  for (size_t r = 0; r < m.rows; ++r) {
    if (!AllFinite<kAllowNegInf>(m.Row(r), m.cols)) return false;
  }
  return true;
}

// Scores: s [n] = q_i . k_j for keys j in [j0, j0 + n) of head t, reading K
// in place (rows K.stride apart).
HWY_INLINE void Scores(const internal::HeadTask& t, size_t i, size_t j0, size_t n,
                       float* HWY_RESTRICT s) {
  DotRows(t.Q.Row(i), t.K.Row(j0), t.K.stride, n, t.Q.cols, s);
}

// ScaleSoftcap: s [n] in place, s * scale, then softcap * tanh(s / softcap)
// when softcap > 0. The backward also keeps the softcap's slope [n],
// 1 - tanh^2, for its ScaleSoftcapGrad (backward-inl.h).
HWY_INLINE void ScaleSoftcap(float* HWY_RESTRICT s, size_t n, float scale, float softcap,
                             float* HWY_RESTRICT slope = nullptr) {
  ScaleRow(s, n, scale, softcap, slope);
}

// The number of keys query i sees before the per-cell masks:
// min(key_length, i + causal_offset + 1 if causal), clamped to [0, T_k]. The
// task's key length already ends at a short mask's last column, and its
// causal offset holds the alignment, so that every path (and the tile
// skipping of the fused kernel) sees one bound per row.
HWY_INLINE size_t VisibleKeys(const internal::HeadTask& t, const internal::ScoreParams& p,
                              size_t i) {
  size_t limit = std::min(t.key_length, t.K.rows);
  if (p.causal) {
    const ptrdiff_t seen = static_cast<ptrdiff_t>(i) + 1 + t.causal_offset;
    limit = seen <= 0 ? 0 : std::min(limit, static_cast<size_t>(seen));
  }
  return limit;
}

// ApplyMasks: the task's per-cell masks on s [n], the scores of query i
// against keys [j0, j0 + n) (j0 + n <= the masks' columns): -inf where
// bool_mask forbids, + additive_mask elsewhere.
HWY_INLINE void ApplyMasks(const internal::HeadTask& t, size_t i, size_t j0, float* HWY_RESTRICT s,
                           size_t n) {
  if (!t.bool_mask.empty()) {
    const uint8_t* allow = t.bool_mask.Row(i) + j0;
    for (size_t j = 0; j < n; ++j) {
      if (!allow[j]) s[j] = -std::numeric_limits<float>::infinity();
    }
  }
  if (!t.additive_mask.empty()) {
    const float* add = t.additive_mask.Row(i) + j0;
    for (size_t j = 0; j < n; ++j) s[j] += add[j];
  }
}

// SoftmaxUnnormalised: s [n] = exp(s - max) in place (0 below
// kExpFlushBelow); returns the sum. The online softmax of the fused and
// split-K paths keeps max and sum per row and divides once at the end.
template <bool kViaExp2 = false>
HWY_INLINE float SoftmaxUnnormalised(float* HWY_RESTRICT s, size_t n, float max) {
  return ExpSubtractSum<kViaExp2>(s, n, max);
}

// WeightedSumV: o [d_v] += sum_j w[j - j0] v_j for keys j in [j0, j0 + n) of
// head t, reading V in place (rows V.stride apart).
HWY_INLINE void WeightedSumV(const internal::HeadTask& t, const float* HWY_RESTRICT w, size_t j0,
                             size_t n, float* HWY_RESTRICT o) {
  AddWeightedRows(w, n, t.V.Row(j0), t.V.stride, o, t.V.cols);
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_STEPS_INL_H_
