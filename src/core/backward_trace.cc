// attnkit: the backward trace (backward_trace.h). The forward's trace, then
// each step of the backward as its formula, in plain loops over materialised
// matrices: this is the readable path, not the fast one.
#include "attnkit/backward_trace.h"

#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

#include "src/core/internal.h"
#include "src/core/validate.h"

namespace attnkit {
namespace {

using internal::Allocate;
using internal::AllocateCopy;
using internal::CheckFinite;
using internal::CheckShape;

// Whether a product reads its operand as given or transposed.
enum class Op { kAsIs, kTransposed };

// Element (r, c) of op(A).
inline double At(ConstMatrixView A, Op op, size_t r, size_t c) {
  return op == Op::kAsIs ? A(r, c) : A(c, r);
}

// out += alpha op(A) op(B), with out [M, N] and the inner dimension K from
// op(A) [M, K]. Sums run in double: the trace is what the fused backward is
// checked against, so its own rounding should stay out of the comparison.
void AddProduct(double alpha, ConstMatrixView A, Op op_a, ConstMatrixView B, Op op_b,
                MatrixView out) {
  const size_t K = op_a == Op::kAsIs ? A.cols : A.rows;
  for (size_t r = 0; r < out.rows; ++r) {
    for (size_t c = 0; c < out.cols; ++c) {
      double sum = 0.0;
      for (size_t k = 0; k < K; ++k) sum += At(A, op_a, r, k) * At(B, op_b, k, c);
      out(r, c) = static_cast<float>(out(r, c) + alpha * sum);
    }
  }
}

// The backward steps from a finished forward trace t->forward and a checked
// dO [T_q, d_v]. `source` names the input whose rows give T_q, for the
// allocations.
Status BackwardSteps(const char* source, ConstMatrixView dO, float softcap,
                     AttentionBackwardTrace* t) {
  const AttentionTrace& f = t->forward;
  const ConstMatrixView P = f.weights, Q = f.Q, K = f.K, V = f.V, O = f.output;
  const size_t T_q = P.rows, T_k = P.cols, d_k = Q.cols, d_v = V.cols;
  ATTNKIT_RETURN_IF_ERROR(AllocateCopy("dO", "dO [T_q, d_v]", dO, &t->dO));
  ATTNKIT_RETURN_IF_ERROR(Allocate(source, "dV [T_k, d_v]", T_k, d_v, &t->dV));
  ATTNKIT_RETURN_IF_ERROR(Allocate(source, "d_weights [T_q, T_k]", T_q, T_k, &t->d_weights));
  ATTNKIT_RETURN_IF_ERROR(Allocate(source, "D [T_q, 1]", T_q, 1, &t->D));
  ATTNKIT_RETURN_IF_ERROR(
      Allocate(source, "d_masked_scores [T_q, T_k]", T_q, T_k, &t->d_masked_scores));
  ATTNKIT_RETURN_IF_ERROR(Allocate(source, "d_scores [T_q, T_k]", T_q, T_k, &t->d_scores));
  ATTNKIT_RETURN_IF_ERROR(Allocate(source, "dQ [T_q, d_k]", T_q, d_k, &t->dQ));
  ATTNKIT_RETURN_IF_ERROR(Allocate(source, "dK [T_k, d_k]", T_k, d_k, &t->dK));

  // dV = P^T dO: O = P V, so each value row collects the output gradients of
  // the queries that weighted it.
  AddProduct(1.0, P, Op::kTransposed, dO, Op::kAsIs, t->dV);

  // dP = dO V^T: the same product, seen from the weights.
  AddProduct(1.0, dO, Op::kAsIs, V, Op::kTransposed, t->d_weights);

  // D_i = rowsum(dO_i * O_i) = sum_j P_ij dP_ij: the mean of row i of dP under
  // the weights, from O instead of a pass over the [T_q, T_k] matrices.
  for (size_t i = 0; i < T_q; ++i) {
    double sum = 0.0;
    for (size_t x = 0; x < d_v; ++x) sum += static_cast<double>(dO(i, x)) * O(i, x);
    t->D(i, 0) = static_cast<float>(sum);
  }

  // dS' = P (dP - D): the softmax's Jacobian diag(P) - P P^T applied to row
  // i of dP. A masked key (and every key of a fully masked row) has P = 0 and
  // gets exactly 0, set rather than multiplied so that no overflow of dP - D
  // can turn it into NaN.
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < T_q; ++i) {
    for (size_t j = 0; j < T_k; ++j) {
      const bool masked = f.masked_scores(i, j) == neg_inf;
      t->d_masked_scores(i, j) =
          masked ? 0.0f
                 : static_cast<float>(static_cast<double>(P(i, j)) *
                                      (static_cast<double>(t->d_weights(i, j)) - t->D(i, 0)));
    }
  }

  // dS = dS' (1 - tanh^2(S / softcap)), S = scale Q K^T: the derivative of
  // softcap tanh(S / softcap). The additive mask is a constant: it passes dS'
  // through unchanged.
  for (size_t i = 0; i < T_q; ++i) {
    for (size_t j = 0; j < T_k; ++j) {
      double factor = 1.0;
      if (softcap > 0.0f) {
        const double tanh_s =
            std::tanh(static_cast<double>(f.scale) * f.raw_scores(i, j) / softcap);
        factor = 1.0 - tanh_s * tanh_s;
      }
      t->d_scores(i, j) = static_cast<float>(t->d_masked_scores(i, j) * factor);
    }
  }

  // dQ = scale dS K and dK = scale dS^T Q: S = scale Q K^T is bilinear.
  AddProduct(f.scale, t->d_scores, Op::kAsIs, K, Op::kAsIs, t->dQ);
  AddProduct(f.scale, t->d_scores, Op::kTransposed, Q, Op::kAsIs, t->dK);

  // Finite inputs can still overflow float on the way (e.g. dO V^T).
  for (const Matrix* m :
       {&t->dV, &t->d_weights, &t->D, &t->d_masked_scores, &t->d_scores, &t->dQ, &t->dK}) {
    if (!internal::RunAllFinite(*m)) {
      return internal::OverflowStatus("dO", "the gradients of the backward trace");
    }
  }
  return Status::Ok();
}

// The projections Q = X W_Q, K = X W_K, V = X W_V, backwards: X feeds all
// three, so its gradient sums theirs. The same routine as every backward
// that projects (ProjectionBackward).
Status ProjectionSteps(ConstMatrixView W_Q, ConstMatrixView W_K, ConstMatrixView W_V,
                       AttentionBackwardTrace* t) {
  const ConstMatrixView X = t->forward.X;
  const size_t T = X.rows, d_model = X.cols;
  ATTNKIT_RETURN_IF_ERROR(Allocate("X", "dX [T, d_model]", T, d_model, &t->dX));
  ATTNKIT_RETURN_IF_ERROR(Allocate("W_Q", "dW_Q [d_model, d_k]", d_model, W_Q.cols, &t->dW_Q));
  ATTNKIT_RETURN_IF_ERROR(Allocate("W_K", "dW_K [d_model, d_k]", d_model, W_K.cols, &t->dW_K));
  ATTNKIT_RETURN_IF_ERROR(Allocate("W_V", "dW_V [d_model, d_v]", d_model, W_V.cols, &t->dW_V));
  // dW = X^T dQ, X^T dK, X^T dV; dX = dQ W_Q^T + dK W_K^T + dV W_V^T.
  return internal::RunProjectionBackward(X, W_Q, W_K, W_V, t->dQ, t->dK, t->dV, "dO", nullptr,
                                         t->dX, t->dW_Q, t->dW_K, t->dW_V);
}

}  // namespace

Status TraceAttentionBackward(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                              ConstMatrixView W_V, ConstMatrixView dO,
                              const AttentionOptions& options, AttentionBackwardTrace* trace) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("trace", trace));
  // Built here and handed over only on success.
  AttentionBackwardTrace t;
  ATTNKIT_RETURN_IF_ERROR(TraceAttention(X, W_Q, W_K, W_V, options, &t.forward));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dO", dO, X.rows, W_V.cols, "T, the rows of X", "d_v, the columns of W_V"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("dO", dO));
  ATTNKIT_RETURN_IF_ERROR(BackwardSteps("X", dO, options.softcap, &t));
  ATTNKIT_RETURN_IF_ERROR(ProjectionSteps(W_Q, W_K, W_V, &t));
  *trace = std::move(t);
  return Status::Ok();
}

Status TraceAttentionBackwardQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                                 ConstMatrixView dO, const AttentionOptions& options,
                                 AttentionBackwardTrace* trace) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("trace", trace));
  AttentionBackwardTrace t;
  ATTNKIT_RETURN_IF_ERROR(TraceAttentionQKV(Q, K, V, options, &t.forward));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dO", dO, Q.rows, V.cols, "T_q, the rows of Q", "d_v, the columns of V"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("dO", dO));
  ATTNKIT_RETURN_IF_ERROR(BackwardSteps("Q", dO, options.softcap, &t));
  *trace = std::move(t);
  return Status::Ok();
}

}  // namespace attnkit
