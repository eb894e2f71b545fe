// attnkit internals: the jobs that public operations hand, already validated,
// to the SIMD code in dispatch.cc. No SIMD types here.
#ifndef ATTNKIT_INTERNAL_H_
#define ATTNKIT_INTERNAL_H_

#include <cstddef>
#include <functional>
#include <vector>

#include "src/core/attention.h"
#include "src/core/matrix.h"
#include "src/core/multihead.h"
#include "src/core/status.h"
#include "src/core/thread_pool.h"

namespace attnkit {
namespace internal {

// How raw scores become masked scores, for every head (see
// AttentionOptions); the masks are per head (HeadTask).
struct ScoreParams {
  float scale = 1.0f;
  float softcap = 0.0f;
  bool causal = false;
};

// One head of one batch item: Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v]
// -> out [T_q, d_v]. Keys [key_length, T_k) are masked out; with causal,
// query i sees keys j <= i + causal_offset. The masks are this (item, head)'s
// slice, resolved once per task so that the kernels' loops read plain
// pointers: [T_q, >= key_length] (row stride 0 when one row serves every
// query), or empty. `scores` [T_q, T_k] receives the job's scores_stage.
struct HeadTask {
  ConstMatrixView Q, K, V;
  MatrixView out;
  size_t key_length = 0;
  ptrdiff_t causal_offset = 0;
  MaskView bool_mask;
  ConstMatrixView additive_mask;
  MatrixView scores;
};

// dst = src W: src [M, K], W [K, N], dst [M, N]. With M >= kPackMinRows,
// RunAttentionJob gives `packed` room for W in panels ([K, N] rounded up to
// kMaxPanel columns); smaller projections (decoding steps) read W in place.
struct Projection {
  ConstMatrixView src, W;
  MatrixView dst;
  float* packed = nullptr;
};

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
// panel, T_k rounded up to the tile]. Unchecked: RunAttentionJob checks the
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
// times crossed at d = 8 and d = 64 (bench/results), so that the time of a
// call grows without a step where the path changes; a fixed number of
// queries put that step at every key length. The choice depends on the
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

// How one head task is computed.
// kScores: one query row at a time as kTrace, keeping one stage per head.
enum class HeadPath { kTrace, kFused, kSplitK, kScores };

// Tests only: every later head without a trace takes `path` (kFused or
// kSplitK) whatever its shape; kTrace gives the choice back to UseFusedPath.
void ForceHeadPathForTest(HeadPath path);

// Rows [begin, end) of projection `index`.
struct ProjectionWork {
  size_t index, begin, end;
};

// One task of the head phase: head task `head`, and its query rows
// [begin, end) (kFused) or its key chunk `begin` (kSplitK).
struct HeadWork {
  size_t head, begin, end;
};

// Everything one public attention operation computes, in order:
//   1. projections (Q, K, V from X), each checked for overflow;
//   2. after_projections(), if set (the KV cache appends here);
//   3. every head task;
//   4. the output projection, if output.W is not empty.
// With `trace`, there is exactly one head and every intermediate is kept.
struct AttentionJob {
  std::vector<Projection> projections;
  std::function<void()> after_projections;
  std::vector<HeadTask> heads;
  ScoreParams params;
  Projection output;
  AttentionTrace* trace = nullptr;
  // Other than kNone: every head keeps this stage in its HeadTask::scores.
  ScoresStage scores_stage = ScoresStage::kNone;
  ThreadPool* pool = nullptr;  // null: the caller's thread only
  // The parameter an error of the job names (its scratch does not fit, or a
  // result overflowed): the input the queries come from.
  const char* source = "Q";

  // Filled by RunAttentionJob:
  std::vector<HeadPath> paths;                  // per head task
  std::vector<ProjectionWork> projection_work;  // of `projections`
  std::vector<ProjectionWork> output_work;      // of `output`
  std::vector<HeadWork> head_work;
  std::vector<size_t> partials_at;  // per kSplitK head: where its partials start
  // Scratch per thread (a score row, a chunk of scores or the packed K^T of
  // the fused kernel): thread t owns [t * scratch_floats, +scratch_floats).
  float* scratch = nullptr;
  size_t scratch_floats = 0;
  // The split-K partial results [chunks, T_q, 2 + d_v] of every kSplitK head.
  float* partials = nullptr;
};

// Plans the job's tasks, allocates its scratch and runs it with one dispatch.
// Errors: kOverflow if a result overflowed float (non-finite output from
// finite inputs) or the scratch memory is not there; outputs are then
// unspecified.
Status RunAttentionJob(AttentionJob* job);

// Calls fn(task, thread) for every task in [0, n): on the pool's threads, or
// in order on the caller's thread (thread 0) without a pool.
inline void ParallelFor(ThreadPool* pool, size_t n, const std::function<void(size_t, size_t)>& fn) {
  if (pool != nullptr) {
    pool->Run(n, fn);
  } else {
    for (size_t i = 0; i < n; ++i) fn(i, 0);
  }
}

// Each returns false if a result overflowed float; outputs are then unspecified.
// RunMatMul: C = A B; `packed` is room for B in panels ([K, N] rounded up to
// kMaxPanel columns), or null to read B in place (fewer than kPackMinRows rows).
bool RunMatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed);
bool RunMatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C);
bool RunScaleScores(MatrixView x, float scale, float softcap);
bool RunSoftmaxRows(MatrixView x);
// True if every value of m is finite.
bool RunAllFinite(ConstMatrixView m);

}  // namespace internal
}  // namespace attnkit

#endif  // ATTNKIT_INTERNAL_H_
