// attnkit: multi-head attention with grouped K/V heads, batching, and the
// reshapes between the concatenated layout [T, h*d] and the per-head layout
// [h, T, d] (stored as [h*T, d]).
#ifndef ATTNKIT_MULTIHEAD_H_
#define ATTNKIT_MULTIHEAD_H_

#include <cstddef>

#include "attnkit/attention.h"
#include "attnkit/matrix.h"
#include "attnkit/status.h"

namespace attnkit {

// How the calls on projected heads (MultiHeadAttentionQKV, its forward for
// training and its backward, backward.h) lay out Q, K, V and the tensors
// shaped as them (out, O, dO, dQ, dK, dV), as stacked matrices:
enum class HeadLayout {
  // [batch, seq, heads, d] as [batch * seq, heads * d]: head h of a token is
  // columns [h*d, (h+1)*d) of its row (the concatenated heads).
  kBSHD = 0,
  // [batch, heads, seq, d] as [batch * heads * seq, d]: head h of item b is
  // the contiguous [seq, d] block at row (b * heads + h) * seq (PyTorch's
  // scaled_dot_product_attention, ONNX Attention's 4-D inputs).
  kBHSD = 1,
};

// Zero means "derive": num_kv_heads = num_heads, d_k = d_model / num_heads
// (which must divide; with layout kBHSD, the columns of Q), d_v = d_k (the
// columns of V / num_kv_heads; with kBHSD, the columns of V).
struct HeadConfig {
  size_t num_heads = 1;
  size_t num_kv_heads = 0;  // must divide num_heads; 1 = multi-query attention
  size_t d_k = 0;
  size_t d_v = 0;
  // The QKV calls' layout. The calls that project X (MultiHeadAttention, its
  // backward, MultiHeadDecode) lay out their heads themselves: kBSHD only.
  HeadLayout layout = HeadLayout::kBSHD;
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

// Attention per (batch item, head) on already projected inputs, laid out as
// config.layout says:
//   kBSHD: Q [B*T_q, h*d_k], K [B*T_k, kvh*d_k], V [B*T_k, kvh*d_v]
//          -> out [B*T_q, h*d_v];
//   kBHSD: Q [B*h*T_q, d_k], K [B*kvh*T_k, d_k], V [B*kvh*T_k, d_v]
//          -> out [B*h*T_q, d_v].
// Either way each head reads its blocks in place (no copy of the inputs).
// config.num_heads and num_kv_heads are required; d_k and d_v are derived from
// the column counts when zero. options.key_lengths gives per-item key padding.
Status MultiHeadAttentionQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                             const HeadConfig& config, const AttentionOptions& options,
                             MatrixView out);

// Which intermediate of attention MultiHeadAttentionQKV returns in
// MultiHeadExtras::scores (ONNX Attention's qk_matmul_output).
enum class ScoresStage {
  kNone,     // nothing is computed or written
  kRaw,      // Q K^T
  kScaled,   // Q K^T * scale, then softcap if set (ONNX qk_matmul_output_mode 0 and 1)
  kMasked,   // scaled + additive mask; -inf where masked (ONNX mode 2)
  kWeights,  // row softmax; a fully masked row is all zeros (ONNX mode 3)
};

// Optional inputs and outputs of MultiHeadAttentionQKV beyond Q, K, V and out
// (ONNX Attention's past_key / past_value, present_key / present_value and
// qk_matmul_output). K/V heads of the past and present use the per-head
// layout [batch, num_kv_heads, seq, d] stored as [batch*kvh*seq, d] (as ONNX
// and KVCache lay them out), so that present can be fed back as the next
// call's past.
struct MultiHeadExtras {
  // [B*kvh*T_past, d_k] and [B*kvh*T_past, d_v]: keys and values that precede
  // K and V. Both or neither (empty = no past, T_past = 0).
  ConstMatrixView past_K;
  ConstMatrixView past_V;
  // [B*kvh*T_total, d_k] and [B*kvh*T_total, d_v], T_total = T_past + T_k:
  // receive past followed by K / V of each (item, kv head); attention runs
  // against them. Both or neither (empty = not returned). Must not overlap
  // any input.
  MatrixView present_K;
  MatrixView present_V;
  // With a stage other than kNone: scores [B*num_heads*T_q, T_total] receives
  // that intermediate of every (item, head), block (b, h) at row
  // (b * num_heads + h) * T_q. Costs a [T_q, T_total] pass per head (the
  // one-row-at-a-time path); kNone changes nothing.
  ScoresStage scores_stage = ScoresStage::kNone;
  MatrixView scores;
};

// MultiHeadAttentionQKV with past keys and values and the intermediate scores:
// keys and values are past followed by K, V (T_total = T_past + T_k keys per
// item); key_lengths, masks and causal alignment refer to those T_total keys
// (ONNX: causal_alignment kUpperLeft with causal_offset = T_past).
// Q, K, V and out as MultiHeadAttentionQKV above, in config.layout; past,
// present and scores in their own layouts whatever config.layout is.
Status MultiHeadAttentionQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, size_t batch,
                             const HeadConfig& config, const AttentionOptions& options,
                             const MultiHeadExtras& extras, MatrixView out);

// Full multi-head self-attention:
// X [B*T, d_model] -> project -> split -> attend per head -> merge -> W_O
// -> out [B*T, d_out] (or [B*T, h*d_v] when W_O is empty).
Status MultiHeadAttention(ConstMatrixView X, size_t batch, const MultiHeadWeights& weights,
                          const HeadConfig& config, const AttentionOptions& options,
                          MatrixView out);

}  // namespace attnkit

#endif  // ATTNKIT_MULTIHEAD_H_
