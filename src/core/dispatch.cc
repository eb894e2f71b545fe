// attnkit: the one translation unit that compiles the SIMD code for every
// target (foreach_target.h) and dispatches to the best one. Each public
// operation reaches exactly one HWY_DYNAMIC_DISPATCH (natively) or
// HWY_STATIC_DISPATCH (WebAssembly, SIMD128), never one per inner kernel.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "src/core/internal.h"
#include "src/core/validate.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/core/dispatch.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "src/core/ops-inl.h"
#include "src/core/flash-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

using internal::AttentionJob;
using internal::HeadTask;
using internal::Projection;
using internal::ScoreParams;

// Copies row [n] into row r of m (a trace matrix).
HWY_INLINE void KeepRow(const float* HWY_RESTRICT row, size_t n, Matrix* m,
                        size_t r) {
  std::copy(row, row + n, m->data() + r * m->cols());
}

// One head: Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v] -> out [T_q, d_v], one
// query row at a time through `row` [T_k] (scratch). Query i sees keys
// [0, limit_i), limit_i = min(key_length, i + (T_k - T_q) + 1 if causal), and
// among those the ones bool_mask allows; only those scores are computed unless
// a trace wants every cell. Returns false if scores overflowed.
HWY_INLINE bool AttendHead(const HeadTask& t, const ScoreParams& p,
                           float* HWY_RESTRICT row, AttentionTrace* trace) {
  const size_t T_q = t.Q.rows, T_k = t.K.rows, d_k = t.Q.cols, d_v = t.V.cols;
  const float kNegInf = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < T_q; ++i) {
    size_t limit = std::min(t.key_length, T_k);
    if (p.causal) {
      // i + T_k - T_q + 1 keys, clamped to [0, T_k]; computed without
      // wrapping when T_q > T_k.
      const size_t seen = (i + 1 + T_k > T_q) ? i + 1 + T_k - T_q : 0;
      limit = std::min(limit, seen);
    }
    const size_t n = trace ? T_k : limit;
    const float* HWY_RESTRICT q = t.Q.Row(i);
    for (size_t j = 0; j < n; ++j) row[j] = Dot(q, t.K.Row(j), d_k);
    if (trace) KeepRow(row, n, &trace->raw_scores, i);
    ScaleRow(row, n, p.scale, p.softcap);
    // A score that overflowed (to +-inf or NaN) is an error, never a mask.
    if (!AllFinite(row, limit)) return false;
    if (trace) KeepRow(row, n, &trace->scaled_scores, i);
    for (size_t j = limit; j < n; ++j) row[j] = kNegInf;
    if (!p.bool_mask.empty()) {
      const uint8_t* allow = p.bool_mask.Row(i);
      for (size_t j = 0; j < limit; ++j) {
        if (!allow[j]) row[j] = kNegInf;
      }
    }
    if (!p.additive_mask.empty()) {
      const float* add = p.additive_mask.Row(i);
      for (size_t j = 0; j < limit; ++j) row[j] += add[j];
    }
    if (trace) KeepRow(row, n, &trace->masked_scores, i);
    if (!SoftmaxRow(row, n)) return false;
    if (trace) KeepRow(row, n, &trace->weights, i);
    float* HWY_RESTRICT o = t.out.Row(i);
    ZeroRow(o, d_v);
    for (size_t j = 0; j < limit; ++j) {
      if (row[j] != 0.0f) MulAddRow(row[j], t.V.Row(j), o, d_v);
    }
  }
  return true;
}

// dst = src W, then check that nothing overflowed.
HWY_INLINE bool Project(const Projection& p) {
  MatMul(p.src, p.W, p.dst);
  return AllFinite(p.dst);
}

bool RunAttentionJobT(const AttentionJob& job) {
  for (const Projection& p : job.projections) {
    if (!Project(p)) return false;
  }
  if (job.after_projections) job.after_projections();
  // The trace keeps every score, so it takes the row-at-a-time path; so do
  // blocks of fewer than 4 queries (decoding), where packing K^T would cost
  // as much as the attention itself. Everything else is fused.
  const float* packed_from = nullptr;
  size_t packed_keys = 0;
  for (const HeadTask& t : job.heads) {
    bool ok;
    if (job.trace || t.Q.rows < internal::kFlashMinQueries) {
      packed_from = nullptr;  // the row path overwrites the scratch
      ok = AttendHead(t, job.params, job.scratch, job.trace);
    } else {
      ok = FlashHead(t, job.params, job.scratch, &packed_from, &packed_keys);
    }
    if (!ok || !AllFinite(t.out)) return false;
  }
  if (!job.output.W.empty() && !Project(job.output)) return false;
  return true;
}

bool MatMulT(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  MatMul(A, B, C);
  return AllFinite(C);
}

bool MatMulTransposedT(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  MatMulTransposed(A, B, C);
  return AllFinite(C);
}

bool ScaleScoresT(MatrixView x, float scale, float softcap) {
  for (size_t r = 0; r < x.rows; ++r) ScaleRow(x.Row(r), x.cols, scale, softcap);
  return AllFinite(x);
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
HWY_EXPORT(ScaleScoresT);
HWY_EXPORT(SoftmaxRowsT);

// Natively: pick the best target the CPU supports, once per call. In
// WebAssembly there is no runtime dispatch: call the static (SIMD128) target.
#if HWY_HAVE_RUNTIME_DISPATCH
#define ATTNKIT_DISPATCH(fn) HWY_DYNAMIC_DISPATCH(fn)
#else
#define ATTNKIT_DISPATCH(fn) HWY_STATIC_DISPATCH(fn)
#endif

namespace internal {

Status RunAttentionJob(AttentionJob* job) {
  // Scratch floats: a score row [T_k] on the row path, K^T [d_k, T_k rounded
  // up to the tile] on the fused path; one buffer serves every head in turn.
  size_t floats = 0;
  for (const HeadTask& t : job->heads) {
    size_t n = t.K.rows;
    if (!job->trace && t.Q.rows >= kFlashMinQueries) {
      const size_t padded = (t.K.rows + kFlashTileKeys - 1) / kFlashTileKeys * kFlashTileKeys;
      ATTNKIT_RETURN_IF_ERROR(CheckedProduct("K^T scratch [d_k, T_k]", t.K.cols, padded, &n));
    }
    floats = std::max(floats, n);
  }
  FloatBuffer scratch;
  if (!scratch.Allocate(floats)) return OutOfMemory("scratch", floats);
  job->scratch = scratch.data();
  if (!ATTNKIT_DISPATCH(RunAttentionJobT)(*job)) return OverflowStatus("out");
  return Status::Ok();
}
bool RunMatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  return ATTNKIT_DISPATCH(MatMulT)(A, B, C);
}
bool RunMatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  return ATTNKIT_DISPATCH(MatMulTransposedT)(A, B, C);
}
bool RunScaleScores(MatrixView x, float scale, float softcap) {
  return ATTNKIT_DISPATCH(ScaleScoresT)(x, scale, softcap);
}
bool RunSoftmaxRows(MatrixView x) { return ATTNKIT_DISPATCH(SoftmaxRowsT)(x); }

}  // namespace internal

namespace targets {

std::vector<int64_t> Available() {
#if HWY_HAVE_RUNTIME_DISPATCH
  // Computed here so that it reflects this library's HWY_TARGETS.
  return hwy::SupportedAndGeneratedTargets();
#else
  return {HWY_STATIC_TARGET};
#endif
}

const char* Name(int64_t target) { return hwy::TargetName(target); }

int64_t Current() {
#if HWY_HAVE_RUNTIME_DISPATCH
  const int64_t bits = hwy::SupportedTargets() & HWY_TARGETS;
  return bits & -bits;  // the lowest bit is the best target
#else
  return HWY_STATIC_TARGET;
#endif
}

void ForceForTest(int64_t target) {
#if HWY_HAVE_RUNTIME_DISPATCH
  hwy::SetSupportedTargetsForTest(target);
#else
  (void)target;
#endif
}

}  // namespace targets
}  // namespace attnkit
#endif  // HWY_ONCE
