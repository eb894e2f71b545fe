// attnkit: fused attention for one head (per target; toggled include guard).
//
// Computes out = softmax(mask(softcap(Q K^T * scale))) V without ever holding
// the [T_q, T_k] score matrix: blocks of kRows queries meet tiles of
// kTileKeys keys, and each query row keeps a running max m, a running sum l and
// an accumulator o that is rescaled by exp(m_old - m_new) whenever the max
// grows (online softmax: Milakov & Gimelshein 2018, "Online normalizer
// calculation for softmax"; tiling as in Dao et al. 2022, FlashAttention).
// Per tile, the steps of steps-inl.h:
//   ScoresTile    S [kRows, kTileKeys] = Q_block K_tile^T, a register-blocked
//                 GEMM on K^T packed with the scale folded in
//   ScaleSoftcap  S = softcap(S) (the scale is already in K^T)
//   VisibleKeys, ApplyMasks   masked keys -> -inf
//   SoftmaxUnnormalised  P = exp(S - m_new), l = l * alpha + rowsum(P)
//                 (exp as 2^((S - m_new) log2(e)), see ExpViaExp2)
//   WeightedSumVTile  O = O * alpha + P V_tile, a GEMM on V packed
// Key tiles past the last visible key of the block (causal, key padding) are
// skipped. A row that sees no key ends with l == 0 and stays all zeros. The
// training forward (HeadTask::lse) is this kernel too, keeping m + log l
// from the scores and exp that the backward recomputes.
// Memory: K^T and V packed in panels (see PackKeysAndValues), [d_k + d_v,
// T_k] rounded up, a task's queries packed [kTaskQueries, d_k] and one
// [kRows, kTileKeys] tile, i.e. O((T_q + T_k) d).
// Heads of at most 32 queries and keys (plan.h, UseSmallKernel) take
// SmallHead, at the end of this file: one tile's steps for all rows at once,
// the same sums without the blocks, packing and bookkeeping.

#if defined(ATTNKIT_FLASH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNKIT_FLASH_INL_H_
#undef ATTNKIT_FLASH_INL_H_
#else
#define ATTNKIT_FLASH_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "hwy/highway.h"
#include "src/core/internal.h"
#include "src/core/ops-inl.h"
#include "src/core/plan.h"
#include "src/core/steps-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

constexpr size_t kTileKeys = internal::kFlashTileKeys;

// Query rows per block: the rows of a GEMM register tile (see kGemmRows).
constexpr size_t kBlockRows = kGemmRows;

// K^T and V are packed in panels of GemmPanelWidth() columns (two vectors, the
// width of a GEMM register tile; see PackKeysAndValues).
static_assert(internal::kMaxPanel % (2 * HWY_LANES(float)) == 0 &&
                  kTileKeys % (2 * HWY_LANES(float)) == 0,
              "panels must divide kMaxPanel and the key tile");

// Keys [0, keys) of one head, packed for the kernel's GEMMs. Key tile b
// (keys [b * kTileKeys, (b + 1) * kTileKeys)) is stored in panels of W =
// GemmPanelWidth() columns, so that a GEMM register tile reads one contiguous
// [rows, W] panel from top to bottom:
//   kt: tile b at kt + b * kTileKeys * d_k holds kTileKeys / W panels
//       [d_k, W] of K^T times `scale` (folding the scale into K saves a pass
//       over the scores);
//   vt: tile b at vt + b * kTileKeys * d_v' holds d_v' / W panels
//       [kTileKeys, W] of V, where d_v' = d_v rounded up to W (the last
//       panel's extra columns are never read).
// Only what the GEMMs read is written: K^T columns up to keys rounded up to
// whole vectors (ScoresTile reads a tile's visible keys rounded up to whole
// vectors; the extra columns are zeros) and V rows [0, keys) (WeightedSumVTile
// reads exactly the tile's visible keys, P being zero past each row's).
// Short sequences then pack a few vectors of keys, not a whole 128-key tile,
// and the scratch is never cleared. K^T is packed as the backward packs it
// (PackTransposed), so that both compute the same scores.
// Read in place, a register tile would take W columns of rows far apart (a
// fraction of a cache line per row); the tiles of K^T and V together exceed
// L1, and the prefetchers follow one contiguous stream per panel.
HWY_INLINE void PackKeysAndValues(ConstMatrixView K, ConstMatrixView V, size_t keys, float scale,
                                  float* HWY_RESTRICT kt, float* HWY_RESTRICT vt) {
  const size_t d_v = V.cols;
  const size_t W = GemmPanelWidth();
  const size_t v_panels = (d_v + W - 1) / W;
  // K^T: key j is column j % W of panel j / W.
  PackTransposed(K.Block(0, keys, 0, K.cols), scale, W, kt);
  // V: row j % kTileKeys of every panel of its tile.
  for (size_t j = 0; j < keys; ++j) {
    const size_t j0 = j / kTileKeys * kTileKeys;
    const float* HWY_RESTRICT value = V.Row(j);
    for (size_t p = 0; p < v_panels; ++p) {
      float* HWY_RESTRICT v_row = vt + (j0 * v_panels + p * kTileKeys + (j - j0)) * W;
      CopyRow(value + p * W, std::min(W, d_v - p * W), v_row);
    }
  }
}

// Where one thread's packed keys are, and which keys they hold.
struct PackedKeys {
  const float* k_from = nullptr;
  const float* v_from = nullptr;
  size_t keys = 0;
  const float* kt = nullptr;
  const float* vt = nullptr;

  // K^T [d_k, kTileKeys] of the key tile at j0, times the scale.
  PanelView KeyTile(size_t j0, size_t d_k) const {
    const size_t W = GemmPanelWidth();
    return {kt + j0 * d_k, W, W, d_k * W};
  }
  // V [kTileKeys, d_v] of the key tile at j0.
  PanelView ValueTile(size_t j0, ConstMatrixView V) const {
    const size_t W = GemmPanelWidth();
    return {vt + j0 * internal::RoundUp(V.cols, W), W, W, kTileKeys * W};
  }
};

// How the kernel's GEMMs read A (see GemmA): S = Q K^T reads the block's
// queries packed k-major, Q^T [d_k, kRows] (see PackQueries); O += P V reads
// the weights P [kRows, kTileKeys], rows kTileKeys floats apart. Known at
// compile time, each layout takes one pointer for all rows (one index in
// wasm instead of one per row).
template <size_t kRows>
using QueriesA = GemmA<1, kRows>;
using WeightsA = GemmA<kTileKeys, 1>;

// C [kRows, C.cols] = A [kRows, k] B (Q^T packed, see QueriesA), or += with
// kAccumulate (A = P, see WeightsA), with B [k, C.cols] in panels.
template <size_t kRows, bool kAccumulate>
HWY_INLINE void GemmPanels(ConstMatrixView A, const PanelView& B, MatrixView C) {
  GemmRows<kRows, kAccumulate, QueriesA<kRows>, WeightsA>(A, B, C, 0);
}

// ScoresTile: S [kRows, cols] = Q_block K_tile^T, the block's queries
// packed qt [d_k, kRows] against key tile j0 packed (times the scale).
template <size_t kRows>
HWY_INLINE void ScoresTile(const float* HWY_RESTRICT qt, size_t d_k, const PackedKeys& packed,
                           size_t j0, MatrixView S) {
  GemmPanels<kRows, false>(ConstMatrixView(qt, kRows, d_k), packed.KeyTile(j0, d_k), S);
}

// WeightedSumVTile: O [kRows, d_v] += P [kRows, n] V rows [j0, j0 + n), V
// packed, P rows kTileKeys floats apart.
template <size_t kRows>
HWY_INLINE void WeightedSumVTile(const float* HWY_RESTRICT p, size_t n, const PackedKeys& packed,
                                 size_t j0, ConstMatrixView V, MatrixView O) {
  GemmPanels<kRows, true>(ConstMatrixView(p, kRows, n, kTileKeys), packed.ValueTile(j0, V), O);
}

// qt [d_k, kRows] = Q rows [i0, i0 + kRows) transposed (k-major, QueriesA),
// in 4 x 4 blocks where kRows allows (TransposeScaled).
template <size_t kRows>
HWY_INLINE void PackQueries(ConstMatrixView Q, size_t i0, float* HWY_RESTRICT qt) {
  TransposeScaled(Q.Block(i0, kRows, 0, Q.cols), 1.0f, kRows, qt);
}

// alpha [kRows] = exp(m_old - m_new), the factors that rescale the rows'
// running sums and outputs when their max grows: 0 on a row's first visible
// tile (m_old = -inf), and flushed like the weights, so that the accumulator
// never holds subnormals. One vector exp for all rows, rather than a chain
// of dependent FMAs per row and tile.
template <size_t kRows>
HWY_INLINE void Alphas(const float* HWY_RESTRICT m_old, const float* HWY_RESTRICT m_new,
                       float* HWY_RESTRICT alpha) {
  constexpr size_t kLanes = kRows >= 8 ? 8 : kRows >= 4 ? 4 : kRows >= 2 ? 2 : 1;
  const hn::CappedTag<float, kLanes> d;
  const size_t N = hn::Lanes(d);
  size_t r = 0;
  for (; r + N <= kRows; r += N) {
    hn::StoreU(ExpViaExp2(d, hn::Sub(hn::LoadU(d, m_old + r), hn::LoadU(d, m_new + r))), d,
               alpha + r);
  }
  const DF1 d1;
  for (; r < kRows; ++r) {
    hn::StoreU(ExpViaExp2(d1, hn::Sub(hn::LoadU(d1, m_old + r), hn::LoadU(d1, m_new + r))), d1,
               alpha + r);
  }
}

// The online-softmax state of query rows [i0, i0 + kRows) of one head: per
// row the visible key count, running max m and running sum l; the running
// output accumulates in out rows [i0, i0 + kRows) [kRows, d_v]. qt holds
// the rows' queries packed, [d_k, kRows].
template <size_t kRows>
struct FlashBlock {
  size_t i0;
  size_t keys;  // the most keys any row of the block sees
  size_t visible[kRows];
  float m[kRows], l[kRows];
  const float* qt;

  // Sets the state for rows [i0, i0 + kRows), zeroes their output and packs
  // their queries into room [d_k, kRows].
  HWY_INLINE void Init(const internal::HeadTask& t, const internal::ScoreParams& p, size_t first,
                       float* HWY_RESTRICT room) {
    i0 = first;
    keys = 0;
    PackQueries<kRows>(t.Q, i0, room);
    qt = room;
    for (size_t r = 0; r < kRows; ++r) {
      visible[r] = VisibleKeys(t, p, i0 + r);
      keys = std::max(keys, visible[r]);
      m[r] = -std::numeric_limits<float>::infinity();
      l[r] = 0.0f;
      ZeroRow(t.out.Row(i0 + r), t.V.cols);
    }
  }

  // Folds in the key tile [j0, j0 + kTileKeys) (j0 < keys) of the packed keys
  // (see PackKeysAndValues); `s` is scratch [kRows, kTileKeys]. Returns
  // false if a visible score overflowed.
  HWY_INLINE bool Step(const internal::HeadTask& t, const internal::ScoreParams& p,
                       const PackedKeys& packed, size_t j0, float* HWY_RESTRICT s) {
    const float kNegInf = -std::numeric_limits<float>::infinity();
    const size_t d_k = t.Q.cols, d_v = t.V.cols;
    const MatrixView S(s, kRows, kTileKeys);
    const MatrixView O = t.out.Block(i0, kRows, 0, d_v);
    // S = Q_block K_tile^T over the tile's keys that some row of the block
    // sees, rounded up to whole vectors (K^T is zero-padded to a panel): the
    // last tile of a causal block or of a short sequence is often partial.
    const size_t tile_keys = std::min(kTileKeys, keys - j0);
    const size_t N = hn::Lanes(DF());
    const size_t cols = std::min(kTileKeys, (tile_keys + N - 1) / N * N);
    ScoresTile<kRows>(qt, d_k, packed, j0, S.Block(0, kRows, 0, cols));
    // Per row: the keys it sees in this tile (n) and their max score.
    const bool masks = !t.bool_mask.empty() || !t.additive_mask.empty();
    size_t n[kRows];
    float m_new[kRows];
    for (size_t r = 0; r < kRows; ++r) {
      float* HWY_RESTRICT row = S.Row(r);
      n[r] = visible[r] > j0 ? std::min(tile_keys, visible[r] - j0) : 0;
      // The scale is already in K^T; softcap after it.
      if (p.softcap > 0.0f) ScaleSoftcap(row, n[r], 1.0f, p.softcap);
      float tile_max;
      // An overflowed score (NaN, +-inf) is an error, never a mask.
      if (!RowMax</*kAllowNegInf=*/false>(row, n[r], &tile_max)) return false;
      ApplyMasks(t, i0 + r, j0, row, n[r]);
      if (masks && !RowMax(row, n[r], &tile_max)) return false;  // +inf from the additive mask
      if (tile_max == kNegInf) n[r] = 0;  // nothing visible in this tile: P row = 0
      m_new[r] = std::max(m[r], tile_max);
    }
    float alpha[kRows];
    Alphas<kRows>(m, m_new, alpha);
    for (size_t r = 0; r < kRows; ++r) {
      float* HWY_RESTRICT row = S.Row(r);
      if (n[r] == 0) {
        ZeroRow(row, tile_keys);
        continue;
      }
      const float sum = SoftmaxUnnormalised</*kViaExp2=*/true>(row, n[r], m_new[r]);
      ZeroRow(row + n[r], tile_keys - n[r]);
      l[r] = l[r] * alpha[r] + sum;
      // Until a row's first visible key its output is still Init's zeros:
      // nothing to rescale.
      if (alpha[r] != 1.0f && m[r] != kNegInf) ScaleRow(O.Row(r), d_v, alpha[r], 0.0f);
      m[r] = m_new[r];
    }
    // O += P V_tile: P [kRows, tile_keys], V rows [j0, j0 + tile_keys).
    WeightedSumVTile<kRows>(s, tile_keys, packed, j0, t.V, O);
    return true;
  }

  // out rows /= l (rows that saw no key stay zero); for the training forward
  // lse rows = m + log l, the log-sum-exp the backward recomputes P from
  // (-inf for rows that saw no key). Returns false if an output overflowed
  // (the zero rows cannot).
  HWY_INLINE bool Finish(const internal::HeadTask& t) {
    bool finite = true;
    for (size_t r = 0; r < kRows; ++r) {
      if (l[r] > 0.0f) finite &= ScaleRowFinite(t.out.Row(i0 + r), t.V.cols, 1.0f / l[r]);
    }
    if (t.lse.empty()) return finite;
    for (size_t r = 0; r < kRows; ++r) {
      t.lse(i0 + r, 0) =
          l[r] > 0.0f ? m[r] + std::log(l[r]) : -std::numeric_limits<float>::infinity();
    }
    return finite;
  }
};

// Query rows [i0, i0 + kRows) of one head, tile after tile; qt is room for
// their queries packed [d_k, kRows]. Returns false if a visible score or an
// output overflowed.
template <size_t kRows>
HWY_INLINE bool FlashRows(const internal::HeadTask& t, const internal::ScoreParams& p,
                          const PackedKeys& packed, size_t i0, float* HWY_RESTRICT qt) {
  HWY_ALIGN float s[kRows * kTileKeys];
  FlashBlock<kRows> block;
  block.Init(t, p, i0, qt);
  for (size_t j0 = 0; j0 < block.keys; j0 += kTileKeys) {
    if (!block.Step(t, p, packed, j0, s)) return false;
  }
  return block.Finish(t);
}

// Up to kMaxBlocks full blocks of kBlockRows queries, starting at row i0,
// with the key tiles in the outer loop: each K^T and V tile is read from
// memory once for all the blocks, not once per block (long sequences do not
// fit in cache); qt is room for their queries packed, [num_blocks, d_k,
// kBlockRows]. Returns false if a visible score or an output overflowed.
constexpr size_t kMaxBlocks = internal::kTaskQueries / kBlockRows;
HWY_INLINE bool FlashBlocks(const internal::HeadTask& t, const internal::ScoreParams& p,
                            const PackedKeys& packed, size_t i0, size_t num_blocks,
                            float* HWY_RESTRICT qt) {
  HWY_ALIGN float s[kBlockRows * kTileKeys];
  FlashBlock<kBlockRows> blocks[kMaxBlocks];
  size_t keys = 0;
  for (size_t b = 0; b < num_blocks; ++b) {
    blocks[b].Init(t, p, i0 + b * kBlockRows, qt + b * kBlockRows * t.Q.cols);
    keys = std::max(keys, blocks[b].keys);
  }
  for (size_t j0 = 0; j0 < keys; j0 += kTileKeys) {
    for (size_t b = 0; b < num_blocks; ++b) {
      if (j0 < blocks[b].keys && !blocks[b].Step(t, p, packed, j0, s)) return false;
    }
  }
  bool finite = true;
  for (size_t b = 0; b < num_blocks; ++b) finite &= blocks[b].Finish(t);
  return finite;
}

// Query rows [r0, r1) of one head, fused. `scratch` is the thread's room
// (sized by PlanAttention) for the packed keys, K^T then V, and after them
// (at internal::PackedKeysFloats) for a task's queries packed. The packed keys
// are reused across calls while they hold enough keys of the same K and V
// (query heads of one K/V group, and the query blocks of one head, share
// them).
// Returns false if a visible score or an output overflowed.
HWY_INLINE bool FlashHead(const internal::HeadTask& t, const internal::ScoreParams& p, size_t r0,
                          size_t r1, float* HWY_RESTRICT scratch, PackedKeys* packed) {
  // The keys the head's queries can see (the last query sees the most); keys
  // no query can see are never packed. Packing for the whole head, not just
  // [r0, r1), lets the next range of the head reuse the packed keys.
  const size_t keys = VisibleKeys(t, p, t.Q.rows - 1);
  if (packed->k_from != t.K.data || packed->v_from != t.V.data || packed->keys < keys) {
    float* kt = scratch;
    float* vt = scratch + t.K.cols * internal::RoundUp(t.K.rows, kTileKeys);
    PackKeysAndValues(t.K, t.V, keys, p.scale, kt, vt);
    *packed = {t.K.data, t.V.data, keys, kt, vt};
  }
  const PackedKeys& kv = *packed;
  float* HWY_RESTRICT qt = scratch + internal::PackedKeysFloats(t.K.rows, t.K.cols, t.V.cols);
  size_t i = r0;
  while (i + kBlockRows <= r1) {
    const size_t blocks = std::min(kMaxBlocks, (r1 - i) / kBlockRows);
    if (!FlashBlocks(t, p, kv, i, blocks, qt)) return false;
    i += blocks * kBlockRows;
  }
  if (kBlockRows > 4 && i + 4 <= r1) {
    if (!FlashRows<4>(t, p, kv, i, qt)) return false;
    i += 4;
  }
  switch (r1 - i) {
    case 3:
      return FlashRows<3>(t, p, kv, i, qt);
    case 2:
      return FlashRows<2>(t, p, kv, i, qt);
    case 1:
      return FlashRows<1>(t, p, kv, i, qt);
    default:
      return true;
  }
}

// The small-shape kernel (SmallHead below) keeps every row of scores in
// whole vectors, [keys] with room for WholeVectors(keys), and takes the fused
// kernel's row steps on whole vectors (kWholeVectors): the same sums.

// SmallHead: a whole head small enough for the small-shape kernel (Q
// [T_q <= kSmallMaxQueries, d_k], K [T_k <= kSmallMaxKeys, d_k], V [T_k,
// d_v], d_k and d_v <= kSmallMaxDim; see plan.h) as FlashRows computes one
// key tile, with the same sums in the same order (bit for bit), for all rows
// at once and nothing packed but K^T:
//   kt [d_k, tk] = K^T * scale, the keys any query sees (tk: whole vectors)
//   ScoresTile     S [T_q, tk] = Q kt, one GEMM reading Q in place
//   per row        softcap, VisibleKeys and ApplyMasks, P = exp(S - max),
//                  l = rowsum(P) (RowMax, SoftmaxUnnormalised)
//   WeightedSumVTile   O [T_q, d_v] = P V, one GEMM reading V in place; O /= l
// and with t.lse, lse = max + log l per row (-inf for a row that sees no
// key). kt and s are scratch, [kSmallMaxDim * kSmallMaxKeys] and
// [kSmallMaxQueries * kSmallMaxKeys]. Returns false if a visible score or an
// output overflowed.
HWY_INLINE bool SmallHead(const internal::HeadTask& t, const internal::ScoreParams& p,
                          float* HWY_RESTRICT kt, float* HWY_RESTRICT s) {
  const float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t T_q = t.Q.rows, d_k = t.Q.cols, d_v = t.V.cols;
  // The last query sees the most keys; none past them is packed or read.
  const size_t keys = VisibleKeys(t, p, T_q - 1);
  const bool keep_lse = !t.lse.empty();
  if (keys == 0) {
    for (size_t i = 0; i < T_q; ++i) {
      ZeroRow(t.out.Row(i), d_v);
      if (keep_lse) t.lse(i, 0) = kNegInf;
    }
    return true;
  }
  const size_t tk = WholeVectors(keys);
  PackTransposed(t.K.Block(0, keys, 0, d_k), p.scale, tk, kt);
  const MatrixView S(s, T_q, tk, internal::kSmallMaxKeys);
  // Scores of keys no query sees may overflow: only the visible ones are
  // checked (RowMax), as the fused kernel checks them.
  (void)MatMul(t.Q, PanelView::Whole(ConstMatrixView(kt, d_k, tk)), S);
  const bool masks = !t.bool_mask.empty() || !t.additive_mask.empty();
  float m[internal::kSmallMaxQueries], l[internal::kSmallMaxQueries];
  for (size_t i = 0; i < T_q; ++i) {
    float* HWY_RESTRICT row = S.Row(i);
    size_t n = VisibleKeys(t, p, i);
    // The scale is already in K^T; softcap after it.
    if (p.softcap > 0.0f) ScaleSoftcap(row, n, 1.0f, p.softcap);
    if (!RowMax</*kAllowNegInf=*/false, /*kWholeVectors=*/true>(row, n, &m[i])) return false;
    if (masks) {
      ApplyMasks(t, i, 0, row, n);
      if (!RowMax(row, n, &m[i])) return false;  // +inf from the additive mask
    }
    if (m[i] == kNegInf) n = 0;  // nothing visible: P row = 0
    l[i] = SoftmaxUnnormalised</*kViaExp2=*/true, /*kWholeVectors=*/true>(row, n, m[i]);
    const size_t written = WholeVectors(n);  // zeros past n
    if (written < tk) ZeroRow(row + written, tk - written);
  }
  const bool finite = MatMul(ConstMatrixView(s, T_q, keys, internal::kSmallMaxKeys),
                             PanelView::Whole(t.V.Block(0, keys, 0, d_v)), t.out);
  for (size_t i = 0; i < T_q; ++i) {
    if (l[i] > 0.0f) ScaleRow</*kShortRows=*/true>(t.out.Row(i), d_v, 1.0f / l[i], 0.0f);
    if (keep_lse) t.lse(i, 0) = l[i] > 0.0f ? m[i] + std::log(l[i]) : kNegInf;
  }
  return finite;
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_FLASH_INL_H_
