// attnkit: fused attention for one head (per target; toggled include guard).
//
// Computes out = softmax(mask(softcap(Q K^T * scale))) V without ever holding
// the [T_q, T_k] score matrix: blocks of kRows queries meet tiles of
// kTileKeys keys, and each query row keeps a running max m, a running sum l and
// an accumulator o that is rescaled by exp(m_old - m_new) whenever the max
// grows (online softmax: Milakov & Gimelshein 2018, "Online normalizer
// calculation for softmax"; tiling as in Dao et al. 2022, FlashAttention).
// Per tile:
//   S [kRows, kTileKeys] = Q_block K_tile^T   register-blocked GEMM on K^T
//   S = softcap(S * scale); masked keys -> -inf
//   P = exp(S - m_new), l = l * alpha + rowsum(P), o = o * alpha + P V_tile
// Key tiles past the last visible key of the block (causal, key padding) are
// skipped. A row that sees no key ends with l == 0 and stays all zeros.
// Memory: K^T [d_k, T_k rounded up to kTileKeys] (stored tile by tile) plus
// one [kRows, kTileKeys] tile, i.e. O((T_q + T_k) d).

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

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

constexpr size_t kTileKeys = internal::kFlashTileKeys;

// The number of keys query i sees before the per-cell masks:
// min(key_length, i + (T_k - T_q) + 1 if causal), clamped to [0, T_k].
HWY_INLINE size_t VisibleKeys(const internal::HeadTask& t, const internal::ScoreParams& p,
                              size_t i) {
  const size_t T_q = t.Q.rows, T_k = t.K.rows;
  size_t limit = std::min(t.key_length, T_k);
  if (p.causal) {
    const size_t seen = (i + 1 + T_k > T_q) ? i + 1 + T_k - T_q : 0;
    limit = std::min(limit, seen);
  }
  return limit;
}

// Applies the per-cell masks to row [n], the scores of query i against keys
// [j0, j0 + n): -inf where bool_mask forbids, + additive_mask elsewhere.
HWY_INLINE void ApplyMasks(const internal::ScoreParams& p, size_t i, size_t j0,
                           float* HWY_RESTRICT row, size_t n) {
  if (!p.bool_mask.empty()) {
    const uint8_t* allow = p.bool_mask.Row(i) + j0;
    for (size_t j = 0; j < n; ++j) {
      if (!allow[j]) row[j] = -std::numeric_limits<float>::infinity();
    }
  }
  if (!p.additive_mask.empty()) {
    const float* add = p.additive_mask.Row(i) + j0;
    for (size_t j = 0; j < n; ++j) row[j] += add[j];
  }
}

// Query rows per block: with 32 vector registers (AVX-512) 8 rows x 2 vectors
// of accumulators fit; with 16 (SSE4, AVX2, WASM) 4 x 2 do.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr size_t kBlockRows = 8;
#else
constexpr size_t kBlockRows = 4;
#endif

// k steps per pointer advance in the kernel's GEMMs (see GemmTile). In wasm,
// 4 made V8 spill accumulators to the stack (LLVM keeps the B rows of all
// four steps live; seen with node --print-wasm-code): 2 made the fused kernel
// ~15% faster there, though the projections' longer GEMMs prefer 4.
#if HWY_TARGET == HWY_WASM
constexpr size_t kFlashUnroll = 2;
#else
constexpr size_t kFlashUnroll = 4;
#endif

// kt = K rows [0, keys) transposed, times `scale`, tile-major: key tile b
// (keys [b * kTileKeys, (b + 1) * kTileKeys)) is the contiguous block
// kt + b * d_k * kTileKeys of [d_k, kTileKeys]; keys >= `keys` are 0, up to
// `padded` (a multiple of kTileKeys). Contiguous tiles: with one [d_k, padded]
// matrix the k rows of a tile sat padded * 4 bytes apart (8 KiB at T = 2048),
// all in the same few L1 sets. Folding the scale into K saves a pass over the
// scores.
HWY_INLINE void PackKeysTransposed(ConstMatrixView K, size_t keys, size_t padded, float scale,
                                   float* HWY_RESTRICT kt) {
  const size_t d_k = K.cols;
  for (size_t j0 = 0; j0 < padded; j0 += kTileKeys) {
    float* HWY_RESTRICT tile = kt + j0 * d_k;
    const size_t n = j0 < keys ? std::min(kTileKeys, keys - j0) : 0;
    for (size_t jj = 0; jj < n; ++jj) {
      const float* HWY_RESTRICT key = K.Row(j0 + jj);
      for (size_t c = 0; c < d_k; ++c) tile[c * kTileKeys + jj] = key[c] * scale;
    }
    for (size_t c = 0; c < d_k; ++c) ZeroRow(tile + c * kTileKeys + n, kTileKeys - n);
  }
}

// alpha [kRows] = exp(m_old - m_new), the factors that rescale the rows'
// running sums and outputs when their max grows: 0 on a row's first visible
// tile (m_old = -inf), and flushed like the weights, so that the accumulator
// never holds subnormals. One vector exp for all rows: computed one row at a
// time, each was a chain of dependent FMAs per row and tile.
template <size_t kRows>
HWY_INLINE void Alphas(const float* HWY_RESTRICT m_old, const float* HWY_RESTRICT m_new,
                       float* HWY_RESTRICT alpha) {
  constexpr size_t kLanes = kRows >= 8 ? 8 : kRows >= 4 ? 4 : kRows >= 2 ? 2 : 1;
  const hn::CappedTag<float, kLanes> d;
  const size_t N = hn::Lanes(d);
  size_t r = 0;
  for (; r + N <= kRows; r += N) {
    hn::StoreU(ExpFlushed(d, hn::Sub(hn::LoadU(d, m_old + r), hn::LoadU(d, m_new + r))), d, alpha + r);
  }
  const DF1 d1;
  for (; r < kRows; ++r) {
    hn::StoreU(ExpFlushed(d1, hn::Sub(hn::LoadU(d1, m_old + r), hn::LoadU(d1, m_new + r))), d1, alpha + r);
  }
}

// The online-softmax state of query rows [i0, i0 + kRows) of one head: per
// row the visible key count, running max m and running sum l; the running
// output accumulates in out rows [i0, i0 + kRows) [kRows, d_v].
template <size_t kRows>
struct FlashBlock {
  size_t i0;
  size_t keys;  // the most keys any row of the block sees
  size_t visible[kRows];
  float m[kRows], l[kRows];

  // Sets the state for rows [i0, i0 + kRows) and zeroes their output.
  HWY_INLINE void Init(const internal::HeadTask& t, const internal::ScoreParams& p, size_t first) {
    i0 = first;
    keys = 0;
    for (size_t r = 0; r < kRows; ++r) {
      visible[r] = VisibleKeys(t, p, i0 + r);
      keys = std::max(keys, visible[r]);
      m[r] = -std::numeric_limits<float>::infinity();
      l[r] = 0.0f;
      ZeroRow(t.out.Row(i0 + r), t.V.cols);
    }
  }

  // Folds in the key tile [j0, j0 + kTileKeys) (j0 < keys) of the packed keys
  // kt (see PackKeysTransposed); `s` is scratch [kRows, kTileKeys]. Returns
  // false if a visible score overflowed.
  HWY_INLINE bool Step(const internal::HeadTask& t, const internal::ScoreParams& p,
                       const float* HWY_RESTRICT kt, size_t j0, float* HWY_RESTRICT s) {
    const float kNegInf = -std::numeric_limits<float>::infinity();
    const size_t d_k = t.Q.cols, d_v = t.V.cols;
    const MatrixView S(s, kRows, kTileKeys);
    const MatrixView O = t.out.Block(i0, kRows, 0, d_v);
    // S = Q_block K_tile^T over the tile's keys that some row of the block
    // sees, rounded up to whole vectors (the packed tile is zero-padded): the
    // last tile of a causal block or of a short sequence is often partial.
    const size_t tile_keys = std::min(kTileKeys, keys - j0);
    const size_t N = hn::Lanes(DF());
    const size_t cols = std::min(kTileKeys, (tile_keys + N - 1) / N * N);
    GemmRows<kRows, false, kFlashUnroll>(t.Q.Block(i0, kRows, 0, d_k),
                                         ConstMatrixView(kt + j0 * d_k, d_k, cols, kTileKeys),
                                         S.Block(0, kRows, 0, cols), 0);
    // Per row: the keys it sees in this tile (n) and their max score.
    const bool masks = !p.bool_mask.empty() || !p.additive_mask.empty();
    size_t n[kRows];
    float m_new[kRows];
    for (size_t r = 0; r < kRows; ++r) {
      float* HWY_RESTRICT row = S.Row(r);
      n[r] = visible[r] > j0 ? std::min(tile_keys, visible[r] - j0) : 0;
      // The scale is already in K^T; softcap after it.
      if (p.softcap > 0.0f) ScaleRow(row, n[r], 1.0f, p.softcap);
      float tile_max;
      // An overflowed score (NaN, +-inf) is an error, never a mask.
      if (!RowMax</*kAllowNegInf=*/false>(row, n[r], &tile_max)) return false;
      ApplyMasks(p, i0 + r, j0, row, n[r]);
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
      const float sum = ExpSubtractSum(row, n[r], m_new[r]);
      ZeroRow(row + n[r], tile_keys - n[r]);
      l[r] = l[r] * alpha[r] + sum;
      m[r] = m_new[r];
      if (alpha[r] != 1.0f) ScaleRow(O.Row(r), d_v, alpha[r], 0.0f);
    }
    // O += P V_tile: P [kRows, tile_keys], V rows [j0, j0 + tile_keys).
    MatMul<true, kFlashUnroll>(ConstMatrixView(s, kRows, tile_keys, kTileKeys),
                 t.V.Block(j0, tile_keys, 0, d_v), O);
    return true;
  }

  // out rows /= l (rows that saw no key stay zero).
  HWY_INLINE void Finish(const internal::HeadTask& t) {
    for (size_t r = 0; r < kRows; ++r) {
      if (l[r] > 0.0f) ScaleRow(t.out.Row(i0 + r), t.V.cols, 1.0f / l[r], 0.0f);
    }
  }
};

// Query rows [i0, i0 + kRows) of one head, tile after tile. Returns false if
// a visible score overflowed.
template <size_t kRows>
HWY_INLINE bool FlashRows(const internal::HeadTask& t, const internal::ScoreParams& p,
                          const float* HWY_RESTRICT kt, size_t i0) {
  HWY_ALIGN float s[kRows * kTileKeys];
  FlashBlock<kRows> block;
  block.Init(t, p, i0);
  for (size_t j0 = 0; j0 < block.keys; j0 += kTileKeys) {
    if (!block.Step(t, p, kt, j0, s)) return false;
  }
  block.Finish(t);
  return true;
}

// Up to kMaxBlocks full blocks of kBlockRows queries, starting at row i0,
// with the key tiles in the outer loop: each K^T and V tile is read from
// memory once for all the blocks, not once per block (long sequences do not
// fit in cache). Returns false if a visible score overflowed.
constexpr size_t kMaxBlocks = internal::kTaskQueries / kBlockRows;
HWY_INLINE bool FlashBlocks(const internal::HeadTask& t, const internal::ScoreParams& p,
                            const float* HWY_RESTRICT kt, size_t i0, size_t num_blocks) {
  HWY_ALIGN float s[kBlockRows * kTileKeys];
  FlashBlock<kBlockRows> blocks[kMaxBlocks];
  size_t keys = 0;
  for (size_t b = 0; b < num_blocks; ++b) {
    blocks[b].Init(t, p, i0 + b * kBlockRows);
    keys = std::max(keys, blocks[b].keys);
  }
  for (size_t j0 = 0; j0 < keys; j0 += kTileKeys) {
    for (size_t b = 0; b < num_blocks; ++b) {
      if (j0 < blocks[b].keys && !blocks[b].Step(t, p, kt, j0, s)) return false;
    }
  }
  for (size_t b = 0; b < num_blocks; ++b) blocks[b].Finish(t);
  return true;
}

// Keys packed into one thread's K^T scratch: which K and how many keys.
struct PackedKeys {
  const float* from = nullptr;
  size_t keys = 0;
};

// Query rows [r0, r1) of one head, fused. `kt` is the thread's scratch for
// the packed keys ([d_k, T_k rounded up to kTileKeys]), reused across calls
// while it holds enough keys of the same K (query heads of one K/V group, and
// the query blocks of one head, share it). Returns false if scores
// overflowed.
HWY_INLINE bool FlashHead(const internal::HeadTask& t, const internal::ScoreParams& p, size_t r0,
                          size_t r1, float* HWY_RESTRICT kt, PackedKeys* packed) {
  // The keys the head's queries can see (the last query sees the most); keys
  // no query can see are never packed. Packing for the whole head, not just
  // [r0, r1), lets the next range of the head reuse the packed keys.
  const size_t keys = VisibleKeys(t, p, t.Q.rows - 1);
  if (packed->from != t.K.data || packed->keys < keys) {
    PackKeysTransposed(t.K, keys, (keys + kTileKeys - 1) / kTileKeys * kTileKeys, p.scale, kt);
    packed->from = t.K.data;
    packed->keys = keys;
  }
  size_t i = r0;
  while (i + kBlockRows <= r1) {
    const size_t blocks = std::min(kMaxBlocks, (r1 - i) / kBlockRows);
    if (!FlashBlocks(t, p, kt, i, blocks)) return false;
    i += blocks * kBlockRows;
  }
  if (kBlockRows > 4 && i + 4 <= r1) {
    if (!FlashRows<4>(t, p, kt, i)) return false;
    i += 4;
  }
  switch (r1 - i) {
    case 3: return FlashRows<3>(t, p, kt, i);
    case 2: return FlashRows<2>(t, p, kt, i);
    case 1: return FlashRows<1>(t, p, kt, i);
    default: return true;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_FLASH_INL_H_
