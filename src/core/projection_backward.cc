// attnkit: the backward of the projections (ProjectionBackward in
// backward.h), used by every backward of the core that projects:
// SelfAttentionBackward, MultiHeadAttentionBackward and the backward trace.
// The model keeps W_Q | W_K | W_V side by side and differentiates them as one
// product (AttentionBlockBackward in src/model/blocks.h says why). Plain C++
// on the dispatched GEMMs (RunMatMul, RunMatMulTransposed).
#include <algorithm>
#include <utility>
#include <vector>

#include "attnkit/backward.h"
#include "src/core/internal.h"
#include "src/core/plan.h"
#include "src/core/validate.h"

namespace attnkit {
namespace internal {

Status Product(ConstMatrixView A, ConstMatrixView B, MatrixView C, bool transposed,
               const char* source, const char* what, ThreadPool* pool) {
  pool = PoolFor(pool, double(A.rows) * A.cols * C.cols);
  const size_t threads = pool ? pool->num_threads() : 1;
  const size_t band = std::max<size_t>(8, (A.rows + threads - 1) / threads);
  const size_t bands = std::max<size_t>(1, (A.rows + band - 1) / band);
  // Whether B is packed in panels is decided for all of A, as the public
  // MatMul decides it, never per band: the packed path sums in another
  // order, and the result must not depend on the thread count.
  size_t room = 0;  // per band: B (B^T) in panels
  FloatBuffer packed;
  if (A.rows >= kPackMinRows) {
    const size_t rows = transposed ? B.cols : B.rows, cols = transposed ? B.rows : B.cols;
    size_t all;
    ATTNKIT_RETURN_IF_ERROR(
        CheckedProduct(source, "B packed in panels", rows, RoundUp(cols, kMaxPanel), &room));
    ATTNKIT_RETURN_IF_ERROR(CheckedProduct(source, "B packed in panels", room, bands, &all));
    if (!packed.Allocate(all)) return OutOfMemory(source, "B packed in panels", all);
  }
  std::vector<char> ok(bands, 0);
  auto run = [&](size_t b, size_t) {
    const size_t r0 = b * band, rows = std::min(band, A.rows - r0);
    const ConstMatrixView a(A.data + r0 * A.stride, rows, A.cols, A.stride);
    const MatrixView c(C.data + r0 * C.stride, rows, C.cols, C.stride);
    float* room_b = room ? packed.data() + b * room : nullptr;
    ok[b] = transposed ? RunMatMulTransposed(a, B, c, room_b) : RunMatMul(a, B, c, room_b);
  };
  ParallelFor(pool, bands, run);
  for (char band_ok : ok) {
    if (!band_ok) return OverflowStatus(source, what);
  }
  return Status::Ok();
}

Status Transpose(const char* parameter, const char* what, ConstMatrixView m, Matrix* t) {
  ATTNKIT_RETURN_IF_ERROR(Allocate(parameter, what, m.cols, m.rows, t));
  for (size_t r = 0; r < m.rows; ++r) {
    for (size_t c = 0; c < m.cols; ++c) (*t)(c, r) = m(r, c);
  }
  return Status::Ok();
}

Status RunProjectionBackward(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                             ConstMatrixView W_V, ConstMatrixView dQ, ConstMatrixView dK,
                             ConstMatrixView dV, const char* source, ThreadPool* pool,
                             MatrixView dX, MatrixView dW_Q, MatrixView dW_K, MatrixView dW_V) {
  Matrix Xt, part;
  ATTNKIT_RETURN_IF_ERROR(Transpose("X", "X^T [d_model, rows of X]", X, &Xt));
  ATTNKIT_RETURN_IF_ERROR(Product(Xt, dQ, dW_Q, false, source, "dW_Q = X^T dQ", pool));
  ATTNKIT_RETURN_IF_ERROR(Product(Xt, dK, dW_K, false, source, "dW_K = X^T dK", pool));
  ATTNKIT_RETURN_IF_ERROR(Product(Xt, dV, dW_V, false, source, "dW_V = X^T dV", pool));
  ATTNKIT_RETURN_IF_ERROR(Allocate("X", "dX [rows of X, d_model]", X.rows, X.cols, &part));
  ATTNKIT_RETURN_IF_ERROR(Product(dQ, W_Q, dX, true, source, "dX = dQ W_Q^T", pool));
  for (const auto& [d, W] : {std::pair<ConstMatrixView, ConstMatrixView>{dK, W_K}, {dV, W_V}}) {
    ATTNKIT_RETURN_IF_ERROR(
        Product(d, W, part.view(), true, source, "dX = dK W_K^T + dV W_V^T", pool));
    for (size_t r = 0; r < X.rows; ++r) {
      for (size_t c = 0; c < X.cols; ++c) dX(r, c) += part(r, c);
    }
  }
  if (!RunAllFinite(dX)) return OverflowStatus(source, "dX");
  return Status::Ok();
}

}  // namespace internal

Status ProjectionBackward(ConstMatrixView X, ConstMatrixView W_Q, ConstMatrixView W_K,
                          ConstMatrixView W_V, ConstMatrixView dQ, ConstMatrixView dK,
                          ConstMatrixView dV, ThreadPool* pool,
                          const SelfAttentionGradients& grads) {
  using internal::CheckShape;
  ATTNKIT_RETURN_IF_ERROR(internal::CheckView("X", X));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckView("W_Q", W_Q));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckView("W_V", W_V));
  const size_t T = X.rows, d_model = X.cols, d_k = W_Q.cols, d_v = W_V.cols;
  ATTNKIT_RETURN_IF_ERROR(CheckShape("W_Q", W_Q, d_model, d_k, "d_model, the columns of X", "d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("W_K", W_K, d_model, W_K.cols, "d_model, the columns of X",
                                     "d_k, the columns of dK"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("W_V", W_V, d_model, d_v, "d_model, the columns of X", "d_v"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dQ", dQ, T, d_k, "T, the rows of X", "the columns of W_Q"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dK", dK, T, W_K.cols, "T, the rows of X", "the columns of W_K"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dV", dV, T, d_v, "T, the rows of X", "the columns of W_V"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("dX", grads.dX, T, d_model, "T, the rows of X", "d_model, the columns of X"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dW_Q", grads.dW_Q, d_model, d_k, "d_model", "d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dW_K", grads.dW_K, d_model, W_K.cols, "d_model", "d_k"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("dW_V", grads.dW_V, d_model, d_v, "d_model", "d_v"));
  const std::pair<const char*, ConstMatrixView> inputs[] = {
      {"X", X}, {"W_Q", W_Q}, {"W_K", W_K}, {"W_V", W_V}, {"dQ", dQ}, {"dK", dK}, {"dV", dV}};
  const std::pair<const char*, MatrixView> outputs[] = {
      {"dX", grads.dX}, {"dW_Q", grads.dW_Q}, {"dW_K", grads.dW_K}, {"dW_V", grads.dW_V}};
  for (const auto& [name, in] : inputs) {
    ATTNKIT_RETURN_IF_ERROR(internal::CheckFinite(name, in));
  }
  for (const auto& [name, out] : outputs) {
    for (const auto& [in_name, in] : inputs) {
      ATTNKIT_RETURN_IF_ERROR(internal::CheckNoOverlap(name, out, in_name, in));
    }
    for (const auto& [other_name, other] : outputs) {
      if (other_name == name) continue;
      ATTNKIT_RETURN_IF_ERROR(internal::CheckNoOverlap(name, out, other_name, other));
    }
  }
  return internal::RunProjectionBackward(X, W_Q, W_K, W_V, dQ, dK, dV, "dQ", pool, grads.dX,
                                         grads.dW_Q, grads.dW_K, grads.dW_V);
}

}  // namespace attnkit
