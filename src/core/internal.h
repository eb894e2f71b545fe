// attnkit internals: the jobs that public operations hand, already validated,
// to the SIMD code (dispatched in dispatch.cc). No SIMD types here, and no
// public operation's header: only the value types of matrix.h, status.h and
// thread_pool.h.
#ifndef ATTNKIT_INTERNAL_H_
#define ATTNKIT_INTERNAL_H_

#include <algorithm>
#include <cstddef>
#include <functional>
#include <type_traits>
#include <vector>

#include "attnkit/matrix.h"
#include "attnkit/status.h"
#include "attnkit/thread_pool.h"

namespace attnkit {
namespace internal {

class ScratchMatrix;  // scratch.h

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
// query), or empty. `scores` [T_q, T_k] receives the job's keep_stage. The
// training forward also writes each row's log-sum-exp into `lse` [T_q, 1]
// (-inf for a row that sees no key); empty otherwise.
struct HeadTask {
  ConstMatrixView Q, K, V;
  MatrixView out;
  MatrixView lse;
  size_t key_length = 0;
  ptrdiff_t causal_offset = 0;
  MaskView bool_mask;
  ConstMatrixView additive_mask;
  MatrixView scores;
  // The softmax weights [T_q, T_k] as a by-product (split-K: DecodeChunk
  // keeps each chunk's exp, MergeChunks normalises them), or empty. A head
  // that keeps them takes the split-K path.
  MatrixView weights;
};

// dst = src W: src [M, K], W [K, N], dst [M, N]. With M >= kPackMinRows
// (plan.h), the plan gives it room for W in panels; smaller projections
// (decoding steps) read W in place. With `panels` (weights packed once,
// packed_weights.h), W is read from there instead, in panels of
// `panel_width` columns ([ceil(N / w), K, w]), and W itself is not read.
struct Projection {
  ConstMatrixView src, W;
  MatrixView dst;
  const float* panels = nullptr;
  size_t panel_width = 0;
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
  // score overflowed): the input the queries come from.
  const char* source = "Q";
  // The parameter an output that overflows float names: the input the
  // values come from.
  const char* values = "V";
};

// Plans the job's tasks, allocates its scratch and runs it with one dispatch.
// The outputs are judged, not the kernels' running sums: an output is a
// weighted mean of V's rows, but the sums it divides can overflow where it
// does not (see RunAttentionJob in dispatch.cc). Errors: kOverflow naming
// `source` if a score overflowed float, `values` if an output did (from finite
// inputs), or `source` if the scratch memory is not there; outputs are then
// unspecified.
Status RunAttentionJob(const AttentionJob& job);

// The multiply-adds below which a call leaves its pool idle and runs on the
// caller's thread: handing tasks to the workers and waiting for the last one
// costs more than they save on less work (tasks of unequal size, as a causal
// head's query blocks, save less than half). `attnkit_train_bench --threads`
// (bench/native/train.cc) measures it: the pool's cost per call, products of
// several sizes and GPT training steps on one thread and on two. The model
// layer applies it to each call and to a pass's row kernels (RowsPool).
constexpr double kPoolMinMultiplyAdds = 1e6;
// The cut-off PoolFor applies: kPoolMinMultiplyAdds, unless a test or the
// benchmark that measures it sets another (0: every call given a pool uses
// it). Set it before calls that use a pool run.
double& PoolCutoff();
// Sets PoolCutoff() for its scope (tests, benchmarks).
class PoolCutoffScope {
 public:
  explicit PoolCutoffScope(double cutoff) : saved_(PoolCutoff()) { PoolCutoff() = cutoff; }
  ~PoolCutoffScope() { PoolCutoff() = saved_; }
  PoolCutoffScope(const PoolCutoffScope&) = delete;
  PoolCutoffScope& operator=(const PoolCutoffScope&) = delete;

 private:
  double saved_;
};
// `pool`, or null (the caller's thread) for less work than the cut-off.
inline ThreadPool* PoolFor(ThreadPool* pool, double multiply_adds) {
  return multiply_adds < PoolCutoff() ? nullptr : pool;
}
// The multiply-adds of one head's forward: Q K^T and P V, T_q T_k (d_k + d_v)
// (masks ignored). Its backward takes S, dP, dV, dQ and dK: T_q T_k (3 d_k +
// 2 d_v).
inline double ForwardMultiplyAdds(size_t T_q, size_t T_k, size_t d_k, size_t d_v) {
  return double(T_q) * double(T_k) * double(d_k + d_v);
}
inline double BackwardMultiplyAdds(size_t T_q, size_t T_k, size_t d_k, size_t d_v) {
  return double(T_q) * double(T_k) * double(3 * d_k + 2 * d_v);
}

// Calls fn(task, thread) for every task in [0, n): on the pool's threads, or
// in order on the caller's thread (thread 0) without a pool, with one thread
// or with one task (no hand-over for work that cannot be shared).
template <class Fn>
inline void ParallelFor(ThreadPool* pool, size_t n, const Fn& fn) {
  if (pool != nullptr && pool->num_threads() > 1 && n > 1) {
    pool->Run(n, fn);
  } else {
    for (size_t i = 0; i < n; ++i) fn(i, 0);
  }
}

// The task the k-th taken of n is, for tasks that write neighbouring columns
// of the same rows (the heads of one item, bshd): with `spread` (threads), k
// even takes task k / 2 of the first half and k odd one of the second, so
// that threads taking tasks one after another write distant rows, and no
// cache line of an output passes back and forth between them. Each task owns
// its outputs: the order changes no value.
inline size_t SpreadTask(size_t k, size_t n, bool spread) {
  return spread ? (k % 2 == 0 ? k / 2 : (n + 1) / 2 + k / 2) : k;
}

// Tasks per thread of a split whose cut may depend on the thread count (each
// element's result is the same wherever the cut falls): a few each, so that a
// thread the system holds up leaves its share to the others.
constexpr size_t kTasksPerThread = 4;
// Calls fn(begin, end) (or fn(begin, end, thread)) for ranges that cover
// [0, n) once, on the pool's threads (ParallelFor): kTasksPerThread per
// thread, each of at least `grain` (rounded to multiples of it: columns in
// whole vectors), one range with one thread. Only for work whose results do
// not depend on the cut.
template <class Fn>
inline void ParallelRanges(ThreadPool* pool, size_t n, size_t grain, const Fn& fn) {
  if (n == 0) return;
  const size_t threads = pool ? pool->num_threads() : 1;
  const size_t grains = (n + grain - 1) / grain;
  const size_t tasks = threads > 1 ? std::min(threads * kTasksPerThread, grains) : 1;
  const size_t chunk = (grains + tasks - 1) / tasks * grain;
  ParallelFor(pool, (n + chunk - 1) / chunk, [&](size_t t, size_t thread) {
    const size_t begin = t * chunk, end = std::min(n, begin + chunk);
    if constexpr (std::is_invocable_v<const Fn&, size_t, size_t, size_t>) {
      fn(begin, end, thread);
    } else {
      fn(begin, end);
    }
  });
}

// Each returns false if a result overflowed float; outputs are then unspecified.
// RunMatMul: C = A B; `packed` is room for kMaxPanel columns of B in
// panels ([K, kMaxPanel], plan.h), packed that many columns at a time as the
// rows of A run over them, or null to read B in place (PacksB false).
// RunMatMulTransposed: C = A B^T, `packed` room for
// columns of B^T likewise ([K, kMaxPanel] for B [N, K]), or null.
// RunMatMulTransposedA: C = A^T B for A [K, M] read in place, `packed` as
// RunMatMul's.
bool RunMatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed);
bool RunMatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed);
bool RunMatMulTransposedA(ConstMatrixView A, ConstMatrixView B, MatrixView C, float* packed);
// RunPackPanels: B [K, N]'s columns [j0, j1) (B [N, K]'s rows with
// `transposed`: B^T's columns), j0 a multiple of kMaxPanel, into `packed`
// ([K, N] rounded up to kMaxPanel columns) as RunMatMul packs B (and
// RunMatMulTransposed B^T): ranges packed by several threads make one
// packed B. RunMatMulPacked: C = A B (A^T B for A [K, M] with
// `transposed_a`) from that packed B, the sums of RunMatMul (and
// RunMatMulTransposed, RunMatMulTransposedA) with room to pack.
void RunPackPanels(ConstMatrixView B, bool transposed, size_t j0, size_t j1, float* packed);
bool RunMatMulPacked(ConstMatrixView A, bool transposed_a, const float* packed, MatrixView C);
// RunMatMulPanels: C [M, N] = A [M, K] B for B packed once in panels of
// `panel_width` columns ([ceil(N / w), K, w], PanelMatrix in
// packed_weights.h): the sums of RunMatMul, in the same order.
bool RunMatMulPanels(ConstMatrixView A, const float* panels, size_t panel_width, MatrixView C);
// RunScaleScores: x = ScaleSoftcap(x); with `slope` (not empty, shaped as x),
// also the softcap's slope 1 - tanh^2 that the backward keeps.
bool RunScaleScores(MatrixView x, float scale, float softcap, MatrixView slope = MatrixView());
bool RunSoftmaxRows(MatrixView x);
// True if every value of m is finite.
bool RunAllFinite(ConstMatrixView m);

// The backward of the projections (projection_backward.cc), on checked
// views: the gradients of Q = X W_Q, K = X W_K, V = X W_V, dW_Q = X^T dQ,
// dW_K = X^T dK, dW_V = X^T dV [d_model, d] and dX = dQ W_Q^T + dK W_K^T +
// dV W_V^T [rows of X, d_model]. Errors (overflow) name `source`.
Status RunProjectionBackward(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                             ConstMatrixView W_V, ConstMatrixView dQ, ConstMatrixView dK,
                             ConstMatrixView dV, const char* source, ThreadPool* pool,
                             MatrixView dX, MatrixView dW_Q, MatrixView dW_K, MatrixView dW_V);
// C = A B (or A B^T with `transposed`) on checked views, an overflow naming
// `source` and `what`. With a pool, bands of rows of A and C, or ranges of
// C's columns (B packed, its panels enough to share), go to the threads:
// each value of C is computed as on one thread, so the result is the same
// bit for bit.
Status Product(ConstMatrixView A, ConstMatrixView B, MatrixView C, bool transposed,
               const char* source, const char* what, ThreadPool* pool = nullptr);
// C = A B as Product, B [A.cols, C.cols] packed once in panels of
// `panel_width` columns (RunMatMulPanels): nothing packed per call, the
// same sums.
Status ProductPanels(ConstMatrixView A, const float* panels, size_t panel_width, MatrixView C,
                     const char* source, const char* what, ThreadPool* pool = nullptr);
// C = A^T B for A [K, M] read in place, as Product: bands of C's rows (A's
// columns) to the threads, each computed as on one thread.
Status ProductTransposedA(ConstMatrixView A, ConstMatrixView B, MatrixView C, const char* source,
                          const char* what, ThreadPool* pool = nullptr);
// Forces the target named by the environment variable ATTNKIT_TARGET, if set
// (targets.cc; ops.h): once when the library loads (dispatch.cc), again in
// tests. Its result is also what targets::EnvironmentStatus() returns.
Status ForceFromEnvironment();

// *t = m^T, allocated (errors name `parameter` and `what`).
Status Transpose(const char* parameter, const char* what, ConstMatrixView m, ScratchMatrix* t);

// The stable name of enum value `e`: names[e] for values counted from 0,
// "unknown" past the table (a value cast from an out-of-range integer).
template <typename E, size_t N>
const char* EnumName(const char* const (&names)[N], E e) {
  const auto i = static_cast<size_t>(e);
  return i < N ? names[i] : "unknown";
}

}  // namespace internal
}  // namespace attnkit

#endif  // ATTNKIT_INTERNAL_H_
