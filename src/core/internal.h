// attnkit internals: the jobs that public operations hand, already validated,
// to the SIMD code (dispatched in dispatch.cc). No SIMD types here, and no
// public operation's header: only the value types of matrix.h, status.h and
// thread_pool.h.
#ifndef ATTNKIT_INTERNAL_H_
#define ATTNKIT_INTERNAL_H_

#include <cstddef>
#include <functional>
#include <vector>

#include "src/core/matrix.h"
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
// query), or empty. `scores` [T_q, T_k] receives the job's keep_stage.
struct HeadTask {
  ConstMatrixView Q, K, V;
  MatrixView out;
  size_t key_length = 0;
  ptrdiff_t causal_offset = 0;
  MaskView bool_mask;
  ConstMatrixView additive_mask;
  MatrixView scores;
};

// dst = src W: src [M, K], W [K, N], dst [M, N]. With M >= kPackMinRows
// (plan.h), the plan gives it room for W in panels; smaller projections
// (decoding steps) read W in place.
struct Projection {
  ConstMatrixView src, W;
  MatrixView dst;
};

// The intermediates one head keeps, each [T_q, T_k] or empty: Q K^T, after
// ScaleSoftcap, after the masks, and the softmax weights.
struct KeptStages {
  MatrixView raw, scaled, masked, weights;
};

// Which stage every head of a job keeps in its HeadTask::scores.
enum class KeepStage { kNone, kRaw, kScaled, kMasked, kWeights };

// Everything one public attention operation computes, in order:
//   1. projections (Q, K, V from X), each checked for overflow;
//   2. after_projections(), if set (the KV cache appends here);
//   3. every head task;
//   4. the output projection, if output.W is not empty.
// The caller's inputs only: PlanAttention (plan.h) cuts it into tasks.
struct AttentionJob {
  std::vector<Projection> projections;
  std::function<void()> after_projections;
  std::vector<HeadTask> heads;
  ScoreParams params;
  Projection output;
  // A trace: exactly one head, which keeps every stage here.
  const KeptStages* trace = nullptr;
  // Other than kNone: every head keeps this stage in its HeadTask::scores.
  KeepStage keep_stage = KeepStage::kNone;
  ThreadPool* pool = nullptr;  // null: the caller's thread only
  // The parameter an error of the job names (its scratch does not fit, or a
  // result overflowed): the input the queries come from.
  const char* source = "Q";
};

// Plans the job's tasks, allocates its scratch and runs it with one dispatch.
// Errors: kOverflow if a result overflowed float (non-finite output from
// finite inputs) or the scratch memory is not there; outputs are then
// unspecified.
Status RunAttentionJob(const AttentionJob& job);

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
// kMaxPanel columns, plan.h), or null to read B in place (fewer than
// kPackMinRows rows). RunMatMulTransposed: C = A B^T, `packed` room for B^T
// likewise ([K, N] for B [N, K]), or null. RunMatMulTransposedA: C = A^T B
// for A [K, M] read in place, `packed` room for B in panels as RunMatMul's.
bool RunMatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed);
bool RunMatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed);
bool RunMatMulTransposedA(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed);
bool RunScaleScores(MatrixView x, float scale, float softcap);
bool RunSoftmaxRows(MatrixView x);
// True if every value of m is finite.
bool RunAllFinite(ConstMatrixView m);

}  // namespace internal
}  // namespace attnkit

#endif  // ATTNKIT_INTERNAL_H_
