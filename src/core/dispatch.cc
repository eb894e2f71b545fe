// attnkit: the one translation unit that compiles the SIMD code for every
// target (foreach_target.h) and dispatches to the best one. Each public
// operation computes through exactly one HWY_DYNAMIC_DISPATCH (natively) or
// HWY_STATIC_DISPATCH (WebAssembly, SIMD128), never one per inner kernel;
// checking its inputs for NaN and inf takes one more per input.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include "src/core/internal.h"
#include "src/core/validate.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/core/dispatch.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "src/core/decode-inl.h"
#include "src/core/flash-inl.h"
#include "src/core/ops-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

using internal::AttentionJob;
using internal::HeadTask;
using internal::Projection;
using internal::ScoreParams;

// Copies row [n] into row r of m (a kept stage), unless m is empty.
HWY_INLINE void KeepRow(const float* HWY_RESTRICT row, size_t n, MatrixView m, size_t r) {
  if (!m.empty()) std::copy(row, row + n, m.Row(r));
}

// The stages of one head that TraceHead keeps, each [T_q, T_k] or empty.
struct KeptStages {
  MatrixView raw, scaled, masked, weights;
};

// One head one query row at a time, keeping the stages of `keep`: Q [T_q, d_k],
// K [T_k, d_k], V [T_k, d_v] -> out [T_q, d_v], through `row` [T_k]
// (scratch). Returns false if scores overflowed.
HWY_INLINE bool TraceHead(const HeadTask& t, const ScoreParams& p, float* HWY_RESTRICT row,
                          const KeptStages& keep) {
  const size_t T_q = t.Q.rows, T_k = t.K.rows, d_k = t.Q.cols, d_v = t.V.cols;
  for (size_t i = 0; i < T_q; ++i) {
    const size_t limit = VisibleKeys(t, p, i);
    const float* HWY_RESTRICT q = t.Q.Row(i);
    DotRows(q, t.K.Row(0), t.K.stride, T_k, d_k, row);
    KeepRow(row, T_k, keep.raw, i);
    ScaleRow(row, T_k, p.scale, p.softcap);
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
    AddWeightedRows(row, limit, t.V.Row(0), t.V.stride, o, d_v);
  }
  return true;
}

// The stage `stage` of a job's kScores head kept in its scores view.
HWY_INLINE KeptStages StageOf(ScoresStage stage, MatrixView scores) {
  KeptStages keep;
  switch (stage) {
    case ScoresStage::kRaw:
      keep.raw = scores;
      break;
    case ScoresStage::kScaled:
      keep.scaled = scores;
      break;
    case ScoresStage::kMasked:
      keep.masked = scores;
      break;
    case ScoresStage::kWeights:
      keep.weights = scores;
      break;
    case ScoresStage::kNone:
      break;
  }
  return keep;
}

// Runs the rows of `work` of the projections: dst = src W (W packed in panels
// first where the projection has room for it), then checks that nothing
// overflowed. Returns false if something did.
HWY_INLINE bool Project(ThreadPool* pool, const std::vector<Projection>& projections,
                        const std::vector<internal::ProjectionWork>& work) {
  std::vector<PanelView> panels(projections.size());
  for (size_t i = 0; i < projections.size(); ++i) {
    if (projections[i].packed) panels[i] = PackPanels(projections[i].W, projections[i].packed);
  }
  std::atomic<bool> ok{true};
  internal::ParallelFor(pool, work.size(), [&](size_t w, size_t) HWY_ATTR {
    const internal::ProjectionWork& pw = work[w];
    const Projection& p = projections[pw.index];
    const size_t rows = pw.end - pw.begin;
    const ConstMatrixView src = p.src.Block(pw.begin, rows, 0, p.src.cols);
    const MatrixView dst = p.dst.Block(pw.begin, rows, 0, p.dst.cols);
    if (p.packed) {
      MatMulPanels(src, panels[pw.index], dst);
    } else {
      MatMul(src, p.W, dst);
    }
    if (!AllFinite(dst)) ok.store(false, std::memory_order_relaxed);
  });
  return ok.load();
}

bool RunAttentionJobT(const AttentionJob& job) {
  if (!Project(job.pool, job.projections, job.projection_work)) return false;
  if (job.after_projections) job.after_projections();
  if (job.trace) {  // one head, on this thread
    const HeadTask& t = job.heads[0];
    AttentionTrace* tr = job.trace;
    const KeptStages keep{tr->raw_scores.view(), tr->scaled_scores.view(), tr->masked_scores.view(),
                          tr->weights.view()};
    return TraceHead(t, job.params, job.scratch, keep) && AllFinite(t.out);
  }
  // Every task owns its output rows (fused) or its partial results (split-K).
  std::atomic<bool> ok{true};
  std::vector<PackedKeys> packed(job.pool ? job.pool->num_threads() : 1);
  internal::ParallelFor(job.pool, job.head_work.size(), [&](size_t w, size_t thread) HWY_ATTR {
    const internal::HeadWork& hw = job.head_work[w];
    const HeadTask& t = job.heads[hw.head];
    float* HWY_RESTRICT scratch = job.scratch + thread * job.scratch_floats;
    bool task_ok;
    if (job.paths[hw.head] == internal::HeadPath::kScores) {
      // Raw and scaled scores of masked keys are outputs too: they must not
      // overflow either (masked scores hold -inf by design).
      task_ok = TraceHead(t, job.params, scratch, StageOf(job.scores_stage, t.scores)) &&
                AllFinite(t.out) &&
                (job.scores_stage == ScoresStage::kMasked || AllFinite(t.scores));
    } else if (job.paths[hw.head] == internal::HeadPath::kFused) {
      task_ok = FlashHead(t, job.params, hw.begin, hw.end, scratch, &packed[thread]) &&
                AllFinite(t.out.Block(hw.begin, hw.end - hw.begin, 0, t.out.cols));
    } else {
      const size_t chunk_floats = t.Q.rows * (2 + t.V.cols);
      task_ok = DecodeChunk(t, job.params, hw.begin, scratch,
                            job.partials + job.partials_at[hw.head] + hw.begin * chunk_floats);
    }
    if (!task_ok) ok.store(false, std::memory_order_relaxed);
  });
  if (!ok.load()) return false;
  for (size_t h = 0; h < job.heads.size(); ++h) {
    if (job.paths[h] != internal::HeadPath::kSplitK) continue;
    const HeadTask& t = job.heads[h];
    MergeChunks(t, internal::DecodeChunks(t.K.rows), job.partials + job.partials_at[h]);
    if (!AllFinite(t.out)) return false;
  }
  if (!job.output.W.empty()) return Project(job.pool, {job.output}, job.output_work);
  return true;
}

// C = A B, with B packed in panels first if there is room for it (`packed`).
bool MatMulT(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed) {
  if (packed) {
    MatMulPanels(A, PackPanels(B, packed), C);
  } else {
    MatMul(A, B, C);
  }
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

bool AllFiniteT(ConstMatrixView m) { return AllFinite(m); }

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
HWY_EXPORT(AllFiniteT);

// Natively: pick the best target the CPU supports, once per call. In
// WebAssembly there is no runtime dispatch: call the static (SIMD128) target.
#if HWY_HAVE_RUNTIME_DISPATCH
#define ATTNKIT_DISPATCH(fn) HWY_DYNAMIC_DISPATCH(fn)
#else
#define ATTNKIT_DISPATCH(fn) HWY_STATIC_DISPATCH(fn)
#endif

namespace internal {

namespace {

HeadPath forced_path = HeadPath::kTrace;  // see ForceHeadPathForTest

// Rows [0, rows) of projection `index` in tasks of kTaskRows.
void AddProjectionWork(size_t index, size_t rows, std::vector<ProjectionWork>* work) {
  for (size_t r = 0; r < rows; r += kTaskRows) {
    work->push_back({index, r, std::min(rows, r + kTaskRows)});
  }
}

}  // namespace

void ForceHeadPathForTest(HeadPath path) { forced_path = path; }

Status RunAttentionJob(AttentionJob* job) {
  for (size_t i = 0; i < job->projections.size(); ++i) {
    AddProjectionWork(i, job->projections[i].dst.rows, &job->projection_work);
  }
  if (!job->output.W.empty()) AddProjectionWork(0, job->output.dst.rows, &job->output_work);
  // Scratch floats per thread: a score row [T_k] for a trace, the packed
  // K^T and V ([d_k + d_v rounded up to a panel, T_k rounded up to the tile])
  // and a task's queries packed ([kTaskQueries, d_k]) on the fused path, a
  // chunk of scores on the split-K path. Split-K partials: [chunks, T_q, 2 +
  // d_v] per head.
  size_t floats = 0, partials = 0;
  job->paths.resize(job->heads.size());
  job->partials_at.assign(job->heads.size(), 0);
  for (size_t h = 0; h < job->heads.size(); ++h) {
    const HeadTask& t = job->heads[h];
    size_t n;
    if (job->trace) {
      job->paths[h] = HeadPath::kTrace;
      n = t.K.rows;
    } else if (job->scores_stage != ScoresStage::kNone) {
      job->paths[h] = HeadPath::kScores;
      n = t.K.rows;
      job->head_work.push_back({h, 0, t.Q.rows});
    } else if (forced_path != HeadPath::kTrace
                   ? forced_path == HeadPath::kFused
                   : UseFusedPath(t.Q.rows, t.K.rows, t.K.cols, t.V.cols)) {
      job->paths[h] = HeadPath::kFused;
      const size_t packed_rows = t.K.cols + RoundUp(t.V.cols, kMaxPanel);
      ATTNKIT_RETURN_IF_ERROR(CheckedProduct(job->source, "packed K^T and V [d_k + d_v, T_k]",
                                             packed_rows, RoundUp(t.K.rows, kFlashTileKeys), &n));
      // kTaskQueries * d_k < n: no overflow in the product.
      static_assert(kTaskQueries <= kFlashTileKeys, "a task's queries take less room than K^T");
      const size_t queries = kTaskQueries * t.K.cols;
      if (n > std::numeric_limits<size_t>::max() - queries)
        return OutOfMemory(job->source, "packed queries", n);
      n += queries;
      for (size_t r = 0; r < t.Q.rows; r += kTaskQueries) {
        job->head_work.push_back({h, r, std::min(t.Q.rows, r + kTaskQueries)});
      }
    } else {
      job->paths[h] = HeadPath::kSplitK;
      n = kDecodeChunkKeys;
      const size_t chunks = DecodeChunks(t.K.rows);
      for (size_t c = 0; c < chunks; ++c) job->head_work.push_back({h, c, c + 1});
      size_t head_partials;  // chunks * T_q: split-K heads have few queries per key
      ATTNKIT_RETURN_IF_ERROR(CheckedProduct(job->source, "split-K partials", chunks * t.Q.rows,
                                             2 + t.V.cols, &head_partials));
      job->partials_at[h] = partials;
      partials += head_partials;
    }
    floats = std::max(floats, n);
  }
  // After the partials: the weights of projections with enough rows, packed
  // in panels ([K, N] rounded up to the widest panel).
  std::vector<Projection*> projections;
  for (Projection& p : job->projections) projections.push_back(&p);
  if (!job->output.W.empty()) projections.push_back(&job->output);
  size_t shared = partials;
  std::vector<std::pair<Projection*, size_t>> packed_at;  // (projection, offset)
  for (Projection* p : projections) {
    if (p->src.rows < kPackMinRows) continue;
    size_t n;
    ATTNKIT_RETURN_IF_ERROR(CheckedProduct(job->source, "packed weights", p->W.rows,
                                           RoundUp(p->W.cols, kMaxPanel), &n));
    if (n > std::numeric_limits<size_t>::max() - shared)
      return OutOfMemory(job->source, "packed weights", n);
    packed_at.push_back({p, shared});
    shared += n;
  }
  const size_t threads = job->pool ? job->pool->num_threads() : 1;
  size_t total;
  ATTNKIT_RETURN_IF_ERROR(
      CheckedProduct(job->source, "scratch per thread", floats, threads, &total));
  if (total > std::numeric_limits<size_t>::max() - shared)
    return OutOfMemory(job->source, "scratch", total);
  FloatBuffer scratch;
  if (!scratch.Allocate(total + shared)) return OutOfMemory(job->source, "scratch", total + shared);
  job->scratch = scratch.data();
  job->scratch_floats = floats;
  job->partials = scratch.data() + total;
  for (const auto& [p, at] : packed_at) p->packed = job->partials + at;
  if (!ATTNKIT_DISPATCH(RunAttentionJobT)(*job))
    return OverflowStatus(job->source, "the scores and outputs");
  return Status::Ok();
}
bool RunMatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed) {
  return ATTNKIT_DISPATCH(MatMulT)(A, B, C, packed);
}
bool RunMatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  return ATTNKIT_DISPATCH(MatMulTransposedT)(A, B, C);
}
bool RunScaleScores(MatrixView x, float scale, float softcap) {
  return ATTNKIT_DISPATCH(ScaleScoresT)(x, scale, softcap);
}
bool RunSoftmaxRows(MatrixView x) { return ATTNKIT_DISPATCH(SoftmaxRowsT)(x); }
bool RunAllFinite(ConstMatrixView m) { return ATTNKIT_DISPATCH(AllFiniteT)(m); }

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
