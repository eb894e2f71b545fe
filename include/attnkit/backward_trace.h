// attnkit: the backward pass of single-head attention, step by step, for
// teaching. Every intermediate is kept, each [T_q, T_k] matrix included: use
// it to look at small shapes; AttentionBackward (backward.h) computes the same
// gradients fused, in O((T_q + T_k) d) memory.
//
// Forward (TraceAttention / TraceAttentionQKV, attention.h):
//   Q = X W_Q, K = X W_K, V = X W_V       [T, d_k], [T, d_k], [T, d_v]
//   S = scale Q K^T                       [T_q, T_k]  (raw_scores = Q K^T)
//   C = softcap tanh(S / softcap)         (C = S without softcap; scaled_scores)
//   S' = C + additive mask, -inf where any mask forbids the key (masked_scores)
//   P = softmax(S') by rows               (weights; a fully masked row is all 0)
//   O = P V                               [T_q, d_v]  (output)
// Backward, given dO = dLoss/dO           [T_q, d_v]:
//   dV = P^T dO                           [T_k, d_v]
//   dP = dO V^T                           [T_q, T_k]  (d_weights)
//   D_i = rowsum(dO_i * O_i)              [T_q, 1]
//   dS' = P * (dP - D)                    [T_q, T_k]  (d_masked_scores; the softmax's Jacobian)
//   dS = dS' * (1 - tanh^2(S / softcap))  [T_q, T_k]  (d_scores; = dS' without softcap)
//   dQ = scale dS K                       [T_q, d_k]
//   dK = scale dS^T Q                     [T_k, d_k]
// and through the projections of self-attention:
//   dX = dQ W_Q^T + dK W_K^T + dV W_V^T   [T, d_model]  (X feeds Q, K and V)
//   dW_Q = X^T dQ, dW_K = X^T dK          [d_model, d_k]
//   dW_V = X^T dV                         [d_model, d_v]
// Masked entries (P = 0) get d_masked_scores and d_scores exactly 0, and a
// fully masked row gives zero rows of both and of dQ, never NaN. No gradient
// flows into the masks.
#ifndef ATTNKIT_BACKWARD_TRACE_H_
#define ATTNKIT_BACKWARD_TRACE_H_

#include "attnkit/attention.h"
#include "attnkit/matrix.h"
#include "attnkit/status.h"

namespace attnkit {

// Every intermediate of the backward of single-head attention, each with its
// shape.
struct AttentionBackwardTrace {
  AttentionTrace forward;  // the forward's intermediates (TraceAttention / TraceAttentionQKV)
  Matrix dO;               // [T_q, d_v]  the given gradient of the output
  Matrix dV;               // [T_k, d_v]  weights^T dO
  Matrix d_weights;        // [T_q, T_k]  dP = dO V^T
  Matrix D;                // [T_q, 1]    rowsum(dO * O)
  // [T_q, T_k] dS' = P (dP - D): through the softmax, after softcap; 0 where masked
  Matrix d_masked_scores;
  // [T_q, T_k] dS = dS' (1 - tanh^2(S / softcap)), S = scale Q K^T before softcap
  // (= d_masked_scores without softcap)
  Matrix d_scores;
  Matrix dQ;  // [T_q, d_k]  scale dS K
  Matrix dK;  // [T_k, d_k]  scale dS^T Q
  // Projections: dX [T, d_model], dW_Q and dW_K [d_model, d_k], dW_V [d_model, d_v]
  // (TraceAttentionBackward only; empty for the QKV one).
  Matrix dX, dW_Q, dW_K, dW_V;
};

// Self-attention as TraceAttention, then its backward given dO [T, d_v]:
// X [T, d_model], W_Q and W_K [d_model, d_k], W_V [d_model, d_v]. Every option
// of the forward. On error *trace is left unchanged.
Status TraceAttentionBackward(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                              ConstMatrixView W_V, ConstMatrixView dO,
                              const AttentionOptions& options, AttentionBackwardTrace* trace);

// Attention on given Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v] as
// TraceAttentionQKV, then its backward given dO [T_q, d_v]; dX and the weight
// gradients stay empty. On error *trace is left unchanged.
Status TraceAttentionBackwardQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                                 ConstMatrixView dO, const AttentionOptions& options,
                                 AttentionBackwardTrace* trace);

}  // namespace attnkit

#endif  // ATTNKIT_BACKWARD_TRACE_H_
