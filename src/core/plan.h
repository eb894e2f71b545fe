// attnkit internals: the planner. It cuts an AttentionJob (the caller's
// inputs, internal.h) into tasks for the threads, picks each head's path and
// sizes the scratch, into an AttentionPlan. No SIMD here: the kernels
// (*-inl.h) read the plan.
#ifndef ATTNKIT_PLAN_H_
#define ATTNKIT_PLAN_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "src/core/attention.h"
#include "src/core/internal.h"
#include "src/core/matrix.h"
#include "src/core/status.h"

namespace attnkit {
namespace internal {

// The fused kernel's key tile (a multiple of 2 * Lanes on every target):
// large enough that the per-tile work (row max and sum reductions, rescaling,
// GEMM tile set-up) is small next to the GEMMs, small enough that causal
// calls skip most masked keys.
constexpr size_t kFlashTileKeys = 128;
// The widest panel of any target (two vectors: 32 floats with AVX-512), for
// sizing the room of packed matrices.
constexpr size_t kMaxPanel = 32;
// Projections (and MatMul) with at least this many rows pack W in panels
// first (PackPanels in ops-inl.h). Packing costs a pass over W, as much as a
// decoding step's whole projection, so only projections of many rows repay
// it (bench/results).
constexpr size_t kPackMinRows = 128;

inline size_t RoundUp(size_t n, size_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

// The floats of one head's keys packed for the fused kernel, K^T and V in
// panels (PackKeysAndValues in flash-inl.h): [d_k + d_v rounded up to a
// panel, T_k rounded up to the tile]. Unchecked: PlanAttention checks the
// product before the kernel runs.
inline size_t PackedKeysFloats(size_t T_k, size_t d_k, size_t d_v) {
  return (d_k + RoundUp(d_v, kMaxPanel)) * RoundUp(T_k, kFlashTileKeys);
}

// How the work of a job is cut into tasks for the threads (fixed sizes, so
// that results do not depend on the thread count): rows of a projection,
// queries of a fused head, keys of a split-K (decoding) head.
// A fused task reads all of K^T and V once per kTaskQueries queries: long
// sequences do not fit in L2, so a task takes enough queries to repay that
// read, and few enough that short calls still spread over the threads.
constexpr size_t kTaskRows = 32;
constexpr size_t kTaskQueries = 64;
constexpr size_t kDecodeChunkKeys = 256;

// The key chunks of a split-K head with T_k keys.
inline size_t DecodeChunks(size_t T_k) { return (T_k + kDecodeChunkKeys - 1) / kDecodeChunkKeys; }

// Whether a head of T_q queries against T_k keys takes the fused path (else
// split-K; traces go one query row at a time). The fused kernel first packs
// K^T and V and then costs less per (query, key) than split-K, which reads K
// and V in place for every query. The packing passes over the keys rounded
// up to a whole tile (zeros after the last key), so the fused path pays for
// itself from
//   T_q >= A + C (d_k + d_v) (RoundUp(T_k, kFlashTileKeys) - T_k) / T_k
// queries: A, where the two paths cost the same with no padding, grows with
// d_k + d_v (split-K's cost per key is mostly the d_k + d_v multiply-adds of
// reading K and V row by row, the fused kernel's a register-blocked GEMM) and
// is larger in wasm, where the GEMM gains less over reading rows; the second
// term pays for the padding. A and C put the switch where the two paths'
// times cross at d = 8 and d = 64 (bench/results), so that the time of a
// call grows without a step where the path changes; a fixed number of
// queries would put that step at every key length. The choice depends on the
// shapes only, never on the thread count.
inline bool UseFusedPath(size_t T_q, size_t T_k, size_t d_k, size_t d_v) {
  const double d = static_cast<double>(d_k + d_v), keys = static_cast<double>(T_k);
  const double padding = static_cast<double>(RoundUp(T_k, kFlashTileKeys) - T_k);
#if defined(__wasm__)
  const double A = 5.0 + d / 6.0, C = 0.5;
#else
  const double A = 2.0 + d / 14.0, C = 0.16;
#endif
  return static_cast<double>(T_q) * keys >= A * keys + C * d * padding;
}

// The lean path of small calls (Attention): one head whose keys fit in one
// split-K chunk, computed on the caller's thread by split-K's kernels with
// their scratch on the stack, through one dispatch, without an AttentionJob,
// a plan or any allocation. The same kernels on the same chunk as the
// general path: the results are the same bit for bit. Its partial results,
// [T_q, 2 + d_v], take at most kSmallPartialFloats.
constexpr size_t kSmallPartialFloats = 4096;

// Whether Attention(Q, K, V, options, out) takes the lean path: every check
// but the inputs' finiteness passes (so that errors come from the general
// path, in its order), the general path would pick split-K with one chunk,
// and the partials fit.
bool UseSmallPath(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                  const AttentionOptions& options, MatrixView out);

// What the lean path found: kNonFiniteInput before computing anything (the
// general path then names the input), kOverflow if a score or an output
// overflowed float.
enum class SmallResult { kOk, kNonFiniteInput, kOverflow };

// Runs one checked head task on the lean path (dispatch.cc): Q, K and V
// checked finite, then split-K's one chunk and its merge.
SmallResult RunSmallAttention(const HeadTask& task, const ScoreParams& params);

// How one head task is computed:
// kRows: one query row at a time (TraceHead, trace-inl.h), keeping the
//   job's stages: every head of a job with kept scores, and a trace;
// kFused: tiles of queries and keys with online softmax (flash-inl.h);
// kSplitK: chunks of keys, merged per query row (decode-inl.h).
enum class HeadPath { kRows, kFused, kSplitK };

// Tests only: every later head without kept stages takes `path` (kFused or
// kSplitK) whatever its shape; nullopt gives the choice back to UseFusedPath.
void ForceHeadPathForTest(std::optional<HeadPath> path);

// Rows [begin, end) of projection `index`.
struct ProjectionWork {
  size_t index, begin, end;
};

// One task of the head phase: head task `head`, and its query rows
// [begin, end) (kRows, kFused) or its key chunk `begin` (kSplitK).
struct HeadWork {
  size_t head, begin, end;
};

// What PlanAttention decides for one AttentionJob; it owns the job's scratch.
struct AttentionPlan {
  std::vector<HeadPath> paths;                  // per head task
  std::vector<ProjectionWork> projection_work;  // of job.projections
  std::vector<ProjectionWork> output_work;      // of job.output
  std::vector<HeadWork> head_work;
  // Room for W packed in panels per projection of job.projections, then for
  // job.output (null: W is read in place).
  std::vector<float*> packed;
  float* output_packed = nullptr;
  std::vector<size_t> partials_at;  // per kSplitK head: where its partials start
  // Scratch per thread (a score row, a chunk of scores or the packed K^T of
  // the fused kernel): thread t owns [t * scratch_floats, +scratch_floats).
  float* scratch = nullptr;
  size_t scratch_floats = 0;
  // The split-K partial results [chunks, T_q, 2 + d_v] of every kSplitK head.
  float* partials = nullptr;
  FloatBuffer memory;  // scratch, partials and packed weights
};

// Plans `job` into *plan and allocates its scratch. Errors: kOverflow (naming
// job.source) if the scratch does not fit in size_t or the memory is not
// there.
Status PlanAttention(const AttentionJob& job, AttentionPlan* plan);

}  // namespace internal
}  // namespace attnkit

#endif  // ATTNKIT_PLAN_H_
