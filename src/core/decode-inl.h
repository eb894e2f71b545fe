// attnkit: split-K attention for a few queries against many keys (decoding
// against a KV cache), per target; toggled include guard.
//
// The keys of one head are cut into chunks of kDecodeChunkKeys; each
// (head, chunk) is an independent task, so one query against a long cache
// still spreads over every thread (as in FlashDecoding, Dao et al. 2023). A
// task leaves, per query row, a partial result [2 + d_v]:
//   m = the chunk's max score, l = sum_j exp(s_j - m), o = sum_j exp(s_j - m) v_j
// (m = -inf, l = 0, o = 0 if the row sees no key of the chunk). MergeChunks
// then combines the chunks of a row exactly as online softmax does:
//   M = max_c m_c,  out = sum_c exp(m_c - M) o_c / sum_c exp(m_c - M) l_c.
// The chunking depends only on T_k, so results do not depend on the thread
// count. Memory per thread: one chunk of scores [kDecodeChunkKeys].

#if defined(ATTNKIT_DECODE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNKIT_DECODE_INL_H_
#undef ATTNKIT_DECODE_INL_H_
#else
#define ATTNKIT_DECODE_INL_H_
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

// Split-K in the steps of steps-inl.h: Scores, ScaleSoftcap, VisibleKeys and
// ApplyMasks, SoftmaxUnnormalised, WeightedSumV over one chunk of keys read
// in place.
// Chunk c of head t, keys [c * kDecodeChunkKeys, +kDecodeChunkKeys) clamped
// to T_k: for each query row i, partials + i * (2 + d_v) receives
// [m, l, o [d_v]]. With `partials` null, the one chunk is all of T_k
// (T_k <= kDecodeChunkKeys): each row's softmax is finished in place, out =
// o / l and the weights exp(s - m) / l, the bits MergeChunks of one chunk
// gives (its factor exp(0) is 1). `s` is scratch [kDecodeChunkKeys].
// Returns false if a visible score overflowed.
HWY_INLINE bool DecodeChunk(const internal::HeadTask& t, const internal::ScoreParams& p,
                            size_t chunk, float* HWY_RESTRICT s, float* HWY_RESTRICT partials) {
  const size_t d_v = t.V.cols;
  const size_t j0 = chunk * internal::kDecodeChunkKeys;
  const size_t j1 = std::min(t.K.rows, j0 + internal::kDecodeChunkKeys);
  float whole[2];  // [m, l] of a row when the chunk is the whole row
  for (size_t i = 0; i < t.Q.rows; ++i) {
    float* HWY_RESTRICT part = partials ? partials + i * (2 + d_v) : whole;
    float* HWY_RESTRICT o = partials ? part + 2 : t.out.Row(i);
    part[0] = -std::numeric_limits<float>::infinity();
    part[1] = 0.0f;
    ZeroRow(o, d_v);
    // The chunk's weights: exp(s - m) here, normalised by MergeChunks; 0
    // for the keys the row does not see.
    float* HWY_RESTRICT w = t.weights.empty() ? nullptr : t.weights.Row(i) + j0;
    if (w) ZeroRow(w, j1 - j0);
    const size_t visible = VisibleKeys(t, p, i);
    const size_t n = visible > j0 ? std::min(j1, visible) - j0 : 0;
    if (n == 0) continue;
    Scores(t, i, j0, n, s);
    ScaleSoftcap(s, n, p.scale, p.softcap);
    // A score that overflowed (to +-inf or NaN) is an error, never a mask.
    if (!AllFinite(s, n)) return false;
    ApplyMasks(t, i, j0, s, n);
    float max;
    if (!RowMax(s, n, &max)) return false;  // +inf from the additive mask
    if (max == -std::numeric_limits<float>::infinity()) continue;
    part[0] = max;
    part[1] = SoftmaxUnnormalised(s, n, max);
    if (w) CopyRow(s, n, w);
    WeightedSumV(t, s, j0, n, o);
    if (partials) continue;
    const float inv_l = 1.0f / part[1];  // l >= 1: the key of score m adds 1
    ScaleRow(o, d_v, inv_l, 0.0f);
    if (w) ScaleRow(w, n, inv_l, 0.0f);
  }
  return true;
}

// out row i of head t = the merge of its `chunks` partial results; with
// t.weights, each chunk's exp(s - m) times exp(m - M) / L, the row's softmax.
HWY_INLINE void MergeChunks(const internal::HeadTask& t, size_t chunks,
                            const float* HWY_RESTRICT partials) {
  const size_t d_v = t.V.cols, row_floats = 2 + d_v, chunk_floats = t.Q.rows * row_floats;
  const size_t T_k = t.K.rows, C = internal::kDecodeChunkKeys;
  for (size_t i = 0; i < t.Q.rows; ++i) {
    float* HWY_RESTRICT out = t.out.Row(i);
    ZeroRow(out, d_v);
    float M = -std::numeric_limits<float>::infinity();
    for (size_t c = 0; c < chunks; ++c)
      M = std::max(M, partials[c * chunk_floats + i * row_floats]);
    if (M == -std::numeric_limits<float>::infinity()) continue;  // sees no key: zeros
    float L = 0.0f;
    for (size_t c = 0; c < chunks; ++c) {
      const float* HWY_RESTRICT part = partials + c * chunk_floats + i * row_floats;
      const float x = part[0] - M;  // -inf for chunks the row does not see
      if (!(x >= kExpFlushBelow)) continue;
      const float w = std::exp(x);
      L += w * part[1];
      MulAddRow(w, part + 2, out, d_v);
    }
    ScaleRow(out, d_v, 1.0f / L, 0.0f);  // L >= 1: the chunk with m = M has l >= 1
    if (t.weights.empty()) continue;
    for (size_t c = 0; c < chunks; ++c) {
      const float x = partials[c * chunk_floats + i * row_floats] - M;
      float* HWY_RESTRICT w = t.weights.Row(i) + c * C;
      const size_t n = std::min(T_k, (c + 1) * C) - c * C;
      if (!(x >= kExpFlushBelow)) {
        ZeroRow(w, n);
      } else {
        ScaleRow(w, n, std::exp(x) / L, 0.0f);
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_DECODE_INL_H_
