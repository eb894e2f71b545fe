// attnkit: the backward of one attention head (see backward.h for the maths),
// per target (toggled include guard), compiled by the backward's kernel files
// (backward-kernels-inl.h). It runs the forward's steps (steps-inl.h) and
// GEMM (ops-inl.h) on [kGradQueryBlock, kGradKeyBlock] tiles of scores and
// never holds a [T_q, T_k] matrix (Dao 2023, FlashAttention-2). The training forward, which saves O
// and each row's log-sum-exp lse, is the fused kernel itself (flash-inl.h, with HeadTask::lse). Per
// key block, per query block, for Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v], O and dO [T_q, d_v]:
//   the forward's steps, recomputed:
//     Scores, ScaleSoftcap  S = Q K^T scale (K^T packed times the scale), then
//                           softcap, keeping its slope 1 - tanh^2
//     VisibleKeys, ApplyMasks   masked keys -> -inf
//     SoftmaxUnnormalised   P = exp(S' - lse), the forward's exp with the
//                           saved lse as the row's max (no sums, no rescaling)
//   the steps of the backward, each the VJP of one forward step:
//     WeightedSumVGrad      dV += P^T dO, dP = dO V^T
//     SoftmaxGrad           dS' = P (dP - D), D = rowsum(dO * O)
//     ScaleSoftcapGrad      dS = dS' (1 - tanh^2) scale
//     ScoresGrad            dQ += dS K, dK += dS^T Q
// Key blocks that no row of a query block sees (causal, key length) are
// skipped. Every operand a GEMM reads as B is packed with columns padded to
// kGradPad floats, a multiple of every target's lanes, so that no GEMM has a
// column tail; keys are written (zeros past T_k) only up to whole vectors of
// the running target, the most any GEMM reads.
// Memory: K^T, V^T, K, and Q, dO, dQ unless read in place,
// O((T_q + T_k) d), plus a few [kGradQueryBlock, kGradKeyBlock] and
// [kGradKeyBlock, d] tiles per thread (GradLayout, plan.h). A head that is
// one tile takes SmallBackward: the same steps and sums, without the layout
// and the packing of K, Q and dO that cost more than its maths.

#if defined(ATTNKIT_BACKWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNKIT_BACKWARD_INL_H_
#undef ATTNKIT_BACKWARD_INL_H_
#else
#define ATTNKIT_BACKWARD_INL_H_
#endif

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <limits>
#include <vector>

#include "hwy/highway.h"
#include "src/core/internal.h"
#include "src/core/ops-inl.h"
#include "src/core/plan.h"
#include "src/core/steps-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

constexpr size_t kGradKeys = internal::kGradKeyBlock;
constexpr size_t kGradQueries = internal::kGradQueryBlock;

// How the backward's GEMMs read A (see GemmA): P^T and dS^T [keys, queries]
// from the tiles P and dS [queries, kGradKeys]; dS [queries, keys] as it is.
// Their tiles run K = a query block, a key block or d: one k step per
// pointer advance (kGemmShortK).
using TileTransposedA = GemmA<1, kGradKeys>;
using TileA = GemmA<kGradKeys, 1>;

// B [K, n] for the GEMMs: rows `stride` floats apart, one panel.
HWY_INLINE PanelView Operand(const float* data, size_t K, size_t n, size_t stride) {
  return PanelView::Whole(ConstMatrixView(data, K, n, stride));
}

// dst [rows_p, cols_p] = src [rows, cols] (rows_p >= rows, cols_p >= cols),
// zeros elsewhere.
HWY_INLINE void PackPadded(ConstMatrixView src, size_t rows_p, size_t cols_p,
                           float* HWY_RESTRICT dst) {
  for (size_t r = 0; r < rows_p; ++r) {
    float* HWY_RESTRICT row = dst + r * cols_p;
    const size_t n = r < src.rows ? src.cols : 0;
    if (n) CopyRow(src.Row(r), n, row);
    ZeroRow(row + n, cols_p - n);
  }
}

// Number of score columns a tile computes: the keys from j0 that some row
// sees (up to `keys`), rounded up to whole vectors, at most a key block.
HWY_INLINE size_t TileCols(size_t keys, size_t j0) {
  return std::min(kGradKeys, WholeVectors(keys - j0));
}

// The forward's steps for row r [cols] of the tile (query i, keys [j0, j0 +
// cols), the row's first n visible): S [cols] holds the scaled scores; it
// becomes P = exp(S' - lse) with S' = softcap(S) masked and -inf past n. With
// a softcap, its slope 1 - tanh^2 goes to slope [cols].
HWY_INLINE void RecomputeWeights(const internal::GradTask& task, size_t i, size_t j0, size_t n,
                                 size_t cols, float lse, float* HWY_RESTRICT s,
                                 float* HWY_RESTRICT slope) {
  if (slope) ScaleSoftcap(s, cols, 1.0f, task.params.softcap, slope);
  ApplyMasks(task.head, i, j0, s, n);
  std::fill(s + n, s + cols, -std::numeric_limits<float>::infinity());
  SoftmaxUnnormalised</*kViaExp2=*/true>(s, cols, lse);
}

// SoftmaxGrad, one vector of row i: dS' = P (dP - D_i), the softmax's
// Jacobian diag(P) - P P^T applied to dP, with D_i = sum_j P_ij dP_ij =
// rowsum(dO_i * O_i) (PrepareBackward). Exactly 0 where P is.
template <class V>
HWY_INLINE V SoftmaxGrad(V p, V dp, V D_i) {
  return hn::Mul(p, hn::Sub(dp, D_i));
}

// ScaleSoftcapGrad, one vector: dS = dS' (1 - tanh^2) scale, the VJP of
// ScaleSoftcap (S = softcap tanh(scale Q K^T / softcap)); slope holds
// 1 - tanh^2 (ScaleSoftcap's slope), or null without a softcap.
template <class D, class V = hn::Vec<D>>
HWY_INLINE V ScaleSoftcapGrad(D d, V ds, const float* HWY_RESTRICT slope, V scale) {
  if (slope) ds = hn::Mul(ds, hn::LoadU(d, slope));
  return hn::Mul(ds, scale);
}

// SoftmaxGrad's D_i = rowsum(dO_i * O_i) of one query row, dO and O [d_v]:
// in float64, in four sums (one chain of adds would wait on each add).
HWY_INLINE float SoftmaxGradD(const float* HWY_RESTRICT g, const float* HWY_RESTRICT o,
                              size_t d_v) {
  double D[4] = {0.0, 0.0, 0.0, 0.0};
  size_t c = 0;
  for (; c + 4 <= d_v; c += 4) {
    for (size_t k = 0; k < 4; ++k) D[k] += static_cast<double>(g[c + k]) * o[c + k];
  }
  for (; c < d_v; ++c) D[0] += static_cast<double>(g[c]) * o[c];
  return static_cast<float>((D[0] + D[1]) + (D[2] + D[3]));
}

// Which gradients a backward tile adds to: the one-thread pass does all; with
// threads, a pass over key blocks adds dK and dV, and a pass over query blocks
// recomputes the same tiles, in the same order, for dQ.
enum class TileGrads { kAll, kKeys, kQueries };

// One tile of the backward: query rows [i0, i0 + rows) (rows <=
// kGradQueries) against keys [j0, j0 + cols) (cols <= kGradKeys, whole
// vectors), the thread's tiles, the operands the GEMMs read and the
// gradients they add to. BackwardTile takes them from the layout (packed and
// padded, dK and dV into the thread's key-block sums); SmallBackward, a head
// that is one tile, reads them where they are and adds to dQ, dK, dV
// themselves, over `key_rows` <= cols rows (the keys any query sees).
struct GradTile {
  const internal::GradTask& task;
  size_t i0, rows, j0, cols;
  float* s;            // [rows, kGradKeys]  S, then P
  float* dp;           // [rows, kGradKeys]  dP, then dS
  float* slope;        // [rows, kGradKeys]  1 - tanh^2 (with a softcap), else null
  ConstMatrixView kt;  // [d_k, cols]  K^T * scale of the tile's keys
  ConstMatrixView vt;  // [d_v, cols]  V^T
  ConstMatrixView K;   // [key_rows, dQ.cols]  the keys, for dQ
  ConstMatrixView Q;   // [rows, dK.cols]  the query rows, for dK
  ConstMatrixView dO;  // [rows, dV.cols]  their output gradients, for dV
  MatrixView dQ;       // [rows, >= d_k]  added to
  MatrixView dK;       // [key_rows, >= d_k]  added to
  MatrixView dV;       // [key_rows, >= d_v]  added to
};

// Scores, recomputed: S [rows, cols] = Q rows [rows, d_k] K_block^T [d_k,
// cols] (K^T packed times the scale: S is already scaled). kUnroll: the
// GEMM's k steps per pointer advance (kGemmUnroll for a long d).
template <size_t kUnroll>
HWY_INLINE void RecomputeScores(const GradTile& t) {
  const size_t d_k = t.task.head.Q.cols;
  MatMul<false, GemmARows, GemmARows, kUnroll>(t.task.head.Q.Block(t.i0, t.rows, 0, d_k),
                                               Operand(t.kt.data, d_k, t.cols, t.kt.stride),
                                               MatrixView(t.s, t.rows, t.cols, kGradKeys));
}

// WeightedSumVGrad, dP [rows, cols] = dO rows [rows, d_v] V_block^T [d_v,
// cols] (O = P V seen from the weights).
template <size_t kUnroll>
HWY_INLINE void WeightedSumVGradP(const GradTile& t) {
  const size_t d_v = t.task.head.V.cols;
  MatMul<false, GemmARows, GemmARows, kUnroll>(t.task.dO.Block(t.i0, t.rows, 0, d_v),
                                               Operand(t.vt.data, d_v, t.cols, t.vt.stride),
                                               MatrixView(t.dp, t.rows, t.cols, kGradKeys));
}

// The tile's P and dS, row by row: P = exp(S' - lse) (RecomputeWeights),
// then SoftmaxGrad and ScaleSoftcapGrad, dS = P (dP - D_i) (1 - tanh^2)
// scale. visible[r]: the keys query i0 + r sees; D [T_q]: SoftmaxGrad's D.
HWY_INLINE void WeightGrads(const GradTile& t, const size_t* visible, const float* HWY_RESTRICT D) {
  const internal::GradTask& task = t.task;
  const DF d;
  const size_t N = hn::Lanes(d);
  const auto scale = hn::Set(d, task.params.scale);
  for (size_t r = 0; r < t.rows; ++r) {
    const size_t i = t.i0 + r;
    float* HWY_RESTRICT p = t.s + r * kGradKeys;
    float* HWY_RESTRICT ds = t.dp + r * kGradKeys;
    const size_t n = visible[r] > t.j0 ? std::min(t.cols, visible[r] - t.j0) : 0;
    const float lse = task.head.lse(i, 0);
    if (n == 0 || lse == -std::numeric_limits<float>::infinity()) {
      // The row sees no key here: P = dS = 0.
      ZeroRow(p, t.cols);
      ZeroRow(ds, t.cols);
      continue;
    }
    float* HWY_RESTRICT slope = t.slope ? t.slope + r * kGradKeys : nullptr;
    RecomputeWeights(task, i, t.j0, n, t.cols, lse, p, slope);
    const auto D_i = hn::Set(d, D[i]);
    for (size_t j = 0; j < t.cols; j += N) {
      const auto dS = SoftmaxGrad(hn::LoadU(d, p + j), hn::LoadU(d, ds + j), D_i);
      hn::StoreU(ScaleSoftcapGrad(d, dS, slope ? slope + j : nullptr, scale), d, ds + j);
    }
  }
}

// WeightedSumVGrad, dV [key_rows, d_v] += P^T [key_rows, rows] dO rows
// [rows, d_v]: each value row collects the output gradients of the queries
// that weighted it. Returns true if every sum is finite. The three products
// below add to their gradients (kAccumulate), or where a head is one tile
// store them (the same sums: a register tile starts from zero either way).
template <bool kAccumulate = true>
HWY_INLINE bool WeightedSumVGradV(const GradTile& t) {
  return MatMul<kAccumulate, TileTransposedA, TileTransposedA, kGemmShortK>(
      ConstMatrixView(t.s, t.dV.rows, t.rows), Operand(t.dO.data, t.rows, t.dV.cols, t.dO.stride),
      t.dV);
}

// ScoresGrad, dK [key_rows, d_k] += dS^T [key_rows, rows] Q rows [rows, d_k]
// (the scale is in dS).
template <bool kAccumulate = true>
HWY_INLINE bool ScoresGradK(const GradTile& t) {
  return MatMul<kAccumulate, TileTransposedA, TileTransposedA, kGemmShortK>(
      ConstMatrixView(t.dp, t.dK.rows, t.rows), Operand(t.Q.data, t.rows, t.dK.cols, t.Q.stride),
      t.dK);
}

// ScoresGrad, dQ rows [rows, d_k] += dS [rows, key_rows] K [key_rows, d_k].
template <bool kAccumulate = true>
HWY_INLINE bool ScoresGradQ(const GradTile& t) {
  return MatMul<kAccumulate, TileA, TileA, kGemmShortK>(
      ConstMatrixView(t.dp, t.rows, t.K.rows, kGradKeys),
      Operand(t.K.data, t.K.rows, t.dQ.cols, t.K.stride), t.dQ);
}

// Query rows [i0, i0 + rows) against the key block at j0 of the backward:
// adds to the block's dK and dV (the thread's dkb, dvb) and to the rows' dQ,
// as `grads` says. `scratch` is the thread's block of the workspace. The
// operands are the layout's: K^T, V^T and K packed, Q and dO in place or
// padded, dQ in place or its padded accumulator; the GEMMs that add to the
// padded sums run over whole vectors of d (the columns past hold zeros).
// Out of line in WebAssembly: one copy for its five callers, whose code the
// page downloads (a call per tile of up to 64 x 64 scores costs nothing).
ATTNKIT_OUT_OF_LINE_IN_WASM void BackwardTile(const internal::GradTask& task,
                                              float* HWY_RESTRICT scratch, size_t i0, size_t rows,
                                              size_t j0, TileGrads grads) {
  const internal::GradLayout& w = task.layout;
  const internal::HeadTask& h = task.head;
  size_t visible[kGradQueries];
  size_t keys = 0;
  for (size_t r = 0; r < rows; ++r) {
    visible[r] = VisibleKeys(h, task.params, i0 + r);
    keys = std::max(keys, visible[r]);
  }
  if (keys <= j0) return;  // no row of the block sees a key of this block
  const size_t d_k = h.Q.cols, d_v = h.V.cols, cols = TileCols(keys, j0);
  const size_t dk_n = WholeVectors(d_k), dv_n = WholeVectors(d_v);
  const float* ws = task.workspace;
  const GradTile t{task,
                   i0,
                   rows,
                   j0,
                   cols,
                   scratch + w.s,
                   scratch + w.dp,
                   task.params.softcap > 0.0f ? scratch + w.g : nullptr,
                   ConstMatrixView(ws + w.kt + j0 * d_k, d_k, cols, w.kb),
                   ConstMatrixView(ws + w.vt + j0 * d_v, d_v, cols, w.kb),
                   ConstMatrixView(ws + w.kp + j0 * w.dk_p, cols, dk_n, w.dk_p),
                   w.q_in_place ? h.Q.Block(i0, rows, 0, d_k)
                                : ConstMatrixView(ws + w.qp + i0 * w.dk_p, rows, dk_n, w.dk_p),
                   w.do_in_place ? task.dO.Block(i0, rows, 0, d_v)
                                 : ConstMatrixView(ws + w.dop + i0 * w.dv_p, rows, dv_n, w.dv_p),
                   w.q_in_place
                       ? MatrixView(task.dQ.Row(i0), rows, dk_n, task.dQ.stride)
                       : MatrixView(task.workspace + w.dqp + i0 * w.dk_p, rows, dk_n, w.dk_p),
                   MatrixView(scratch + w.dkb, cols, dk_n, w.dk_p),
                   MatrixView(scratch + w.dvb, cols, dv_n, w.dv_p)};
  RecomputeScores<kGemmShortK>(t);
  WeightedSumVGradP<kGemmShortK>(t);
  WeightGrads(t, visible, ws + w.D);
  if (grads != TileGrads::kQueries) {
    WeightedSumVGradV(t);
    ScoresGradK(t);
  }
  if (grads != TileGrads::kKeys) ScoresGradQ(t);
}

// The key block at j0 of the backward for `count` tasks that share K and V
// (the query heads of one K/V group): their tiles with every query block,
// head by head in order, summed into one dK and dV block, then written out
// to the first task's dK and dV rows. Returns whether the rows written are
// finite (checked as they are written).
HWY_INLINE bool BackwardKeyBlock(const internal::GradTask* tasks, size_t count,
                                 float* HWY_RESTRICT scratch, size_t j0, TileGrads grads) {
  const internal::GradTask& task = tasks[0];
  const internal::GradLayout& w = task.layout;
  const size_t T_q = task.head.Q.rows, T_k = task.head.K.rows;
  const size_t d_k = task.head.Q.cols, d_v = task.head.V.cols;
  float* HWY_RESTRICT dkb = scratch + w.dkb;
  float* HWY_RESTRICT dvb = scratch + w.dvb;
  // A tile adds to at most this many rows (TileCols).
  const size_t rows = std::min(w.kb, WholeVectors(T_k - j0));
  ZeroRow(dkb, rows * w.dk_p);
  ZeroRow(dvb, rows * w.dv_p);
  for (size_t h = 0; h < count; ++h) {
    for (size_t i0 = 0; i0 < T_q; i0 += kGradQueries) {
      BackwardTile(tasks[h], scratch, i0, std::min(kGradQueries, T_q - i0), j0, grads);
    }
  }
  bool finite = true;
  for (size_t j = j0; j < std::min(T_k, j0 + kGradKeys); ++j) {
    finite &= CopyRowFinite(dkb + (j - j0) * w.dk_p, d_k, task.dK.Row(j));
    finite &= CopyRowFinite(dvb + (j - j0) * w.dv_p, d_v, task.dV.Row(j));
  }
  return finite;
}

// The query block at i0 of the backward (threads only): its tiles with every
// key block, in the order of the one-thread pass, adding to dQ.
HWY_INLINE void BackwardQueryBlock(const internal::GradTask& task, float* HWY_RESTRICT scratch,
                                   size_t i0) {
  const size_t T_q = task.head.Q.rows, T_k = task.head.K.rows;
  for (size_t j0 = 0; j0 < T_k; j0 += kGradKeys) {
    BackwardTile(task, scratch, i0, std::min(kGradQueries, T_q - i0), j0, TileGrads::kQueries);
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
    for (size_t i = 0; i < T_q; ++i) ZeroRow(task.dQ.Row(i), t.Q.cols);
  } else {
    ZeroRow(ws + w.dqp, T_q * w.dk_p);
  }
  for (size_t i = 0; i < T_q; ++i) ws[w.D + i] = SoftmaxGradD(task.dO.Row(i), t.out.Row(i), d_v);
}

// dQ rows out of the accumulator (unless summed in place); returns whether
// every value of dQ is finite.
HWY_INLINE bool WriteQueryGradients(const internal::GradTask& task) {
  if (task.layout.q_in_place) return AllFinite(task.dQ);
  const float* dq = task.workspace + task.layout.dqp;
  const size_t dk_p = task.layout.dk_p, d_k = task.head.Q.cols;
  bool finite = true;
  for (size_t i = 0; i < task.head.Q.rows; ++i) {
    finite &= CopyRowFinite(dq + i * dk_p, d_k, task.dQ.Row(i));
  }
  return finite;
}

// SmallBackward: the backward of a head that is one tile (T_q <=
// kGradQueries, T_k <= kGradKeys, d_k and d_v <= kSmallMaxDim; see
// UseSmallBackward): BackwardTile's steps with the same sums in the same
// order (bit for bit), without a layout and with nothing packed but K^T
// and V^T [d, tk] (tk: the keys any query sees, in whole vectors): the GEMMs
// read Q, K, dO in place and write dQ, dK, dV where they are, each over
// exactly its rows and columns (no padding to kGradPad). The workspace
// (kSmallGradFloats): kt, vt, then the tiles s (S, then P), dp (dP, then
// dS) and slope [kGradQueries, kGradKeys]. Returns false if a gradient
// overflowed.
inline HWY_NOINLINE bool SmallBackward(const internal::GradTask& task) {
  const internal::HeadTask& h = task.head;
  const size_t T_q = h.Q.rows, T_k = h.K.rows, d_k = h.Q.cols, d_v = h.V.cols;
  // Keys no query sees get no gradient; nothing past them is packed or read.
  // The products below store dQ and the seen keys' dK, dV.
  const size_t keys = VisibleKeys(h, task.params, T_q - 1);
  for (size_t j = keys; j < T_k; ++j) {
    ZeroRow(task.dK.Row(j), d_k);
    ZeroRow(task.dV.Row(j), d_v);
  }
  if (keys == 0) {
    for (size_t i = 0; i < T_q; ++i) ZeroRow(task.dQ.Row(i), d_k);
    return true;
  }
  const size_t tk = WholeVectors(keys);
  float* HWY_RESTRICT kt = task.workspace;
  float* HWY_RESTRICT vt = kt + internal::kSmallMaxDim * kGradKeys;
  float* HWY_RESTRICT s = vt + internal::kSmallMaxDim * kGradKeys;
  float* HWY_RESTRICT dp = s + kGradQueries * kGradKeys;
  PackTransposed(h.K.Block(0, keys, 0, d_k), task.params.scale, tk, kt);
  PackTransposed(h.V.Block(0, keys, 0, d_v), 1.0f, tk, vt);
  size_t visible[kGradQueries];
  float D[kGradQueries];
  for (size_t i = 0; i < T_q; ++i) {
    visible[i] = VisibleKeys(h, task.params, i);
    D[i] = SoftmaxGradD(task.dO.Row(i), h.out.Row(i), d_v);
  }
  const GradTile t{task,
                   0,
                   T_q,
                   0,
                   tk,
                   s,
                   dp,
                   task.params.softcap > 0.0f ? dp + kGradQueries * kGradKeys : nullptr,
                   ConstMatrixView(kt, d_k, tk),
                   ConstMatrixView(vt, d_v, tk),
                   h.K.Block(0, keys, 0, d_k),
                   h.Q,
                   task.dO,
                   task.dQ,
                   task.dK.Block(0, keys, 0, d_k),
                   task.dV.Block(0, keys, 0, d_v)};
  // The scores' and dP's K is d, which may be long: the GEMM's four steps
  // per pointer advance (kGemmUnroll; the same sums).
  RecomputeScores<kGemmUnroll>(t);
  WeightedSumVGradP<kGemmUnroll>(t);
  WeightGrads(t, visible, D);
  bool finite = WeightedSumVGradV</*kAccumulate=*/false>(t);
  finite &= ScoresGradK</*kAccumulate=*/false>(t);
  finite &= ScoresGradQ</*kAccumulate=*/false>(t);
  return finite;
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
  const size_t key_blocks = (T_k + kGradKeys - 1) / kGradKeys;
  const size_t query_blocks = (T_q + kGradQueries - 1) / kGradQueries;
  bool finite = true;
  if (task.pool == nullptr || task.pool->num_threads() == 1) {
    for (size_t b = 0; b < key_blocks; ++b) {
      finite &= BackwardKeyBlock(&task, 1, threads, b * kGradKeys, TileGrads::kAll);
    }
  } else {
    std::atomic<bool> keys_finite{true};
    internal::ParallelFor(task.pool, key_blocks, [&](size_t b, size_t thread) HWY_ATTR {
      if (!BackwardKeyBlock(&task, 1, threads + thread * w.thread_floats, b * kGradKeys,
                            TileGrads::kKeys)) {
        keys_finite.store(false, std::memory_order_relaxed);
      }
    });
    internal::ParallelFor(task.pool, query_blocks, [&](size_t b, size_t thread) HWY_ATTR {
      BackwardQueryBlock(task, threads + thread * w.thread_floats, b * kGradQueries);
    });
    finite = keys_finite.load();
  }
  return WriteQueryGradients(task) && finite;
}

// tasks [count] = the tasks of groups [g0, g0 + count / job.group) of a
// multi-head call, each on its own region of `shared` (layout.threads_at
// floats), in order.
HWY_INLINE void PlaceTasks(const internal::MultiGradTask& job, size_t g0, size_t count,
                           float* shared, internal::GradTask* tasks) {
  for (size_t k = 0; k < count; ++k) {
    tasks[k] = job.tasks[g0 * job.group + k];
    tasks[k].workspace = shared + k * tasks[k].layout.threads_at;
  }
}

// K/V group g of a multi-head call, whole, on one thread (`thread`'s shared
// region and block; `tasks` [job.group] its room for the group's tasks): its
// heads' operands packed, then per key block every query head of the group,
// then dQ written out: the one-thread pass. Returns true if every gradient it
// wrote is finite.
HWY_INLINE bool GroupBackward(const internal::MultiGradTask& job, size_t g, size_t thread,
                              internal::GradTask* tasks) {
  const size_t group = job.group;
  const internal::GradLayout& w = job.tasks[0].layout;
  PlaceTasks(job, g, group, job.shared + thread * group * w.threads_at, tasks);
  float* HWY_RESTRICT scratch = job.threads + thread * w.thread_floats;
  const size_t T_k = tasks[0].head.K.rows;
  for (size_t h = 0; h < group; ++h) PrepareBackward(tasks[h]);
  bool finite = true;
  for (size_t j0 = 0; j0 < T_k; j0 += kGradKeys) {
    finite &= BackwardKeyBlock(tasks, group, scratch, j0, TileGrads::kAll);
  }
  for (size_t h = 0; h < group; ++h) finite &= WriteQueryGradients(tasks[h]);
  return finite;
}

// The backward of few K/V groups (fewer than threads), all in flight: their
// (group, key block) tiles for dK and dV, then (head, query block) for dQ,
// each tile's additions in the one-thread order, so that the results are
// bit-identical. Returns false if a gradient overflowed.
HWY_INLINE bool SplitGroupsBackward(const internal::MultiGradTask& job) {
  const size_t n = job.tasks.size(), group = job.group, groups = n / group;
  std::vector<internal::GradTask> tasks(n);
  PlaceTasks(job, 0, n, job.shared, tasks.data());
  const internal::GradLayout& w = tasks[0].layout;
  const size_t T_q = tasks[0].head.Q.rows, T_k = tasks[0].head.K.rows;
  const size_t key_blocks = (T_k + kGradKeys - 1) / kGradKeys;
  const size_t query_blocks = (T_q + kGradQueries - 1) / kGradQueries;
  internal::ParallelFor(job.pool, n, [&](size_t k, size_t) HWY_ATTR { PrepareBackward(tasks[k]); });
  std::atomic<bool> keys_finite{true};
  internal::ParallelFor(job.pool, groups * key_blocks, [&](size_t k, size_t thread) HWY_ATTR {
    if (!BackwardKeyBlock(&tasks[k / key_blocks * group], group,
                          job.threads + thread * w.thread_floats, k % key_blocks * kGradKeys,
                          TileGrads::kKeys)) {
      keys_finite.store(false, std::memory_order_relaxed);
    }
  });
  internal::ParallelFor(job.pool, n * query_blocks, [&](size_t k, size_t thread) HWY_ATTR {
    BackwardQueryBlock(tasks[k / query_blocks], job.threads + thread * w.thread_floats,
                       k % query_blocks * kGradQueries);
  });
  bool finite = keys_finite.load();
  for (size_t k = 0; k < n; ++k) finite &= WriteQueryGradients(tasks[k]);
  return finite;
}

// The backward of every head of a multi-head call from the forward's O and
// lse: whole K/V groups per thread (job.whole_groups: one thread, or at
// least as many groups as threads), each computed as one thread computes
// it; else SplitGroupsBackward. Returns false if a result overflowed.
HWY_INLINE bool MultiBackward(const internal::MultiGradTask& job) {
  if (job.tasks.empty()) return true;
  if (!job.whole_groups) return SplitGroupsBackward(job);
  // Each thread's room for the tasks of the group it runs.
  const size_t threads = job.pool ? job.pool->num_threads() : 1;
  std::vector<internal::GradTask> placed(threads * job.group);
  std::atomic<bool> finite{true};
  // Neighbouring groups write the same rows' cache lines (SpreadTask).
  const size_t groups = job.tasks.size() / job.group;
  const bool spread = threads > 1 && job.pool != nullptr;
  internal::ParallelFor(job.pool, groups, [&](size_t k, size_t thread) HWY_ATTR {
    const size_t g = internal::SpreadTask(k, groups, spread);
    if (!GroupBackward(job, g, thread, &placed[thread * job.group])) {
      finite.store(false, std::memory_order_relaxed);
    }
  });
  return finite.load();
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_BACKWARD_INL_H_
