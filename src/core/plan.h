// attnkit internals: the planner. It cuts an AttentionJob (the caller's
// inputs, internal.h) into tasks for the threads, picks each head's path and
// sizes the scratch, into an AttentionPlan; it lays out the backward's
// workspace (GradLayout). No SIMD here: the kernels (*-inl.h) read the plan.
#ifndef ATTNKIT_PLAN_H_
#define ATTNKIT_PLAN_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "attnkit/attention.h"
#include "attnkit/matrix.h"
#include "attnkit/status.h"
#include "src/core/internal.h"
#include "src/core/scratch.h"

namespace attnkit {
namespace internal {

// The fused kernel's key tile (a multiple of 2 * Lanes on every target):
// large enough that the per-tile work (row max and sum reductions, rescaling,
// GEMM tile set-up) is small next to the GEMMs, small enough that causal
// calls skip most masked keys.
constexpr size_t kFlashTileKeys = 128;
// The widest panel of any target (two vectors: 32 floats with AVX-512), for
// sizing the room of packed matrices; also the columns of B that a product of
// one thread packs at a time (MatMulPackingPanels in ops-inl.h): 128 bytes of
// each row, read in whole cache lines, and the packed panels small enough to
// stay in cache until read (more columns at a time measured slower).
constexpr size_t kMaxPanel = 32;
// Projections (and MatMul) with at least this many rows pack W in panels
// first (PackPanels in ops-inl.h). Packing costs a pass over W, as much as a
// decoding step's whole projection, so only projections of many rows repay
// it (bench/results).
constexpr size_t kPackMinRows = 128;
// A^T B (a weight's gradient X^T dY: few rows, a long K) packs B from this
// many rows of C on: the tiles read A^T down A's columns, and B packed next
// to it repays its pass from fewer rows (bench/results).
constexpr size_t kPackMinRowsTransposedA = 64;
// A product over threads with B packed splits C's columns when A holds at
// most this many floats (384 KB: a core's L2 keeps it while each thread runs
// all of A over its panels), else C's rows (projection_backward.cc).
constexpr size_t kColumnSplitMaxA = size_t{96} << 10;
// Whether a product of C [rows, ...] packs B in panels: A^T B (transposed_a)
// from kPackMinRowsTransposedA rows, A B and A B^T from kPackMinRows.
inline bool PacksB(size_t rows, bool transposed_a) {
  return rows >= (transposed_a ? kPackMinRowsTransposedA : kPackMinRows);
}

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
// up to a whole panel (zeros after the last key in K^T), so the fused path
// pays for itself from
//   T_q >= A + C (d_k + d_v) (RoundUp(T_k, kMaxPanel) - T_k) / T_k
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
  const double padding = static_cast<double>(RoundUp(T_k, kMaxPanel) - T_k);
#if defined(__wasm__)
  const double A = 5.0 + d / 6.0, C = 0.5;
#else
  const double A = 2.0 + d / 14.0, C = 0.16;
#endif
  return static_cast<double>(T_q) * keys >= A * keys + C * d * padding;
}

// The lean path of small calls (Attention, and AttentionForTraining with
// the small-shape kernel below): one head computed on the caller's thread
// with its scratch on the stack, through one dispatch, without an
// AttentionJob, a plan or any allocation. Either the small-shape kernel, or
// split-K's kernels on one chunk where the general path would take split-K
// with one chunk: the same sums as the general path's fused kernel or
// split-K, bit for bit.

// Whether Attention(Q, K, V, options, out) takes the lean path: every check
// but the inputs' finiteness passes (so that errors come from the general
// path, in its order), and either the small-shape kernel takes the head
// (UseSmallKernelForAttention) or the general path would pick split-K with
// one chunk and the partials fit.
bool UseSmallPath(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                  const AttentionOptions& options, MatrixView out);

// The small-shape kernel (SmallHead, flash-inl.h): a head of at most
// kSmallMaxQueries queries and kSmallMaxKeys keys, d_k and d_v at most
// kSmallMaxDim, computed as the fused kernel computes one key tile, with the
// same sums in the same order (bit for bit), but without its blocks of
// queries, packed queries and values, tile loop or online rescaling: every
// row's scores at once [T_q, kSmallMaxKeys] and K^T [d_k, kSmallMaxKeys] on
// the stack, one pass. At these sizes the fused kernel's set-up costs more
// than the maths. The training forward takes it up to kSmallMaxDim (its
// log-sum-exp is then the fused kernel's, from the scores the backward
// recomputes); Attention up to kSmallAttentionMaxDim, above which split-K's
// lean path is as fast.
constexpr size_t kSmallMaxQueries = 32;
constexpr size_t kSmallMaxKeys = 32;
constexpr size_t kSmallMaxDim = 64;
constexpr size_t kSmallAttentionMaxDim = 16;

// Whether a head of these sizes fits the small-shape kernel (false while a
// test forces a head path, so that it reaches the general one).
bool UseSmallKernel(size_t T_q, size_t T_k, size_t d_k, size_t d_v);
// Whether Attention's lean path takes the small-shape kernel (else split-K).
inline bool UseSmallKernelForAttention(size_t T_q, size_t T_k, size_t d_k, size_t d_v) {
  return d_k <= kSmallAttentionMaxDim && d_v <= kSmallAttentionMaxDim &&
         UseSmallKernel(T_q, T_k, d_k, d_v);
}

// What the lean path found: kNonFiniteInput before computing anything,
// kOverflow if a score, an output or a gradient overflowed float.
enum class SmallResult { kOk, kNonFiniteInput, kOverflow };

// Whether a lean path finished its call (kOk). Otherwise the call's checked
// path runs from the start: after kNonFiniteInput its checks name the input;
// after kOverflow every check passes and the general path computes again and
// reports the overflow as it always does (naming the input at fault).
inline bool LeanPathDone(SmallResult result) { return result == SmallResult::kOk; }

// Runs one checked head task on the lean path (dispatch.cc): with
// `check_inputs`, Q, K and V checked finite first; then with `small_kernel`
// (where UseSmallKernel allows) the small-shape kernel, which also writes
// task.lse if it is not empty, else split-K's one chunk and its merge
// (task.lse empty).
SmallResult RunSmallAttention(const HeadTask& task, const ScoreParams& params, bool check_inputs,
                              bool small_kernel);

// How one head task is computed:
// kRows: one query row at a time (TraceHead, trace-inl.h), keeping the
//   job's stages: every head of a job with kept scores, and a trace;
// kFused: tiles of queries and keys with online softmax (flash-inl.h), and
//   every head of the training forward (it keeps each row's log-sum-exp, from
//   the sums the backward recomputes);
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

// Per head task: its path, whether a kFused head takes the small-shape
// kernel (SmallHead: the fused kernel's sums, as one task), and for a
// kSplitK head where its partials start (one vector for all: a small call
// allocates little).
struct HeadPlan {
  HeadPath path = HeadPath::kFused;
  bool small = false;
  size_t partials_at = 0;
};

// What PlanAttention decides for one AttentionJob; it owns the job's scratch.
struct AttentionPlan {
  std::vector<HeadPlan> heads;                  // per head task
  std::vector<ProjectionWork> projection_work;  // of job.projections
  std::vector<ProjectionWork> output_work;      // of job.output
  std::vector<HeadWork> head_work;
  // Room for W packed in panels per projection of job.projections, then for
  // job.output (null: W is read in place).
  std::vector<float*> packed;
  float* output_packed = nullptr;
  // Scratch per thread (a score row, a chunk of scores or the packed K^T of
  // the fused kernel): thread t owns [t * scratch_floats, +scratch_floats).
  float* scratch = nullptr;
  size_t scratch_floats = 0;
  // The split-K partial results [chunks, T_q, 2 + d_v] of every kSplitK head.
  float* partials = nullptr;
  ScratchBuffer memory;  // scratch, partials and packed weights
  // job.pool, or null when the job is too small to share (PoolFor).
  ThreadPool* pool = nullptr;
};

// The backward's tiles (backward-inl.h): kGradQueryBlock queries (rows) by
// kGradKeyBlock keys (columns). Smaller than the fused forward's key tile:
// each thread keeps five such tiles and two [kGradKeyBlock, d] blocks in L1.
constexpr size_t kGradKeyBlock = 64;
constexpr size_t kGradQueryBlock = 32;
// The backward's packed rows are padded to a multiple of this many floats: the
// most lanes of any target (AVX-512), and a multiple of all the others, so
// that no GEMM of the backward has a column tail.
constexpr size_t kGradPad = 16;

// Where each packed operand of one head's backward lives in one workspace of
// floats (offsets), for T_q queries, T_k keys (padded to Tk_p: whole key
// blocks of kb), d_k and d_v (padded to dk_p, dv_p). Shared by all threads,
// then one block of thread_floats per thread (its offsets relative to the
// block).
struct GradLayout {
  size_t dk_p = 0, dv_p = 0, Tk_p = 0;
  // Columns of a packed K^T or V^T block: kGradKeyBlock, or T_k padded to
  // kGradPad when one block holds every key, so that a short sequence packs
  // and clears only its own keys.
  size_t kb = 0;
  // Q (dO) rows are read where they are, with their stride, when d_k (d_v)
  // needs no padding: the GEMMs that read them stop at the tile's last query.
  // Then dQ is also summed where it is, with no copy out of an accumulator.
  bool q_in_place = false, do_in_place = false;
  size_t kt = 0;          // [Tk_p / kb][d_k, kb]  K^T * scale
  size_t vt = 0;          // [Tk_p / kb][d_v, kb]  V^T
  size_t kp = 0;          // [Tk_p, dk_p]  K
  size_t qp = 0;          // [T_q, dk_p]  Q, unless q_in_place
  size_t dop = 0;         // [T_q, dv_p]  dO, unless do_in_place
  size_t dqp = 0;         // [T_q, dk_p]  dQ accumulator, unless q_in_place
  size_t D = 0;           // [T_q]  rowsum(dO * O)
  size_t threads_at = 0;  // where thread 0's block starts
  // Per thread:
  size_t s = 0;    // [kGradQueryBlock, kGradKeyBlock]  S, then P
  size_t dp = 0;   // [kGradQueryBlock, kGradKeyBlock]  dP, then dS
  size_t g = 0;    // [kGradQueryBlock, kGradKeyBlock]  the softcap's slope 1 - tanh^2
  size_t dkb = 0;  // [kGradKeyBlock, dk_p]  dK of one key block
  size_t dvb = 0;  // [kGradKeyBlock, dv_p]  dV of one key block
  size_t thread_floats = 0;
  size_t total = 0;
};

// Plans the backward's workspace for `threads` threads; false if it would
// exceed `max_floats`.
bool PlanGradLayout(size_t T_q, size_t T_k, size_t d_k, size_t d_v, size_t threads,
                    uint64_t max_floats, GradLayout* w);

// Whether a multi-head backward gives each thread whole K/V groups (at least
// as many groups as threads) or splits the key and query blocks of fewer
// groups over the threads (MultiBackward, backward-inl.h). Either way it keeps
// min(groups, threads) groups in flight.
inline bool WholeGroups(size_t groups, size_t threads) { return groups >= threads; }
inline size_t GroupsInFlight(size_t groups, size_t threads) {
  return std::min(groups, std::max<size_t>(threads, 1));
}

// One head's backward, checked by backward.cc. head holds Q, K, V, the masks
// resolved by SetHeadMasks and the forward's outputs, read only: O (head.out)
// and each row's log-sum-exp (head.lse).
struct GradTask {
  HeadTask head;
  ScoreParams params;
  ConstMatrixView dO;  // [T_q, d_v]
  MatrixView dQ, dK, dV;
  GradLayout layout;
  // The small backward (SmallBackward, backward-inl.h: one tile, no layout,
  // workspace kSmallGradFloats), for heads that UseSmallBackward allows.
  bool small = false;
  float* workspace = nullptr;  // layout.total floats (small: kSmallGradFloats)
  ThreadPool* pool = nullptr;  // null: the caller's thread only
};

// The small backward: a head of at most kGradQueryBlock queries and
// kGradKeyBlock keys, d_k and d_v at most kSmallMaxDim, is one tile of the
// backward (the same sums, bit for bit), computed without packing K, Q or dO,
// without padded accumulators and without a layout: K^T and V^T packed [d,
// kGradKeyBlock], and the tiles S (then P), dP (then dS) and the softcap's
// slope [kGradQueryBlock, kGradKeyBlock], in kSmallGradFloats.
constexpr size_t kSmallGradFloats =
    2 * kSmallMaxDim * kGradKeyBlock + 3 * kGradQueryBlock * kGradKeyBlock;

// Whether the backward of a head of these sizes takes SmallBackward (false
// while a test forces a head path).
bool UseSmallBackward(size_t T_q, size_t T_k, size_t d_k, size_t d_v);

// Every (item, query head) of a multi-head backward, checked by backward.cc:
// tasks[b * num_heads + h], all of one layout. The query heads of K/V group
// g of item b are tasks [b * num_heads + g * group, + group), which all
// write dK and dV of that group. With `whole_groups` (WholeGroups) each
// thread takes whole groups, their tasks on the thread's shared region of
// `shared` (group regions of layout.threads_at floats); otherwise every task
// has its own region there. So memory grows with the heads in flight
// (GroupsInFlight), not with batch * heads; the per-thread blocks
// (layout.thread_floats each) start at `threads`.
struct MultiGradTask {
  std::vector<GradTask> tasks;  // workspace set where they run
  size_t group = 1;
  bool whole_groups = true;
  float* shared = nullptr;
  float* threads = nullptr;
  ThreadPool* pool = nullptr;
};

// Plans `job` into *plan and allocates its scratch. Errors: kOverflow (naming
// job.source) if the scratch does not fit in size_t or the memory is not
// there.
Status PlanAttention(const AttentionJob& job, AttentionPlan* plan);

}  // namespace internal
}  // namespace attnkit

#endif  // ATTNKIT_PLAN_H_
