// attnkit: the public kernel operations: check arguments, dispatch once.
#include "src/core/ops.h"

#include <algorithm>
#include <cmath>

#include "src/core/internal.h"
#include "src/core/plan.h"
#include "src/core/validate.h"

namespace attnkit {

using internal::CheckFinite;
using internal::CheckNoOverlap;
using internal::CheckShape;
using internal::CheckView;

Status MatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("A", A));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("B", B, A.cols, B.cols, "K, the columns of A", "N"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("C", C, A.rows, B.cols, "M, the rows of A", "N, the columns of B"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("A", A));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("B", B));
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("C", C, "A", A));
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("C", C, "B", B));
  FloatBuffer packed;  // B in panels (see internal::kPackMinRows)
  if (A.rows >= internal::kPackMinRows) {
    size_t n;
    ATTNKIT_RETURN_IF_ERROR(internal::CheckedProduct(
        "B", "B packed in panels", B.rows, internal::RoundUp(B.cols, internal::kMaxPanel), &n));
    if (!packed.Allocate(n)) return internal::OutOfMemory("B", "B packed in panels", n);
  }
  if (!internal::RunMatMul(A, B, C, packed.data())) return internal::OverflowStatus("A", "A B");
  return Status::Ok();
}

Status MatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("A", A));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("B", B, B.rows, A.cols, "N", "K, the columns of A"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("C", C, A.rows, B.rows, "M, the rows of A", "N, the rows of B"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("A", A));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("B", B));
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("C", C, "A", A));
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("C", C, "B", B));
  FloatBuffer packed;  // B^T in panels, as MatMul packs B
  if (A.rows >= internal::kPackMinRows) {
    size_t n;
    ATTNKIT_RETURN_IF_ERROR(internal::CheckedProduct(
        "B", "B^T packed in panels", B.cols, internal::RoundUp(B.rows, internal::kMaxPanel), &n));
    if (!packed.Allocate(n)) return internal::OutOfMemory("B", "B^T packed in panels", n);
  }
  if (!internal::RunMatMulTransposed(A, B, C, packed.data())) {
    return internal::OverflowStatus("A", "A B^T");
  }
  return Status::Ok();
}

Status MatMulTransposedA(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("A", A));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("B", B, A.rows, B.cols, "K, the rows of A", "N"));
  ATTNKIT_RETURN_IF_ERROR(
      CheckShape("C", C, A.cols, B.cols, "M, the columns of A", "N, the columns of B"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("A", A));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("B", B));
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("C", C, "A", A));
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("C", C, "B", B));
  // A^T [M, K] first, so that the product runs on MatMul's register tiles
  // with K (the long batch dimension) innermost; in 16 x 16 blocks that stay
  // in cache while read by rows and written by columns.
  size_t n;
  ATTNKIT_RETURN_IF_ERROR(internal::CheckedProduct("A", "A^T", A.rows, A.cols, &n));
  FloatBuffer transposed;
  if (!transposed.AllocateUninitialized(n)) return internal::OutOfMemory("A", "A^T", n);
  const MatrixView At(transposed.data(), A.cols, A.rows);
  constexpr size_t kBlock = 16;
  for (size_t r0 = 0; r0 < A.rows; r0 += kBlock) {
    const size_t r1 = std::min(A.rows, r0 + kBlock);
    for (size_t c0 = 0; c0 < A.cols; c0 += kBlock) {
      const size_t c1 = std::min(A.cols, c0 + kBlock);
      for (size_t r = r0; r < r1; ++r) {
        for (size_t c = c0; c < c1; ++c) At(c, r) = A(r, c);
      }
    }
  }
  FloatBuffer packed;  // B in panels, as MatMul packs it
  if (At.rows >= internal::kPackMinRows) {
    ATTNKIT_RETURN_IF_ERROR(internal::CheckedProduct(
        "B", "B packed in panels", B.rows, internal::RoundUp(B.cols, internal::kMaxPanel), &n));
    if (!packed.Allocate(n)) return internal::OutOfMemory("B", "B packed in panels", n);
  }
  if (!internal::RunMatMul(At, B, C, packed.data())) return internal::OverflowStatus("A", "A^T B");
  return Status::Ok();
}

Status ScaleScores(MatrixView x, float scale, float softcap) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("x", x));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("x", x));
  if (!std::isfinite(scale)) {
    return Status(ErrorCode::kInvalidArgument, "scale",
                  "expected a finite number, got " + internal::FloatString(scale));
  }
  if (!std::isfinite(softcap) || softcap < 0.0f) {
    return Status(ErrorCode::kInvalidArgument, "softcap",
                  "expected 0 (off) or a finite number > 0, got " + internal::FloatString(softcap));
  }
  if (!internal::RunScaleScores(x, scale, softcap))
    return internal::OverflowStatus("x", "the scaled scores");
  return Status::Ok();
}

Status SoftmaxRows(MatrixView x) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("x", x));
  // -inf marks masked entries; NaN and +inf are errors.
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("x", x, /*allow_neg_inf=*/true));
  if (!internal::RunSoftmaxRows(x)) return internal::OverflowStatus("x", "the softmax of x");
  return Status::Ok();
}

}  // namespace attnkit
