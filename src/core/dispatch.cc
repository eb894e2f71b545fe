// attnkit: the one translation unit that compiles the SIMD code for every
// target (foreach_target.h) and dispatches to the best one. Each public
// operation computes through exactly one HWY_DYNAMIC_DISPATCH (natively) or
// HWY_STATIC_DISPATCH (WebAssembly, SIMD128), never one per inner kernel;
// checking its inputs for NaN and inf takes one more per input. Only the
// per-target entry points and their wrappers live here: the steps are in
// steps-inl.h, the paths in trace-inl.h, flash-inl.h and decode-inl.h, the
// driver in job-inl.h and the planner in plan.cc.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "src/core/internal.h"
#include "src/core/plan.h"
#include "src/core/validate.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/core/dispatch.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "src/core/job-inl.h"
#include "src/core/ops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

bool RunAttentionJobT(const internal::AttentionJob& job, const internal::AttentionPlan& plan) {
  return RunAttentionJobInline(job, plan);
}

// C = A B, with B packed panel by panel into `packed` if there is room.
// The register tiles check C's finiteness as they store it. One row of A (a
// token of decoding) is B's rows weighted by its values and summed, row
// after row (AddVecMat): the register tiles' sums in their order, B read in
// its memory order.
bool MatMulT(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed) {
  if (packed) {
    return MatMulPackingPanels(A, B, /*transposed=*/false, internal::kMaxPanel, packed, C);
  }
  if (A.rows == 1) {
    ZeroRow(C.Row(0), C.cols);
    AddVecMat<kVecMatRows>(A.Row(0), A.cols, B.data, B.stride, C.Row(0), C.cols);
    return AllFiniteOnce(C);
  }
  return MatMul(A, B, C);
}

// C = A B^T, with B^T packed panel by panel if there is room. One
// row of A (a decoding step's unembedding) takes B's rows kDotRowsOfOneRow
// at a time: the same sums as MatMulTransposed's.
bool MatMulTransposedT(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed) {
  if (packed) return MatMulPackingPanels(A, B, /*transposed=*/true, internal::kMaxPanel, packed, C);
  if (A.rows == 1) {
    DotRows<kDotRowsOfOneRow>(A.Row(0), B.data, B.stride, B.rows, A.cols, C.Row(0));
  } else {
    MatMulTransposed(A, B, C);
  }
  return AllFiniteOnce(C);
}

// C [M, N] = A^T B for A [K, M], B [K, N]: the register tiles read A^T in
// place (GemmATransposed), B packed panel by panel if there is room.
bool MatMulTransposedAT(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed) {
  const ConstMatrixView At(A.data, A.cols, A.rows, A.stride);
  if (packed)
    return MatMulPackingPanels<GemmATransposed>(At, B, /*transposed=*/false, internal::kMaxPanel,
                                                packed, C);
  return MatMul<false, GemmATransposed>(At, B, C);
}

// B [K, N]'s columns [j0, j1) (j0 a multiple of kMaxPanel), or with
// `transposed` B [N, K]'s rows [j0, j1) as columns of B^T, packed in panels
// into `packed` where MatMulT and MatMulTransposedT pack all of B: panel p
// at packed + p K W (W = GemmPanelWidth(), which divides kMaxPanel). Ranges
// packed by several threads make up one packed B.
void PackPanelsT(ConstMatrixView B, bool transposed, size_t j0, size_t j1, float* packed) {
  if (transposed) {
    (void)PackPanelsTransposed(B.Block(j0, j1 - j0, 0, B.cols), packed + j0 * B.cols);
  } else {
    (void)PackPanels(B.Block(0, B.rows, j0, j1 - j0), packed + j0 * B.rows);
  }
}

// C = A B, or with `transposed_a` A^T B for A [K, M], from B [K, N] packed by
// PackPanelsT: the sums of MatMulT and MatMulTransposedAT with B packed.
bool MatMulPackedT(ConstMatrixView A, bool transposed_a, const float* packed, MatrixView C) {
  const size_t W = GemmPanelWidth();
  if (transposed_a) {
    const ConstMatrixView At(A.data, A.cols, A.rows, A.stride);
    return MatMulPanels<GemmATransposed>(At, PanelView{packed, W, W, A.rows * W}, C);
  }
  return MatMulPanels(A, PanelView{packed, W, W, A.cols * W}, C);
}

// C = A B, B already in panels of `width` columns (any target's width: the
// register tiles take it in tiles of their own).
bool MatMulPanelsT(ConstMatrixView A, const float* panels, size_t width, MatrixView C) {
  return MatMulPanels(A, PanelView{panels, width, width, A.cols * width}, C);
}

bool ScaleScoresT(MatrixView x, float scale, float softcap, MatrixView slope) {
  for (size_t r = 0; r < x.rows; ++r) {
    ScaleSoftcap(x.Row(r), x.cols, scale, softcap, slope.empty() ? nullptr : slope.Row(r));
  }
  return AllFiniteOnce(x);
}

bool AllFiniteT(ConstMatrixView m) { return AllFiniteOnce(m); }

// The lean path (plan.h): Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v] -> out
// [T_q, d_v] (and with the small-shape kernel lse [T_q, 1], if not empty)
// by the small-shape kernel, or (T_k <= kDecodeChunkKeys) as split-K's one
// chunk and its merge, with the scores [kDecodeChunkKeys] and partials [T_q,
// 2 + d_v] on the stack, so that a small call allocates nothing and
// dispatches once.
internal::SmallResult SmallAttentionT(const internal::HeadTask& t,
                                      const internal::ScoreParams& params, bool check_inputs,
                                      bool small_kernel) {
  if (check_inputs && (!AllFiniteFlat(t.Q) || !AllFiniteFlat(t.K) || !AllFiniteFlat(t.V))) {
    return internal::SmallResult::kNonFiniteInput;
  }
  if (small_kernel) {
    return SmallHeadOnce(t, params) ? internal::SmallResult::kOk : internal::SmallResult::kOverflow;
  }
  HWY_ALIGN float scores[internal::kDecodeChunkKeys];
  if (!SplitKChunk(t, params, 0, scores, nullptr)) return internal::SmallResult::kOverflow;
  return AllFiniteOnce(t.out) ? internal::SmallResult::kOk : internal::SmallResult::kOverflow;
}

bool SoftmaxRowsT(MatrixView x) {
  for (size_t r = 0; r < x.rows; ++r) {
    if (!SoftmaxRow(x.Row(r), x.cols)) return false;
  }
  return true;
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace attnkit {

HWY_EXPORT(RunAttentionJobT);
HWY_EXPORT(MatMulT);
HWY_EXPORT(MatMulTransposedT);
HWY_EXPORT(MatMulTransposedAT);
HWY_EXPORT(PackPanelsT);
HWY_EXPORT(MatMulPackedT);
HWY_EXPORT(MatMulPanelsT);
HWY_EXPORT(ScaleScoresT);
HWY_EXPORT(SoftmaxRowsT);
HWY_EXPORT(AllFiniteT);
HWY_EXPORT(SmallAttentionT);

// Natively: pick the best target the CPU supports, once per call. In
// WebAssembly there is no runtime dispatch: call the static (SIMD128) target.
#if HWY_HAVE_RUNTIME_DISPATCH
#define ATTNKIT_DISPATCH(fn) HWY_DYNAMIC_DISPATCH(fn)
#else
#define ATTNKIT_DISPATCH(fn) HWY_STATIC_DISPATCH(fn)
#endif

namespace internal {
namespace {

// ATTNKIT_TARGET, read once as the library loads: dispatch.cc is linked into
// every program that calls attnkit.
const Status kTargetFromEnvironment = ForceFromEnvironment();

// A job whose heads read their V as given (no projection computes it, no
// output projection reads the outputs): it can be run again on scaled values.
bool ValuesGiven(const AttentionJob& job) {
  return job.projections.empty() && !job.after_projections && job.output.W.empty();
}

// A head's output is sum_j p_j v_j / sum_j p_j with 0 < p_j <= 1: no larger
// than max |v|, but its numerator can reach T_k max |v| and overflow on its
// own. A job that overflowed is run again with every V [T_k, d_v] scaled by
// 2^-e, 2^e >= 2 T_k (exact for normal floats: a power of two), and its
// outputs scaled back by 2^e. If the rerun overflows, a score did (named
// `source`); if scaling back does, an output did (named `values`).
Status RerunWithScaledValues(const AttentionJob& job) {
  size_t max_keys = 1;
  for (const HeadTask& t : job.heads) max_keys = std::max(max_keys, t.V.rows);
  int e = 1;
  while ((size_t{1} << e) < 2 * max_keys) ++e;
  const float down = std::ldexp(1.0f, -e), up = std::ldexp(1.0f, e);
  AttentionJob scaled = job;
  std::vector<Matrix> values(job.heads.size());
  for (size_t h = 0; h < job.heads.size(); ++h) {
    const ConstMatrixView V = job.heads[h].V;
    ATTNKIT_RETURN_IF_ERROR(
        Allocate(job.values, "V scaled [T_k, d_v]", V.rows, V.cols, &values[h]));
    for (size_t r = 0; r < V.rows; ++r) {
      for (size_t c = 0; c < V.cols; ++c) values[h](r, c) = V(r, c) * down;
    }
    scaled.heads[h].V = values[h].view();
  }
  AttentionPlan plan;
  ATTNKIT_RETURN_IF_ERROR(PlanAttention(scaled, &plan));
  if (!ATTNKIT_DISPATCH(RunAttentionJobT)(scaled, plan)) {
    return OverflowStatus(job.source, "the scores");
  }
  for (const HeadTask& t : job.heads) {
    for (size_t r = 0; r < t.out.rows; ++r) {
      for (size_t c = 0; c < t.out.cols; ++c) t.out(r, c) *= up;
    }
    if (!ATTNKIT_DISPATCH(AllFiniteT)(t.out)) return OverflowStatus(job.values, "the outputs");
  }
  return Status::Ok();
}

}  // namespace

Status RunAttentionJob(const AttentionJob& job) {
  AttentionPlan plan;
  ATTNKIT_RETURN_IF_ERROR(PlanAttention(job, &plan));
  if (ATTNKIT_DISPATCH(RunAttentionJobT)(job, plan)) return Status::Ok();
  if (!ValuesGiven(job)) return OverflowStatus(job.source, "the scores and outputs");
  return RerunWithScaledValues(job);
}
bool RunMatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed) {
  return ATTNKIT_DISPATCH(MatMulT)(A, B, C, packed);
}
bool RunMatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed) {
  return ATTNKIT_DISPATCH(MatMulTransposedT)(A, B, C, packed);
}
bool RunMatMulTransposedA(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed) {
  return ATTNKIT_DISPATCH(MatMulTransposedAT)(A, B, C, packed);
}
void RunPackPanels(ConstMatrixView B, bool transposed, size_t j0, size_t j1, float* packed) {
  ATTNKIT_DISPATCH(PackPanelsT)(B, transposed, j0, j1, packed);
}
bool RunMatMulPacked(ConstMatrixView A, bool transposed_a, const float* packed, MatrixView C) {
  return ATTNKIT_DISPATCH(MatMulPackedT)(A, transposed_a, packed, C);
}
bool RunMatMulPanels(ConstMatrixView A, const float* panels, size_t panel_width, MatrixView C) {
  return ATTNKIT_DISPATCH(MatMulPanelsT)(A, panels, panel_width, C);
}
bool RunScaleScores(MatrixView x, float scale, float softcap, MatrixView slope) {
  return ATTNKIT_DISPATCH(ScaleScoresT)(x, scale, softcap, slope);
}
bool RunSoftmaxRows(MatrixView x) { return ATTNKIT_DISPATCH(SoftmaxRowsT)(x); }
bool RunAllFinite(ConstMatrixView m) { return ATTNKIT_DISPATCH(AllFiniteT)(m); }
SmallResult RunSmallAttention(const HeadTask& task, const ScoreParams& params, bool check_inputs,
                              bool small_kernel) {
  return ATTNKIT_DISPATCH(SmallAttentionT)(task, params, check_inputs, small_kernel);
}

}  // namespace internal
}  // namespace attnkit
#endif  // HWY_ONCE
