// attnkit: gradients of single-head scaled dot-product attention.
//
// Forward (as Attention, attention.h), per head:
//   S = scale Q K^T                       [T_q, T_k]
//   C = softcap tanh(S / softcap)         (C = S without softcap)
//   S' = C + additive mask, -inf where any mask forbids the key
//   P = softmax(S') by rows               (a fully masked row is all 0)
//   O = P V                               [T_q, d_v]
//   lse_i = log sum_j exp(S'_ij)          [T_q] (-inf for a fully masked row)
// Backward, given dO = dLoss/dO [T_q, d_v]:
//   dV = P^T dO                           [T_k, d_v]
//   dP = dO V^T                           [T_q, T_k]
//   D_i = rowsum(dO_i * O_i)              [T_q]
//   dS' = P * (dP - D)                    [T_q, T_k]
//   dS = dS' * (1 - tanh^2(S / softcap))  (dS = dS' without softcap)
//   dQ = scale dS K                       [T_q, d_k]
//   dK = scale dS^T Q                     [T_k, d_k]
// Masked entries (P = 0) and fully masked rows add exactly zero to every
// gradient. No gradient flows into the masks.
//
// The backward is fused (Dao 2023, FlashAttention-2): it never holds a
// [T_q, T_k] matrix, but recomputes P tile by tile as exp(S' - lse) from Q,
// K and the forward's per-row log-sum-exp, so memory stays O((T_q + T_k) d).
#ifndef ATTNKIT_BACKWARD_H_
#define ATTNKIT_BACKWARD_H_

#include "attnkit/attention.h"
#include "attnkit/matrix.h"
#include "attnkit/multihead.h"
#include "attnkit/status.h"

namespace attnkit {

// The forward for training: as Attention, and also the log-sum-exp of each
// row of masked scores, which AttentionBackward takes to recompute P without a
// second forward pass.
// Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v] -> out [T_q, d_v], lse [T_q, 1]
// (-inf for a row that sees no key). Every option of Attention; options.pool
// splits blocks of queries over its threads. Outputs must not alias the
// inputs or each other.
Status AttentionForTraining(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                            const AttentionOptions& options, MatrixView out, MatrixView lse);

// Gradients of a loss with respect to Q, K and V, given dO = dLoss/dO.
// Q, K, V and options must be those of the forward; O [T_q, d_v] and lse
// [T_q, 1] are the forward's outputs (AttentionForTraining). -> dQ [T_q, d_k],
// dK [T_k, d_k], dV [T_k, d_v], each overwritten; they must not alias any
// input or each other. Gradients come out as views the caller owns, like the
// forward's `out`, so that bindings can hand in their own memory.
// options.pool splits blocks of keys (for dK, dV), then blocks of queries
// (for dQ, recomputing the scores) over its threads; the results are
// bit-identical to one thread's, which makes one pass.
Status AttentionBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V, ConstMatrixView O,
                         ConstMatrixView dO, ConstMatrixView lse, const AttentionOptions& options,
                         MatrixView dQ, MatrixView dK, MatrixView dV);

// As above for a caller that kept no forward results: recomputes O and lse
// first (one more forward pass, O(T_q (d_v + 1)) more memory).
Status AttentionBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                         ConstMatrixView dO, const AttentionOptions& options, MatrixView dQ,
                         MatrixView dK, MatrixView dV);

// Gradients of self-attention with one head (SelfAttention): Q = X W_Q,
// K = X W_K, V = X W_V, then attention; the gradients flow back through the
// projections: dX = dQ W_Q^T + dK W_K^T + dV W_V^T, dW_Q = X^T dQ,
// dW_K = X^T dK, dW_V = X^T dV.
// X [T, d_model], W_Q, W_K [d_model, d_k], W_V [d_model, d_v], dO [T, d_v]
// -> dX [T, d_model], dW_Q, dW_K [d_model, d_k], dW_V [d_model, d_v]; every
// view is overwritten and must not alias an input or another gradient.
struct SelfAttentionGradients {
  MatrixView dX, dW_Q, dW_K, dW_V;
};
Status SelfAttentionBackward(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                             ConstMatrixView W_V, ConstMatrixView dO,
                             const AttentionOptions& options, const SelfAttentionGradients& grads);

// The backward of the projections Q = X W_Q, K = X W_K, V = X W_V alone,
// given their gradients (the step every backward above that projects ends
// with): dW_Q = X^T dQ, dW_K = X^T dK, dW_V = X^T dV and
// dX = dQ W_Q^T + dK W_K^T + dV W_V^T. X [T, d_model], W_Q [d_model, d_k],
// W_K [d_model, d_k'], W_V [d_model, d_v], dQ [T, d_k], dK [T, d_k'],
// dV [T, d_v] -> grads as SelfAttentionGradients (overwritten; must not
// alias an input or another gradient). With a pool, bands of rows go to its
// threads, bit-identical to one thread.
Status ProjectionBackward(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                          ConstMatrixView W_V, ConstMatrixView dQ, ConstMatrixView dK,
                          ConstMatrixView dV, ThreadPool* pool,
                          const SelfAttentionGradients& grads);

// The multi-head forward for training: as MultiHeadAttentionQKV (no past,
// present or scores; Q, K, V and out in config.layout), and also the
// log-sum-exp of every row of every head: lse [batch * num_heads * T_q, 1],
// row (b * num_heads + h) * T_q + i (the layout of MultiHeadExtras::scores,
// whatever config.layout is); -inf for a row that sees no key.
Status MultiHeadAttentionQKVForTraining(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                                        size_t batch, const HeadConfig& config,
                                        const AttentionOptions& options, MatrixView out,
                                        MatrixView lse);

// Gradients of MultiHeadAttentionQKV in config.layout (see HeadLayout):
// kBSHD: Q [B*T_q, h*d_k], K [B*T_k, kvh*d_k], V [B*T_k, kvh*d_v], O and dO
// [B*T_q, h*d_v]; kBHSD: Q [B*h*T_q, d_k], K [B*kvh*T_k, d_k], V [B*kvh*T_k,
// d_v], O and dO [B*h*T_q, d_v] -> dQ, dK, dV shaped as Q, K, V, each head's
// block read and written in place; dK and dV sum over the query heads of
// each K/V group. O and lse are MultiHeadAttentionQKVForTraining's
// outputs for the same inputs and options. Every option of the forward.
// options.pool gives each thread whole (item, K/V group)s when there are at
// least as many as threads; fewer are split into (item, K/V group, key
// block) tasks for dK, dV and (item, head, query block) tasks for dQ. Either
// way bit-identical to one thread. Memory: O((T_q + T_k) d) per head in
// flight (the heads of min(groups, threads) K/V groups at a time), never a
// [T_q, T_k] matrix.
Status MultiHeadAttentionQKVBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                                     ConstMatrixView O, ConstMatrixView dO, ConstMatrixView lse,
                                     size_t batch, const HeadConfig& config,
                                     const AttentionOptions& options, MatrixView dQ, MatrixView dK,
                                     MatrixView dV);

// As above for a caller that kept no forward results: recomputes O and lse.
Status MultiHeadAttentionQKVBackward(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                                     ConstMatrixView dO, size_t batch, const HeadConfig& config,
                                     const AttentionOptions& options, MatrixView dQ, MatrixView dK,
                                     MatrixView dV);

// Gradients of MultiHeadAttention: X [B*T, d_model], dOut [B*T, d_out]
// (d_out = the columns of W_O, or h*d_v without W_O) -> dX [B*T, d_model],
// dW_Q, dW_K, dW_V, dW_O shaped as the weights (dW_O empty iff W_O is).
// Recomputes the forward (projections, heads, merge) internally; then
// dW_O = merged^T dOut, dMerged = dOut W_O^T, the heads' backward, and the
// projections' as in SelfAttentionBackward.
struct MultiHeadGradients {
  MatrixView dX, dW_Q, dW_K, dW_V, dW_O;
};
Status MultiHeadAttentionBackward(ConstMatrixView X, size_t batch, const MultiHeadWeights& weights,
                                  const HeadConfig& config, const AttentionOptions& options,
                                  ConstMatrixView dOut, const MultiHeadGradients& grads);

}  // namespace attnkit

#endif  // ATTNKIT_BACKWARD_H_
