// attnkit: the reference (trace) path, per target; toggled include guard.
// One head one query row at a time, each step of steps-inl.h in turn over
// the whole row of T_k scores, so that any stage can be kept: traces, the
// kept scores of multi-head calls, and the reference the fused and split-K
// paths are tested against.

#if defined(ATTNKIT_TRACE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNKIT_TRACE_INL_H_
#undef ATTNKIT_TRACE_INL_H_
#else
#define ATTNKIT_TRACE_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <limits>

#include "hwy/highway.h"
#include "src/core/internal.h"
#include "src/core/ops-inl.h"
#include "src/core/steps-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

// Copies row [n] into row r of m (a kept stage), unless m is empty.
HWY_INLINE void KeepRow(const float* HWY_RESTRICT row, size_t n, MatrixView m, size_t r) {
  if (!m.empty()) std::copy(row, row + n, m.Row(r));
}

// One head, keeping the stages of `keep`: Q [T_q, d_k], K [T_k, d_k],
// V [T_k, d_v] -> out [T_q, d_v], through `row` [T_k] (scratch). Returns
// false if scores overflowed.
HWY_INLINE bool TraceHead(const internal::HeadTask& t, const internal::ScoreParams& p,
                          float* HWY_RESTRICT row, const internal::KeptStages& keep) {
  const size_t T_q = t.Q.rows, T_k = t.K.rows, d_v = t.V.cols;
  for (size_t i = 0; i < T_q; ++i) {
    const size_t limit = VisibleKeys(t, p, i);
    Scores(t, i, 0, T_k, row);
    KeepRow(row, T_k, keep.raw, i);
    ScaleSoftcap(row, T_k, p.scale, p.softcap);
    // A score that overflowed (to +-inf or NaN) is an error, never a mask.
    if (!AllFinite(row, limit)) return false;
    KeepRow(row, T_k, keep.scaled, i);
    for (size_t j = limit; j < T_k; ++j) row[j] = -std::numeric_limits<float>::infinity();
    ApplyMasks(t, i, 0, row, limit);
    KeepRow(row, T_k, keep.masked, i);
    if (!SoftmaxRow(row, T_k)) return false;
    KeepRow(row, T_k, keep.weights, i);
    float* HWY_RESTRICT o = t.out.Row(i);
    ZeroRow(o, d_v);
    WeightedSumV(t, row, 0, limit, o);
  }
  return true;
}

// The stage `stage` of a head kept in its scores view.
HWY_INLINE internal::KeptStages StageOf(internal::KeepStage stage, MatrixView scores) {
  internal::KeptStages keep;
  switch (stage) {
    case internal::KeepStage::kRaw:
      keep.raw = scores;
      break;
    case internal::KeepStage::kScaled:
      keep.scaled = scores;
      break;
    case internal::KeepStage::kMasked:
      keep.masked = scores;
      break;
    case internal::KeepStage::kWeights:
      keep.weights = scores;
      break;
    case internal::KeepStage::kNone:
      break;
  }
  return keep;
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_TRACE_INL_H_
