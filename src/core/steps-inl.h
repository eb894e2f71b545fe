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

#if HWY_TARGET == HWY_WASM
// dst [M, N] = src [M, K] B, B in panels, src's rows packed first into a
// [M * K] (tile by tile: [K, kGemmRows] per whole tile, then [K, M % kGemmRows]),
// then panel by panel as MatMulPanels (a panel stays in cache for all the
// rows): the same sums in the same order. The projections' tiles in
// WebAssembly: reading the rows k-major, as the fused kernel reads its
// queries (QueriesA in flash-inl.h, through the same out-of-line GemmRows),
// one index serves all rows of a tile, where V8 advances one per row every
// k step.
HWY_INLINE void MatMulPackedRows(ConstMatrixView src, const PanelView& B, MatrixView dst,
                                 float* HWY_RESTRICT a) {
  using TileA = GemmA<internal::kFlashTileKeys, 1>;  // the fused kernel's other layout
  const size_t K = src.cols, full = src.rows / kGemmRows * kGemmRows, tail = src.rows - full;
  if (full) TransposeScaled(src.Block(0, full, 0, K), 1.0f, kGemmRows, a);
  if (tail) TransposeScaled(src.Block(full, tail, 0, K), 1.0f, tail, a + full * K);
  static_assert(kGemmRows == 4, "tails of 1 to 3 rows below");
  for (size_t j = 0; j < dst.cols; j += B.width) {
    const size_t w = std::min(B.width, dst.cols - j);
    const PanelView panel{B.data + j / B.width * B.panel_stride, B.width, B.stride, B.panel_stride};
    for (size_t i = 0; i < full; i += kGemmRows) {
      GemmRows<kGemmRows, false, GemmA<1, kGemmRows>, TileA>(
          ConstMatrixView(a + i * K, kGemmRows, K), panel, dst.Block(i, kGemmRows, j, w), 0);
    }
    const ConstMatrixView rest(a + full * K, tail, K);
    const MatrixView out = dst.Block(full, tail, j, w);
    if (tail == 3) GemmRows<3, false, GemmA<1, 3>, TileA>(rest, panel, out, 0);
    if (tail == 2) GemmRows<2, false, GemmA<1, 2>, TileA>(rest, panel, out, 0);
    if (tail == 1) GemmRows<1, false, GemmA<1, 1>, TileA>(rest, panel, out, 0);
  }
}
#endif

// Project: runs the rows of `work` of the projections, dst = src W (W read
// from the panels it was packed into once where the projection has them, else
// packed in panels first into packed[i] where the plan gave it room, else
// read in place), then checks that nothing overflowed. Returns false if
// something did. Each task owns its rows of dst. Panels of any width give
// the sums of the unpacked product, in the same order (MatMulPanels).
// `scratch`: thread t's [scratch_floats] at scratch + t * scratch_floats,
// room for a task's rows packed (MatMulPackedRows, WebAssembly).
HWY_INLINE bool Project(ThreadPool* pool, const std::vector<internal::Projection>& projections,
                        const std::vector<float*>& packed,
                        const std::vector<internal::ProjectionWork>& work, float* scratch,
                        size_t scratch_floats) {
  std::vector<PanelView> panels(projections.size());
  for (size_t i = 0; i < projections.size(); ++i) {
    const internal::Projection& p = projections[i];
    if (p.panels) {
      panels[i] = {p.panels, p.panel_width, p.panel_width, p.src.cols * p.panel_width};
    } else if (packed[i]) {
      panels[i] = PackPanels(p.W, packed[i]);
    }
  }
  std::atomic<bool> ok{true};
  internal::ParallelFor(pool, work.size(), [&](size_t w, size_t thread) HWY_ATTR {
    const internal::ProjectionWork& pw = work[w];
    const internal::Projection& p = projections[pw.index];
    const size_t rows = pw.end - pw.begin;
    const ConstMatrixView src = p.src.Block(pw.begin, rows, 0, p.src.cols);
    const MatrixView dst = p.dst.Block(pw.begin, rows, 0, p.dst.cols);
    if (panels[pw.index].data) {
#if HWY_TARGET == HWY_WASM
      MatMulPackedRows(src, panels[pw.index], dst, scratch + thread * scratch_floats);
#else
      (void)thread;
      (void)scratch;
      (void)scratch_floats;
      MatMulPanels(src, panels[pw.index], dst);
#endif
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
// split-K paths keeps max and sum per row and divides once at the end. With
// kWholeVectors, s has room for whole vectors (ExpSubtractSum).
template <bool kViaExp2 = false, bool kWholeVectors = false>
HWY_INLINE float SoftmaxUnnormalised(float* HWY_RESTRICT s, size_t n, float max) {
  return ExpSubtractSum<kViaExp2, kWholeVectors>(s, n, max);
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
