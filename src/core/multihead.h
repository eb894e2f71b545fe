// attnkit: multi-head attention with grouped K/V heads, batching, and the
// reshapes between the concatenated layout [T, h*d] and the per-head layout
// [h, T, d] (stored as [h*T, d]).
#ifndef ATTNKIT_MULTIHEAD_H_
#define ATTNKIT_MULTIHEAD_H_

#include <cstddef>

#include "src/core/attention.h"
#include "src/core/matrix.h"
#include "src/core/status.h"

namespace attnkit {

// Zero means "derive": num_kv_heads = num_heads, d_k = d_model / num_heads
// (which must divide), d_v = d_k.
struct HeadConfig {
  size_t num_heads = 1;
  size_t num_kv_heads = 0;  // must divide num_heads; 1 = multi-query attention
  size_t d_k = 0;
  size_t d_v = 0;
};

// One big projection per role. Query head h uses columns [h*d_k, (h+1)*d_k) of
// W_Q; K/V head g uses columns [g*d_k, (g+1)*d_k) of W_K (d_v for W_V). Query
// head h reads K/V head h / (num_heads / num_kv_heads).
struct MultiHeadWeights {
  ConstMatrixView W_Q;  // [d_model, num_heads * d_k]
  ConstMatrixView W_K;  // [d_model, num_kv_heads * d_k]
  ConstMatrixView W_V;  // [d_model, num_kv_heads * d_v]
  ConstMatrixView W_O;  // [num_heads * d_v, d_out]; empty = return merged heads
};

// [T, h*d] -> [h*T, d]: out row (head * T + t) = x[t, head*d : (head+1)*d].
Status SplitHeads(ConstMatrixView x, size_t num_heads, MatrixView out);

// [h*T, d] -> [T, h*d]: the inverse of SplitHeads (concatenate heads).
Status MergeHeads(ConstMatrixView heads, size_t num_heads, MatrixView out);

// Attention per (batch item, head) on already projected, concatenated inputs:
// Q [B*T_q, h*d_k], K [B*T_k, kvh*d_k], V [B*T_k, kvh*d_v] -> out [B*T_q, h*d_v].
// config.num_heads and num_kv_heads are required; d_k and d_v are derived from
// the column counts when zero. options.key_lengths gives per-item key padding.
Status MultiHeadAttentionQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                             size_t batch, const HeadConfig& config,
                             const AttentionOptions& options, MatrixView out);

// Full multi-head self-attention:
// X [B*T, d_model] -> project -> split -> attend per head -> merge -> W_O
// -> out [B*T, d_out] (or [B*T, h*d_v] when W_O is empty).
Status MultiHeadAttention(ConstMatrixView X, size_t batch,
                          const MultiHeadWeights& weights, const HeadConfig& config,
                          const AttentionOptions& options, MatrixView out);

}  // namespace attnkit

#endif  // ATTNKIT_MULTIHEAD_H_
