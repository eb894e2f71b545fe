// attnkit internals: the jobs that public operations hand, already validated,
// to the SIMD code in dispatch.cc. No SIMD types here.
#ifndef ATTNKIT_INTERNAL_H_
#define ATTNKIT_INTERNAL_H_

#include <cstddef>
#include <functional>
#include <vector>

#include "src/core/attention.h"
#include "src/core/matrix.h"
#include "src/core/status.h"

namespace attnkit {
namespace internal {

// How raw scores become masked scores (see AttentionOptions).
struct ScoreParams {
  float scale = 1.0f;
  float softcap = 0.0f;
  bool causal = false;
  MaskView bool_mask;             // [T_q, T_k] or empty
  ConstMatrixView additive_mask;  // [T_q, T_k] or empty
};

// One head of one batch item: Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v]
// -> out [T_q, d_v]. Keys [key_length, T_k) are masked out.
struct HeadTask {
  ConstMatrixView Q, K, V;
  MatrixView out;
  size_t key_length = 0;
};

// dst = src W: src [M, K], W [K, N], dst [M, N].
struct Projection {
  ConstMatrixView src, W;
  MatrixView dst;
};

// The fused kernel's key tile (a multiple of 2 * Lanes on every target), and
// the fewest queries for which it is used; smaller blocks (decoding) and
// traces go one query row at a time.
constexpr size_t kFlashTileKeys = 64;
constexpr size_t kFlashMinQueries = 4;

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
  // Scratch for the heads (one score row, or the packed K^T of the fused
  // kernel), allocated by RunAttentionJob.
  float* scratch = nullptr;
};

// Allocates the job's scratch and runs it with one dispatch. Errors: kOverflow
// if a result overflowed float (non-finite output from finite inputs) or the
// scratch memory is not there; outputs are then unspecified.
Status RunAttentionJob(AttentionJob* job);

// Each returns false if a result overflowed float; outputs are then unspecified.
bool RunMatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C);
bool RunMatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C);
bool RunScaleScores(MatrixView x, float scale, float softcap);
bool RunSoftmaxRows(MatrixView x);

}  // namespace internal
}  // namespace attnkit

#endif  // ATTNKIT_INTERNAL_H_
