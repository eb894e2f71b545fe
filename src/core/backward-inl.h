// attnkit: the fused forward-for-training and backward of one attention head
// (see backward.h for the maths). Compiled once per target by backward.cc
// through foreach_target.h, apart from the forward's dispatch.cc.
//
// Both walk [kQueryBlock, kKeyBlock] tiles of scores and never hold a
// [T_q, T_k] matrix (Dao 2023, FlashAttention-2):
//   forward:  per query block, per key block: S = Q K^T scale, softcap, masks,
//             online softmax (running max m, sum l), O += P V; at the end
//             O /= l and lse = m + log l.
//   backward: per key block, per query block: S as above, P = exp(S' - lse),
//             dP = dO V^T, dS = P (dP - D) (1 - tanh^2) scale, then
//             dV_block += P^T dO, dK_block += dS^T Q, dQ += dS K.
// Key blocks that no row of a query block sees (causal, key length) are
// skipped, in both directions. The GEMMs keep a register tile of 4 rows x 2
// vectors of C for the whole K loop. Every operand a GEMM reads as B is packed
// with columns padded to kGradPad floats, a multiple of every target's lanes,
// so that no GEMM needs a column tail; keys are written (zeros past T_k) only
// up to whole vectors of the running target, the most any GEMM reads.
// Memory: K^T, V^T, K, V, Q, dO and dQ packed, O((T_q + T_k) d), plus a few
// [kQueryBlock, kKeyBlock] and [kKeyBlock, d] tiles per thread.

#ifndef ATTNKIT_BACKWARD_TASK_H_
#define ATTNKIT_BACKWARD_TASK_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/core/internal.h"
#include "src/core/thread_pool.h"

namespace attnkit {
namespace internal {

// Keys per block (columns of a score tile) and queries per block (its rows).
constexpr size_t kGradKeyBlock = 64;
constexpr size_t kGradQueryBlock = 32;
// Packed rows are padded to a multiple of this many floats: the most lanes of
// any target (AVX-512), and a multiple of all the others.
constexpr size_t kGradPad = 16;

// Where each packed operand lives in one workspace of floats (offsets), for
// a head of T_q queries, T_k keys (padded to Tk_p: whole key blocks of kb), d_k
// and d_v (padded to dk_p, dv_p). Regions a pass does not use are empty.
// Shared by all threads, then one block of thread_floats per thread (its
// offsets relative to the block).
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
  size_t vp = 0;          // [Tk_p, dv_p]  V (forward)
  size_t vt = 0;          // [Tk_p / kb][d_v, kb]  V^T (backward)
  size_t kp = 0;          // [Tk_p, dk_p]  K (backward)
  size_t qp = 0;          // [T_q, dk_p]  Q (backward), unless q_in_place
  size_t dop = 0;         // [T_q, dv_p]  dO (backward), unless do_in_place
  size_t dqp = 0;         // [T_q, dk_p]  dQ accumulator (backward), unless q_in_place
  size_t D = 0;           // [T_q]  rowsum(dO * O) (backward)
  size_t threads_at = 0;  // where thread 0's block starts
  // Per thread:
  size_t oacc = 0;  // [kGradQueryBlock, dv_p]  running output (forward)
  size_t s = 0;     // [kGradQueryBlock, kGradKeyBlock]  S, then P
  size_t dp = 0;    // [kGradQueryBlock, kGradKeyBlock]  dP, then dS (backward)
  size_t g = 0;     // [kGradQueryBlock, kGradKeyBlock]  1 - tanh^2 (backward)
  size_t dkb = 0;   // [kGradKeyBlock, dk_p]  dK of one key block (backward)
  size_t dvb = 0;   // [kGradKeyBlock, dv_p]  dV of one key block (backward)
  size_t thread_floats = 0;
  size_t total = 0;
};

// Which passes run on one workspace: the forward for training, the backward
// with the forward's saved O and lse, or both (the backward that recomputes
// them). A workspace holds only the regions its passes use.
enum class GradPasses { kForward, kBackward, kForwardThenBackward };

// Plans the workspace of `passes` for `threads` threads; false if it would
// exceed `max_floats`.
inline bool PlanGradLayout(size_t T_q, size_t T_k, size_t d_k, size_t d_v, GradPasses passes,
                           size_t threads, uint64_t max_floats, GradLayout* w) {
  const bool forward = passes != GradPasses::kBackward;
  const bool backward = passes != GradPasses::kForward;
  const uint64_t pad = kGradPad, kb = kGradKeyBlock, qb = kGradQueryBlock;
  const uint64_t dk_p = (d_k + pad - 1) / pad * pad, dv_p = (d_v + pad - 1) / pad * pad;
  const uint64_t Tk_p = T_k <= kb ? (T_k + pad - 1) / pad * pad : (T_k + kb - 1) / kb * kb;
  const uint64_t Tq = T_q;
  // Every factor is below 2^29 (views hold at most 2^28 elements) and the
  // thread count is small, so each product fits in 64 bits; the sums are
  // checked as they grow.
  bool fits = true;
  auto region = [&](uint64_t* at, uint64_t floats) {
    const uint64_t start = *at;
    *at += floats;
    if (*at > max_floats) fits = false;
    return static_cast<size_t>(fits ? start : 0);
  };
  uint64_t at = 0, per = 0;
  w->dk_p = static_cast<size_t>(dk_p);
  w->dv_p = static_cast<size_t>(dv_p);
  w->Tk_p = static_cast<size_t>(Tk_p);
  w->kb = static_cast<size_t>(std::min(Tk_p, kb));
  w->kt = region(&at, Tk_p * d_k);
  w->s = region(&per, qb * kb);
  if (forward) {
    w->vp = region(&at, Tk_p * dv_p);
    w->oacc = region(&per, qb * dv_p);
  }
  if (backward) {
    w->vt = region(&at, Tk_p * d_v);
    w->kp = region(&at, Tk_p * dk_p);
    w->q_in_place = dk_p == d_k;
    w->do_in_place = dv_p == d_v;
    w->qp = region(&at, w->q_in_place ? 0 : Tq * dk_p);
    w->dop = region(&at, w->do_in_place ? 0 : Tq * dv_p);
    w->dqp = region(&at, w->q_in_place ? 0 : Tq * dk_p);
    w->D = region(&at, Tq);
    w->dp = region(&per, qb * kb);
    w->g = region(&per, qb * kb);
    w->dkb = region(&per, kb * dk_p);
    w->dvb = region(&per, kb * dv_p);
  }
  w->threads_at = region(&at, 0);
  w->thread_floats = static_cast<size_t>(per);
  region(&at, per * threads);
  w->total = static_cast<size_t>(fits ? at : 0);
  return fits;
}

// One head, checked by backward.cc. head holds Q, K, V and the masks resolved
// by SetHeadMasks; head.out is the forward's output O (written by the
// forward, read by the backward).
struct GradTask {
  HeadTask head;
  ScoreParams params;
  MatrixView lse_out;   // forward: [T_q, 1]
  ConstMatrixView lse;  // backward: [T_q, 1]
  ConstMatrixView dO;   // backward: [T_q, d_v]
  MatrixView dQ, dK, dV;
  GradLayout layout;
  float* workspace = nullptr;  // layout.total floats
  ThreadPool* pool = nullptr;  // null: the caller's thread only
};

// Every (item, query head) of a multi-head call, checked by backward.cc:
// tasks[b * num_heads + h], all of one layout. The query heads of K/V group
// g of item b are tasks [b * num_heads + g * group, + group), which all
// write dK and dV of that group. Groups run in chunks of `chunk` groups,
// each task of a chunk on its own shared region of `shared` (layout.threads_at
// floats), so memory grows with the heads in flight, not with batch * heads;
// the per-thread blocks (layout.thread_floats each) start at `threads`.
struct MultiGradTask {
  std::vector<GradTask> tasks;  // workspace set per chunk
  size_t group = 1;
  size_t chunk = 1;
  float* shared = nullptr;
  float* threads = nullptr;
  ThreadPool* pool = nullptr;
};

// How many K/V groups a multi-head call keeps in flight: enough to give every
// thread work when a head has a single key block.
inline size_t GroupsInFlight(size_t groups, size_t threads) {
  return std::min(groups, 2 * std::max<size_t>(threads, 1));
}

}  // namespace internal
}  // namespace attnkit

#endif  // ATTNKIT_BACKWARD_TASK_H_

// Per-target part (toggled include guard).
#if defined(ATTNKIT_BACKWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNKIT_BACKWARD_INL_H_
#undef ATTNKIT_BACKWARD_INL_H_
#else
#define ATTNKIT_BACKWARD_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "src/core/finite-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {
// Its own namespace: these helpers must never meet same-named ones of the
// forward's kernels (ops-inl.h) in one target namespace.
namespace grad {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
constexpr size_t kKeyBlock = internal::kGradKeyBlock;
constexpr size_t kQueryBlock = internal::kGradQueryBlock;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// exp(x) below this is subnormal: the weights are flushed to 0 there, as the
// forward's kernels do (a weight < 1.2e-38 changes nothing; subnormals slow
// every later multiply on x86).
constexpr float kExpFlushBelow = -87.0f;

// C rows [0, kRows), columns [0, kVecs * Lanes) (+)= A B, where A(r, k) =
// a[r * a_row + k * a_col], B [K, >= kVecs * Lanes] rows ldb floats apart, C
// rows ldc apart. The kRows x kVecs accumulators stay in registers for the
// whole K loop: per k, kVecs loads of B and kRows broadcasts of A feed
// kRows * kVecs FMAs (4 x 2 fits the 16 vector registers of SSE4/AVX2/WASM).
template <size_t kRows, size_t kVecs, bool kAccumulate>
HWY_INLINE void GemmTile(const float* HWY_RESTRICT a, size_t a_row, size_t a_col, size_t K,
                         const float* HWY_RESTRICT b, size_t ldb, float* HWY_RESTRICT c,
                         size_t ldc) {
  const DF d;
  const size_t N = hn::Lanes(d);
  hn::Vec<DF> acc[kRows][kVecs];
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t v = 0; v < kVecs; ++v) {
      acc[r][v] = kAccumulate ? hn::LoadU(d, c + r * ldc + v * N) : hn::Zero(d);
    }
  }
  for (size_t k = 0; k < K; ++k) {
    hn::Vec<DF> bv[kVecs];
    for (size_t v = 0; v < kVecs; ++v) bv[v] = hn::LoadU(d, b + k * ldb + v * N);
    for (size_t r = 0; r < kRows; ++r) {
      const hn::Vec<DF> av = hn::Set(d, a[r * a_row + k * a_col]);
      for (size_t v = 0; v < kVecs; ++v) acc[r][v] = hn::MulAdd(av, bv[v], acc[r][v]);
    }
  }
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t v = 0; v < kVecs; ++v) hn::StoreU(acc[r][v], d, c + r * ldc + v * N);
  }
}

// C rows [0, kRows) (+)= A B over all n columns (a multiple of Lanes).
template <size_t kRows, bool kAccumulate>
HWY_INLINE void GemmRows(const float* HWY_RESTRICT a, size_t a_row, size_t a_col, size_t K,
                         size_t n, const float* HWY_RESTRICT b, size_t ldb, float* HWY_RESTRICT c,
                         size_t ldc) {
  const size_t N = hn::Lanes(DF());
  size_t j = 0;
  for (; j + 2 * N <= n; j += 2 * N) {
    GemmTile<kRows, 2, kAccumulate>(a, a_row, a_col, K, b + j, ldb, c + j, ldc);
  }
  if (j < n) GemmTile<kRows, 1, kAccumulate>(a, a_row, a_col, K, b + j, ldb, c + j, ldc);
}

// C [M, n] = A B, or += with kAccumulate: A(i, k) = a[i * a_row + k * a_col]
// for i < M, k < K; B [K, n] rows ldb floats apart; C rows ldc apart; n a
// multiple of Lanes. A may be read transposed (a_row = 1).
template <bool kAccumulate>
HWY_INLINE void Gemm(size_t M, size_t K, size_t n, const float* HWY_RESTRICT a, size_t a_row,
                     size_t a_col, const float* HWY_RESTRICT b, size_t ldb, float* HWY_RESTRICT c,
                     size_t ldc) {
  size_t i = 0;
  for (; i + 4 <= M; i += 4) {
    GemmRows<4, kAccumulate>(a + i * a_row, a_row, a_col, K, n, b, ldb, c + i * ldc, ldc);
  }
  for (; i < M; ++i) {
    GemmRows<1, kAccumulate>(a + i * a_row, a_row, a_col, K, n, b, ldb, c + i * ldc, ldc);
  }
}

// The keys query i sees before the per-cell masks: min(key length, i +
// causal offset + 1 if causal), within [0, T_k].
HWY_INLINE size_t VisibleKeys(const internal::GradTask& task, size_t i) {
  const internal::HeadTask& t = task.head;
  size_t limit = std::min(t.key_length, t.K.rows);
  if (task.params.causal) {
    const ptrdiff_t seen = static_cast<ptrdiff_t>(i) + 1 + t.causal_offset;
    limit = seen <= 0 ? 0 : std::min(limit, static_cast<size_t>(seen));
  }
  return limit;
}

// n rounded up to whole vectors of this target: the keys (rows or columns)
// of a packed operand that its GEMMs read. Padding past it is never read, so
// a short sequence packs and clears no more than that.
HWY_INLINE size_t WholeVectors(size_t n) {
  const size_t N = hn::Lanes(DF());
  return (n + N - 1) / N * N;
}

// dst: src^T * scale in key blocks [cols, kb] (src [keys, cols], kb a
// multiple of 4), zeros past src's rows up to whole vectors. Transposes 4 x 4
// blocks in 128-bit vectors (every SIMD target has them): one strided scalar
// store per value cost as much as a short backward's matrix products.
HWY_INLINE void PackTransposed(ConstMatrixView src, float scale, size_t kb,
                               float* HWY_RESTRICT dst) {
  const size_t cols = src.cols;
#if HWY_TARGET != HWY_SCALAR
  const hn::CappedTag<float, 4> d4;
  const auto vscale = hn::Set(d4, scale);
#endif
  for (size_t j = 0; j < WholeVectors(src.rows); j += 4) {
    float* HWY_RESTRICT block = dst + j / kb * cols * kb + j % kb;
    size_t c = 0;
#if HWY_TARGET != HWY_SCALAR
    if (j + 4 <= src.rows) {
      for (; c + 4 <= cols; c += 4) {
        const auto r0 = hn::LoadU(d4, src.Row(j) + c), r1 = hn::LoadU(d4, src.Row(j + 1) + c);
        const auto r2 = hn::LoadU(d4, src.Row(j + 2) + c), r3 = hn::LoadU(d4, src.Row(j + 3) + c);
        const auto t0 = hn::InterleaveLower(d4, r0, r1), t1 = hn::InterleaveLower(d4, r2, r3);
        const auto t2 = hn::InterleaveUpper(d4, r0, r1), t3 = hn::InterleaveUpper(d4, r2, r3);
        hn::StoreU(hn::Mul(hn::ConcatLowerLower(d4, t1, t0), vscale), d4, block + c * kb);
        hn::StoreU(hn::Mul(hn::ConcatUpperUpper(d4, t1, t0), vscale), d4, block + (c + 1) * kb);
        hn::StoreU(hn::Mul(hn::ConcatLowerLower(d4, t3, t2), vscale), d4, block + (c + 2) * kb);
        hn::StoreU(hn::Mul(hn::ConcatUpperUpper(d4, t3, t2), vscale), d4, block + (c + 3) * kb);
      }
    }
#endif
    for (; c < cols; ++c) {
      for (size_t k = 0; k < 4; ++k) {
        block[c * kb + k] = j + k < src.rows ? src(j + k, c) * scale : 0.0f;
      }
    }
  }
}

// dst [rows_p, cols_p] = src [rows, cols] (rows_p >= rows, cols_p >= cols),
// zeros elsewhere.
HWY_INLINE void PackPadded(ConstMatrixView src, size_t rows_p, size_t cols_p,
                           float* HWY_RESTRICT dst) {
  for (size_t r = 0; r < rows_p; ++r) {
    float* HWY_RESTRICT row = dst + r * cols_p;
    const size_t n = r < src.rows ? src.cols : 0;
    if (n) std::copy(src.Row(r), src.Row(r) + n, row);
    std::fill(row + n, row + cols_p, 0.0f);
  }
}

// Turns row s [cols] of scaled scores of query i against keys [j0, j0 +
// cols) into masked scores: softcap (and its derivative 1 - tanh^2 into g,
// unless null), -inf where the boolean mask forbids and past the row's n
// visible keys, + the additive mask elsewhere. cols is a multiple of Lanes.
HWY_INLINE void MaskRow(const internal::GradTask& task, size_t i, size_t j0, size_t n, size_t cols,
                        float* HWY_RESTRICT s, float* HWY_RESTRICT g) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const float softcap = task.params.softcap;
  if (softcap > 0.0f) {
    const auto cap = hn::Set(d, softcap), inv = hn::Set(d, 1.0f / softcap);
    const auto one = hn::Set(d, 1.0f);
    for (size_t j = 0; j < cols; j += N) {
      const auto t = hn::Tanh(d, hn::Mul(hn::LoadU(d, s + j), inv));
      hn::StoreU(hn::Mul(cap, t), d, s + j);
      if (g) hn::StoreU(hn::NegMulAdd(t, t, one), d, g + j);
    }
  }
  const internal::HeadTask& t = task.head;
  if (!t.bool_mask.empty()) {
    const uint8_t* allow = t.bool_mask.Row(i) + j0;
    for (size_t j = 0; j < n; ++j) {
      if (!allow[j]) s[j] = kNegInf;
    }
  }
  if (!t.additive_mask.empty()) {
    const float* add = t.additive_mask.Row(i) + j0;
    for (size_t j = 0; j < n; ++j) s[j] += add[j];
  }
  std::fill(s + n, s + cols, kNegInf);
}

// The max of s [cols] (-inf if all are).
HWY_INLINE float RowMax(const float* HWY_RESTRICT s, size_t cols) {
  const DF d;
  const size_t N = hn::Lanes(d);
  auto m = hn::Set(d, kNegInf);
  for (size_t j = 0; j < cols; j += N) m = hn::Max(m, hn::LoadU(d, s + j));
  return hn::GetLane(hn::MaxOfLanes(d, m));
}

// s [cols] = exp(s - shift), 0 where that is below kExpFlushBelow (masked
// entries, -inf, give exactly 0); returns the sum. shift is finite.
HWY_INLINE float ExpRow(float* HWY_RESTRICT s, size_t cols, float shift) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const auto sh = hn::Set(d, shift), lo = hn::Set(d, kExpFlushBelow);
  auto sum = hn::Zero(d);
  for (size_t j = 0; j < cols; j += N) {
    const auto x = hn::Sub(hn::LoadU(d, s + j), sh);
    const auto p = hn::IfThenElseZero(hn::Ge(x, lo), hn::Exp(d, hn::Max(x, lo)));
    hn::StoreU(p, d, s + j);
    sum = hn::Add(sum, p);
  }
  return hn::GetLane(hn::SumOfLanes(d, sum));
}

// x [n] *= f.
HWY_INLINE void ScaleRow(float* HWY_RESTRICT x, size_t n, float f) {
  const DF d;
  const size_t N = hn::Lanes(d);
  for (size_t j = 0; j < n; j += N)
    hn::StoreU(hn::Mul(hn::LoadU(d, x + j), hn::Set(d, f)), d, x + j);
}

// True if every value of m is finite (or -inf, with kAllowNegInf). Out of
// line: inlined three times into the backward, its loops made V8 spill the
// registers of the kernel's loops.
template <bool kAllowNegInf = false>
HWY_NOINLINE bool AllFinite(ConstMatrixView m) {
  for (size_t r = 0; r < m.rows; ++r) {
    if (!HWY_NAMESPACE::AllFinite<kAllowNegInf>(m.Row(r), m.cols)) return false;
  }
  return true;
}

// Number of score columns a tile computes: the keys from j0 that some row
// sees (up to `keys`), rounded up to whole vectors, at most a key block.
HWY_INLINE size_t TileCols(size_t keys, size_t j0) {
  return std::min(kKeyBlock, WholeVectors(keys - j0));
}

// Calls fn(task, thread) for tasks [0, n): on the pool, or in order on the
// caller's thread (thread 0).
template <class Fn>
HWY_INLINE void ForEachTask(ThreadPool* pool, size_t n, const Fn& fn) {
  if (pool != nullptr && pool->num_threads() > 1 && n > 1) {
    pool->Run(n, [&fn](size_t task, size_t thread) HWY_ATTR { fn(task, thread); });
  } else {
    for (size_t task = 0; task < n; ++task) fn(task, 0);
  }
}

// Query rows [i0, i0 + rows) of the forward: out rows and lse. `scratch` is
// the thread's block of the workspace.
HWY_INLINE void ForwardBlock(const internal::GradTask& task, float* HWY_RESTRICT scratch, size_t i0,
                             size_t rows) {
  const internal::HeadTask& t = task.head;
  const internal::GradLayout& w = task.layout;
  const float* ws = task.workspace;
  const size_t d_k = t.Q.cols, d_v = t.V.cols, dv_p = w.dv_p;
  const size_t dv_n = WholeVectors(d_v);  // the columns of O the GEMM writes
  float* HWY_RESTRICT s = scratch + w.s;
  float* HWY_RESTRICT oacc = scratch + w.oacc;
  size_t visible[kQueryBlock];
  float m[kQueryBlock], l[kQueryBlock];
  size_t keys = 0;
  for (size_t r = 0; r < rows; ++r) {
    visible[r] = VisibleKeys(task, i0 + r);
    keys = std::max(keys, visible[r]);
    m[r] = kNegInf;
    l[r] = 0.0f;
  }
  std::fill(oacc, oacc + rows * dv_p, 0.0f);
  for (size_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
    const size_t cols = TileCols(keys, j0);
    Gemm<false>(rows, d_k, cols, t.Q.Row(i0), t.Q.stride, 1, ws + w.kt + j0 * d_k, w.kb, s,
                kKeyBlock);
    for (size_t r = 0; r < rows; ++r) {
      float* HWY_RESTRICT row = s + r * kKeyBlock;
      const size_t n = visible[r] > j0 ? std::min(cols, visible[r] - j0) : 0;
      MaskRow(task, i0 + r, j0, n, cols, row, nullptr);
      const float m_new = std::max(m[r], RowMax(row, cols));
      if (m_new == kNegInf) {  // nothing visible yet: a zero row of P
        std::fill(row, row + cols, 0.0f);
        continue;
      }
      const float alpha = std::exp(m[r] - m_new);  // 0 on the first visible block
      l[r] = l[r] * alpha + ExpRow(row, cols, m_new);
      m[r] = m_new;
      if (alpha != 1.0f) ScaleRow(oacc + r * dv_p, dv_n, alpha);
    }
    Gemm<true>(rows, cols, dv_n, s, kKeyBlock, 1, ws + w.vp + j0 * dv_p, dv_p, oacc, dv_p);
  }
  for (size_t r = 0; r < rows; ++r) {
    float* HWY_RESTRICT out = t.out.Row(i0 + r);
    // l is 0 for a row that sees no key and >= 1 for one that does. A score
    // that overflowed leaves m at +inf or NaN: NaN then reaches out and lse,
    // which the caller's check reports (never a zero row read as "no key").
    if (!(m[r] < std::numeric_limits<float>::infinity())) l[r] = std::nanf("");
    const bool no_key = l[r] == 0.0f;
    const float inv = no_key ? 0.0f : 1.0f / l[r];
    for (size_t c = 0; c < d_v; ++c) out[c] = oacc[r * dv_p + c] * inv;
    task.lse_out(i0 + r, 0) = no_key ? kNegInf : m[r] + std::log(l[r]);
  }
}

// The forward for training: out = O and lse_out, query blocks split over the
// threads. Returns false if a result overflowed.
// Packs K^T * scale and V for the forward.
HWY_INLINE void PrepareForward(const internal::GradTask& task) {
  const internal::GradLayout& w = task.layout;
  PackTransposed(task.head.K, task.params.scale, w.kb, task.workspace + w.kt);
  PackPadded(task.head.V, WholeVectors(task.head.V.rows), w.dv_p, task.workspace + w.vp);
}

HWY_INLINE bool Forward(const internal::GradTask& task) {
  const internal::HeadTask& t = task.head;
  const internal::GradLayout& w = task.layout;
  PrepareForward(task);
  const size_t blocks = (t.Q.rows + kQueryBlock - 1) / kQueryBlock;
  ForEachTask(task.pool, blocks, [&](size_t b, size_t thread) HWY_ATTR {
    const size_t i0 = b * kQueryBlock;
    ForwardBlock(task, task.workspace + w.threads_at + thread * w.thread_floats, i0,
                 std::min(kQueryBlock, t.Q.rows - i0));
  });
  return AllFinite(t.out) && AllFinite</*kAllowNegInf=*/true>(task.lse_out);
}

// Which gradients a backward tile adds to: the one-thread pass does all; with
// threads, a pass over key blocks adds dK and dV, and a pass over query blocks
// recomputes the same tiles, in the same order, for dQ.
enum class TileGrads { kAll, kKeys, kQueries };

// Query rows [i0, i0 + rows) against the key block at j0 of the backward:
// adds to the block's dK and dV (the thread's dkb, dvb) and to the rows' dQ,
// as `grads` says. `scratch` is the thread's block of the workspace.
HWY_INLINE void BackwardTile(const internal::GradTask& task, float* HWY_RESTRICT scratch, size_t i0,
                             size_t rows, size_t j0, TileGrads grads) {
  const internal::HeadTask& t = task.head;
  const internal::GradLayout& w = task.layout;
  float* ws = task.workspace;
  const DF d;
  const size_t N = hn::Lanes(d);
  const size_t d_k = t.Q.cols, d_v = t.V.cols, dk_p = w.dk_p, dv_p = w.dv_p;
  // The columns of dK, dV and dQ the GEMMs write: padding past whole
  // vectors of this target holds zeros that no result reads.
  const size_t dk_n = WholeVectors(d_k), dv_n = WholeVectors(d_v);
  size_t visible[kQueryBlock];
  size_t keys = 0;
  for (size_t r = 0; r < rows; ++r) {
    visible[r] = VisibleKeys(task, i0 + r);
    keys = std::max(keys, visible[r]);
  }
  if (keys <= j0) return;  // no row of the block sees a key of this block
  const size_t cols = TileCols(keys, j0);
  float* HWY_RESTRICT s = scratch + w.s;
  float* HWY_RESTRICT dp = scratch + w.dp;
  float* HWY_RESTRICT g = scratch + w.g;
  const bool softcap = task.params.softcap > 0.0f;
  Gemm<false>(rows, d_k, cols, t.Q.Row(i0), t.Q.stride, 1, ws + w.kt + j0 * d_k, w.kb, s,
              kKeyBlock);
  Gemm<false>(rows, d_v, cols, task.dO.Row(i0), task.dO.stride, 1, ws + w.vt + j0 * d_v, w.kb, dp,
              kKeyBlock);
  const auto scale = hn::Set(d, task.params.scale);
  for (size_t r = 0; r < rows; ++r) {
    const size_t i = i0 + r;
    float* HWY_RESTRICT p = s + r * kKeyBlock;
    float* HWY_RESTRICT ds = dp + r * kKeyBlock;
    const size_t n = visible[r] > j0 ? std::min(cols, visible[r] - j0) : 0;
    const float lse = task.lse(i, 0);
    if (n == 0 || lse == kNegInf) {  // the row sees no key here: P = dS = 0
      std::fill(p, p + cols, 0.0f);
      std::fill(ds, ds + cols, 0.0f);
      continue;
    }
    float* HWY_RESTRICT gr = softcap ? g + r * kKeyBlock : nullptr;
    MaskRow(task, i, j0, n, cols, p, gr);
    ExpRow(p, cols, lse);
    // dS = P (dP - D_i) (1 - tanh^2) scale; exactly 0 where P is.
    const auto Di = hn::Set(d, ws[w.D + i]);
    for (size_t j = 0; j < cols; j += N) {
      auto v = hn::Mul(hn::LoadU(d, p + j), hn::Sub(hn::LoadU(d, ds + j), Di));
      if (gr) v = hn::Mul(v, hn::LoadU(d, gr + j));
      hn::StoreU(hn::Mul(v, scale), d, ds + j);
    }
  }
  if (grads != TileGrads::kQueries) {
    const float* HWY_RESTRICT do_rows = w.do_in_place ? task.dO.Row(i0) : ws + w.dop + i0 * dv_p;
    const float* HWY_RESTRICT q_rows = w.q_in_place ? t.Q.Row(i0) : ws + w.qp + i0 * dk_p;
    // dV_block [cols, dv_n] += P^T [cols, rows] dO rows [rows, dv_n].
    Gemm<true>(cols, rows, dv_n, s, 1, kKeyBlock, do_rows, w.do_in_place ? task.dO.stride : dv_p,
               scratch + w.dvb, dv_p);
    // dK_block [cols, dk_n] += dS^T Q rows [rows, dk_n].
    Gemm<true>(cols, rows, dk_n, dp, 1, kKeyBlock, q_rows, w.q_in_place ? t.Q.stride : dk_p,
               scratch + w.dkb, dk_p);
  }
  if (grads != TileGrads::kKeys) {
    // dQ rows [rows, dk_n] += dS [rows, cols] K_block [cols, dk_n].
    float* HWY_RESTRICT dq_rows = w.q_in_place ? task.dQ.Row(i0) : ws + w.dqp + i0 * dk_p;
    Gemm<true>(rows, cols, dk_n, dp, kKeyBlock, 1, ws + w.kp + j0 * dk_p, dk_p, dq_rows,
               w.q_in_place ? task.dQ.stride : dk_p);
  }
}

// The key block at j0 of the backward for `count` tasks that share K and V
// (the query heads of one K/V group): their tiles with every query block,
// head by head in order, summed into one dK and dV block, then written out
// to the first task's dK and dV rows.
HWY_INLINE void BackwardKeyBlock(const internal::GradTask* tasks, size_t count,
                                 float* HWY_RESTRICT scratch, size_t j0, TileGrads grads) {
  const internal::GradTask& task = tasks[0];
  const internal::GradLayout& w = task.layout;
  const size_t T_q = task.head.Q.rows, T_k = task.head.K.rows;
  const size_t d_k = task.head.Q.cols, d_v = task.head.V.cols;
  float* HWY_RESTRICT dkb = scratch + w.dkb;
  float* HWY_RESTRICT dvb = scratch + w.dvb;
  // A tile adds to at most this many rows (TileCols).
  const size_t rows = std::min(w.kb, WholeVectors(T_k - j0));
  std::fill(dkb, dkb + rows * w.dk_p, 0.0f);
  std::fill(dvb, dvb + rows * w.dv_p, 0.0f);
  for (size_t h = 0; h < count; ++h) {
    for (size_t i0 = 0; i0 < T_q; i0 += kQueryBlock) {
      BackwardTile(tasks[h], scratch, i0, std::min(kQueryBlock, T_q - i0), j0, grads);
    }
  }
  for (size_t j = j0; j < std::min(T_k, j0 + kKeyBlock); ++j) {
    std::copy(dkb + (j - j0) * w.dk_p, dkb + (j - j0) * w.dk_p + d_k, task.dK.Row(j));
    std::copy(dvb + (j - j0) * w.dv_p, dvb + (j - j0) * w.dv_p + d_v, task.dV.Row(j));
  }
}

// The query block at i0 of the backward (threads only): its tiles with every
// key block, in the order of the one-thread pass, adding to dQ.
HWY_INLINE void BackwardQueryBlock(const internal::GradTask& task, float* HWY_RESTRICT scratch,
                                   size_t i0) {
  const size_t T_q = task.head.Q.rows, T_k = task.head.K.rows;
  for (size_t j0 = 0; j0 < T_k; j0 += kKeyBlock) {
    BackwardTile(task, scratch, i0, std::min(kQueryBlock, T_q - i0), j0, TileGrads::kQueries);
  }
}

// Packs K^T * scale, V^T, K, and Q and dO unless read in place, for the
// backward, clears dQ (or its accumulator) and computes D = rowsum(dO * O).
HWY_INLINE void PrepareBackward(const internal::GradTask& task) {
  const internal::HeadTask& t = task.head;
  const internal::GradLayout& w = task.layout;
  float* ws = task.workspace;
  const size_t T_q = t.Q.rows, T_k = t.K.rows, d_v = t.V.cols;
  const size_t keys = WholeVectors(T_k);  // the keys the GEMMs read
  PackTransposed(t.K, task.params.scale, w.kb, ws + w.kt);
  PackTransposed(t.V, 1.0f, w.kb, ws + w.vt);
  PackPadded(t.K, keys, w.dk_p, ws + w.kp);
  if (!w.q_in_place) PackPadded(t.Q, T_q, w.dk_p, ws + w.qp);
  if (!w.do_in_place) PackPadded(task.dO, T_q, w.dv_p, ws + w.dop);
  if (w.q_in_place) {
    for (size_t i = 0; i < T_q; ++i) std::fill(task.dQ.Row(i), task.dQ.Row(i) + t.Q.cols, 0.0f);
  } else {
    std::fill(ws + w.dqp, ws + w.dqp + T_q * w.dk_p, 0.0f);
  }
  for (size_t i = 0; i < T_q; ++i) {
    // In float64, in four sums: one chain of adds would wait on each add.
    const float* HWY_RESTRICT g = task.dO.Row(i);
    const float* HWY_RESTRICT o = t.out.Row(i);
    double D[4] = {0.0, 0.0, 0.0, 0.0};
    size_t c = 0;
    for (; c + 4 <= d_v; c += 4) {
      for (size_t k = 0; k < 4; ++k) D[k] += static_cast<double>(g[c + k]) * o[c + k];
    }
    for (; c < d_v; ++c) D[0] += static_cast<double>(g[c]) * o[c];
    ws[w.D + i] = static_cast<float>((D[0] + D[1]) + (D[2] + D[3]));
  }
}

// dQ rows out of the accumulator (unless summed in place).
HWY_INLINE void WriteQueryGradients(const internal::GradTask& task) {
  if (task.layout.q_in_place) return;
  const float* dq = task.workspace + task.layout.dqp;
  const size_t dk_p = task.layout.dk_p, d_k = task.head.Q.cols;
  for (size_t i = 0; i < task.head.Q.rows; ++i) {
    std::copy(dq + i * dk_p, dq + i * dk_p + d_k, task.dQ.Row(i));
  }
}

// The backward: dQ, dK, dV from Q, K, V, O (head.out), dO and lse. One
// thread makes one pass over the key blocks; with a pool, key blocks are
// split over the threads for dK and dV, then query blocks for dQ, which
// recomputes each tile once more but adds to dQ in the same order as one
// thread, so that the results are bit-identical. Returns false if a gradient
// overflowed.
HWY_INLINE bool Backward(const internal::GradTask& task) {
  const internal::HeadTask& t = task.head;
  const internal::GradLayout& w = task.layout;
  const size_t T_q = t.Q.rows, T_k = t.K.rows;
  PrepareBackward(task);
  float* threads = task.workspace + w.threads_at;
  const size_t key_blocks = (T_k + kKeyBlock - 1) / kKeyBlock;
  const size_t query_blocks = (T_q + kQueryBlock - 1) / kQueryBlock;
  if (task.pool == nullptr || task.pool->num_threads() == 1) {
    for (size_t b = 0; b < key_blocks; ++b) {
      BackwardKeyBlock(&task, 1, threads, b * kKeyBlock, TileGrads::kAll);
    }
  } else {
    ForEachTask(task.pool, key_blocks, [&](size_t b, size_t thread) HWY_ATTR {
      BackwardKeyBlock(&task, 1, threads + thread * w.thread_floats, b * kKeyBlock,
                       TileGrads::kKeys);
    });
    ForEachTask(task.pool, query_blocks, [&](size_t b, size_t thread) HWY_ATTR {
      BackwardQueryBlock(task, threads + thread * w.thread_floats, b * kQueryBlock);
    });
  }
  WriteQueryGradients(task);
  return AllFinite(task.dQ) && AllFinite(task.dK) && AllFinite(task.dV);
}

// The tasks of groups [g0, g0 + count) of a multi-head call, each on its
// shared region of the chunk.
HWY_INLINE std::vector<internal::GradTask> Chunk(const internal::MultiGradTask& job, size_t g0,
                                                 size_t count) {
  std::vector<internal::GradTask> chunk(job.tasks.begin() + g0 * job.group,
                                        job.tasks.begin() + (g0 + count) * job.group);
  for (size_t k = 0; k < chunk.size(); ++k) {
    chunk[k].workspace = job.shared + k * chunk[k].layout.threads_at;
  }
  return chunk;
}

// The forward for training of the heads of one chunk: packs per head, then
// (head, query block) pairs over the threads.
HWY_INLINE void ChunkForward(const internal::MultiGradTask& job,
                             const std::vector<internal::GradTask>& tasks) {
  const size_t n = tasks.size();
  const internal::GradLayout& w = tasks[0].layout;
  const size_t T_q = tasks[0].head.Q.rows;
  const size_t query_blocks = (T_q + kQueryBlock - 1) / kQueryBlock;
  ForEachTask(job.pool, n, [&](size_t k, size_t) HWY_ATTR { PrepareForward(tasks[k]); });
  ForEachTask(job.pool, n * query_blocks, [&](size_t k, size_t thread) HWY_ATTR {
    const size_t i0 = k % query_blocks * kQueryBlock;
    ForwardBlock(tasks[k / query_blocks], job.threads + thread * w.thread_floats, i0,
                 std::min(kQueryBlock, T_q - i0));
  });
}

// The backward of the heads of one chunk (whole K/V groups). One thread: per
// group, per key block, every query head of the group. Threads: (group, key
// block) for dK and dV, then (head, query block) for dQ, each tile's
// additions in the one-thread order, so that the results are bit-identical.
HWY_INLINE void ChunkBackward(const internal::MultiGradTask& job,
                              const std::vector<internal::GradTask>& tasks) {
  const size_t n = tasks.size(), group = job.group;
  const internal::GradLayout& w = tasks[0].layout;
  const size_t T_q = tasks[0].head.Q.rows, T_k = tasks[0].head.K.rows;
  const size_t key_blocks = (T_k + kKeyBlock - 1) / kKeyBlock;
  const size_t query_blocks = (T_q + kQueryBlock - 1) / kQueryBlock;
  const size_t groups = n / group;
  ForEachTask(job.pool, n, [&](size_t k, size_t) HWY_ATTR { PrepareBackward(tasks[k]); });
  if (job.pool == nullptr || job.pool->num_threads() == 1) {
    for (size_t k = 0; k < groups * key_blocks; ++k) {
      BackwardKeyBlock(&tasks[k / key_blocks * group], group, job.threads,
                       k % key_blocks * kKeyBlock, TileGrads::kAll);
    }
  } else {
    ForEachTask(job.pool, groups * key_blocks, [&](size_t k, size_t thread) HWY_ATTR {
      BackwardKeyBlock(&tasks[k / key_blocks * group], group,
                       job.threads + thread * w.thread_floats, k % key_blocks * kKeyBlock,
                       TileGrads::kKeys);
    });
    ForEachTask(job.pool, n * query_blocks, [&](size_t k, size_t thread) HWY_ATTR {
      BackwardQueryBlock(tasks[k / query_blocks], job.threads + thread * w.thread_floats,
                         k % query_blocks * kQueryBlock);
    });
  }
  for (const internal::GradTask& task : tasks) WriteQueryGradients(task);
}

// The forward for training of every head of a multi-head call, chunk by
// chunk. Returns false if a result overflowed.
HWY_INLINE bool MultiForward(const internal::MultiGradTask& job) {
  const size_t groups = job.tasks.size() / job.group;
  for (size_t g0 = 0; g0 < groups; g0 += job.chunk) {
    ChunkForward(job, Chunk(job, g0, std::min(job.chunk, groups - g0)));
  }
  for (const internal::GradTask& task : job.tasks) {
    if (!AllFinite(task.head.out) || !AllFinite</*kAllowNegInf=*/true>(task.lse_out)) return false;
  }
  return true;
}

// The backward of every head of a multi-head call, chunk by chunk; with
// `recompute`, each chunk's forward first (into O and lse). Returns false if
// a result overflowed.
HWY_INLINE bool MultiBackward(const internal::MultiGradTask& job, bool recompute) {
  const size_t groups = job.tasks.size() / job.group;
  for (size_t g0 = 0; g0 < groups; g0 += job.chunk) {
    const std::vector<internal::GradTask> tasks = Chunk(job, g0, std::min(job.chunk, groups - g0));
    if (recompute) {
      ChunkForward(job, tasks);
      for (const internal::GradTask& task : tasks) {
        if (!AllFinite(task.head.out)) return false;
      }
    }
    ChunkBackward(job, tasks);
  }
  bool finite = true;
  for (size_t k = 0; k < job.tasks.size(); ++k) {
    const internal::GradTask& task = job.tasks[k];
    finite = finite && AllFinite(task.dQ);
    if (k % job.group == 0) finite = finite && AllFinite(task.dK) && AllFinite(task.dV);
  }
  return finite;
}

}  // namespace grad
}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_BACKWARD_INL_H_
