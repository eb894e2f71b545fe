// attnkit: runs one planned AttentionJob on one target, per target; toggled
// include guard. Phases in order: Project (Q, K, V), after_projections, the
// head tasks on their planned paths (trace-inl.h, flash-inl.h,
// decode-inl.h), the split-K merges, Project (output). Every head task owns
// its output rows (kRows, kFused) or its partial results (kSplitK), so the
// threads share no writes.

#if defined(ATTNKIT_JOB_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNKIT_JOB_INL_H_
#undef ATTNKIT_JOB_INL_H_
#else
#define ATTNKIT_JOB_INL_H_
#endif

#include <atomic>
#include <cstddef>
#include <vector>

#include "hwy/highway.h"
#include "src/core/decode-inl.h"
#include "src/core/flash-inl.h"
#include "src/core/internal.h"
#include "src/core/ops-inl.h"
#include "src/core/plan.h"
#include "src/core/steps-inl.h"
#include "src/core/trace-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

// One out-of-line copy of the finiteness check of a matrix, for every check
// of an output here and in dispatch.cc: inlined at each, it would be copied
// into the wasm module a dozen times.
HWY_NOINLINE bool AllFiniteOnce(ConstMatrixView m) { return AllFinite(m); }

// Split-K's kernels out of line: the job's head tasks and the lean path of
// small calls (dispatch.cc) share one copy of each, which keeps the wasm
// module small.
HWY_NOINLINE bool SplitKChunk(const internal::HeadTask& t, const internal::ScoreParams& p,
                              size_t chunk, float* HWY_RESTRICT s, float* HWY_RESTRICT partials) {
  return DecodeChunk(t, p, chunk, s, partials);
}
HWY_NOINLINE void SplitKMerge(const internal::HeadTask& t, size_t chunks,
                              const float* HWY_RESTRICT partials) {
  MergeChunks(t, chunks, partials);
}

// The small-shape kernel (SmallHead) with its scratch on the stack: K^T
// [kSmallMaxDim, kSmallMaxKeys] and the scores [kSmallMaxQueries,
// kSmallMaxKeys]. Out of line: the job's small heads and the lean path share
// one copy, and split-K's lean path does not carry this frame.
HWY_NOINLINE bool SmallHeadOnce(const internal::HeadTask& t, const internal::ScoreParams& p) {
  HWY_ALIGN float kt[internal::kSmallMaxDim * internal::kSmallMaxKeys];
  HWY_ALIGN float s[internal::kSmallMaxQueries * internal::kSmallMaxKeys];
  return SmallHead(t, p, kt, s);
}

// The kRows path out of line: the head tasks of a job with kept scores and
// a trace share one copy.
HWY_NOINLINE bool TraceHeadOnce(const internal::HeadTask& t, const internal::ScoreParams& p,
                                float* HWY_RESTRICT scratch, const internal::KeptStages& keep) {
  return TraceHead(t, p, scratch, keep);
}

// Head task `hw` on `thread`, on its planned path. Returns false if a score
// or an output overflowed.
HWY_INLINE bool RunHeadTask(const internal::AttentionJob& job, const internal::AttentionPlan& plan,
                            const internal::HeadWork& hw, size_t thread, PackedKeys* packed) {
  const internal::HeadTask& t = job.heads[hw.head];
  float* HWY_RESTRICT scratch = plan.scratch + thread * plan.scratch_floats;
  switch (plan.heads[hw.head].path) {
    case internal::HeadPath::kRows:
      // Raw and scaled scores of masked keys are outputs too: they must not
      // overflow either (masked scores hold -inf by design).
      return TraceHeadOnce(t, job.params, scratch, StageOf(job.keep_stage, t.scores)) &&
             AllFiniteOnce(t.out) &&
             (job.keep_stage == internal::KeepStage::kMasked || AllFiniteOnce(t.scores));
    case internal::HeadPath::kFused:
      if (plan.heads[hw.head].small) return SmallHeadOnce(t, job.params);  // the whole head
      // FlashHead checks its outputs as it finishes them.
      return FlashHead(t, job.params, hw.begin, hw.end, scratch, packed);
    case internal::HeadPath::kSplitK: {
      // One chunk is the whole head: finished in place, nothing to merge.
      if (internal::DecodeChunks(t.K.rows) == 1)
        return SplitKChunk(t, job.params, 0, scratch, nullptr);
      const size_t chunk_floats = t.Q.rows * (2 + t.V.cols);
      return SplitKChunk(t, job.params, hw.begin, scratch,
                         plan.partials + plan.heads[hw.head].partials_at + hw.begin * chunk_floats);
    }
  }
  return false;
}

HWY_INLINE bool RunAttentionJobInline(const internal::AttentionJob& job,
                                      const internal::AttentionPlan& plan) {
  if (!Project(plan.pool, job.projections, plan.packed, plan.projection_work, plan.scratch,
               plan.scratch_floats)) {
    return false;
  }
  if (job.after_projections) job.after_projections();
  if (job.trace) {  // one head, on this thread, keeping every stage
    const internal::HeadTask& t = job.heads[0];
    return TraceHeadOnce(t, job.params, plan.scratch, *job.trace) && AllFiniteOnce(t.out);
  }
  std::atomic<bool> ok{true};
  // Each thread's packed keys; one thread's on the stack (no allocation for
  // a small call).
  const size_t threads = plan.pool ? plan.pool->num_threads() : 1;
  PackedKeys one;
  std::vector<PackedKeys> per_thread(threads > 1 ? threads : 0);
  PackedKeys* packed = threads > 1 ? per_thread.data() : &one;
  // Neighbouring head tasks write the same rows' cache lines (SpreadTask).
  const size_t tasks = plan.head_work.size();
  const bool spread = threads > 1 && plan.pool != nullptr;
  internal::ParallelFor(plan.pool, tasks, [&](size_t k, size_t thread) HWY_ATTR {
    const size_t w = internal::SpreadTask(k, tasks, spread);
    if (!RunHeadTask(job, plan, plan.head_work[w], thread, &packed[thread])) {
      ok.store(false, std::memory_order_relaxed);
    }
  });
  if (!ok.load()) return false;
  for (size_t h = 0; h < job.heads.size(); ++h) {
    if (plan.heads[h].path != internal::HeadPath::kSplitK) continue;
    const internal::HeadTask& t = job.heads[h];
    const size_t chunks = internal::DecodeChunks(t.K.rows);
    if (chunks > 1) SplitKMerge(t, chunks, plan.partials + plan.heads[h].partials_at);
    if (!AllFiniteOnce(t.out)) return false;
  }
  if (job.output.W.empty()) return true;
  return Project(plan.pool, {job.output}, {plan.output_packed}, plan.output_work, plan.scratch,
                 plan.scratch_floats);
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_JOB_INL_H_
