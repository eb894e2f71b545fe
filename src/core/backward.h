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

#include "src/core/attention.h"
#include "src/core/matrix.h"
#include "src/core/status.h"

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

}  // namespace attnkit

#endif  // ATTNKIT_BACKWARD_H_
