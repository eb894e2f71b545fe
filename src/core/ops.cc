// attnkit: the public kernel operations: check arguments, dispatch once.
#include "attnkit/ops.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "src/core/internal.h"
#include "src/core/plan.h"
#include "src/core/scratch.h"
#include "src/core/validate.h"

namespace attnkit {

using internal::CheckFinite;
using internal::CheckNoOverlap;
using internal::CheckShape;
using internal::CheckView;

namespace {

enum class Product { kAB, kABt, kAtB };

// The checks of C = A B, A B^T or A^T B: the views, the shapes, with
// scan_inputs A and B free of NaN and inf, and C apart from both.
Status CheckProduct(Product kind, ConstMatrixView A, ConstMatrixView B, MatrixView C,
                    bool scan_inputs) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("A", A));
  switch (kind) {
    case Product::kAB:
      ATTNKIT_RETURN_IF_ERROR(CheckShape("B", B, A.cols, B.cols, "K, the columns of A", "N"));
      ATTNKIT_RETURN_IF_ERROR(
          CheckShape("C", C, A.rows, B.cols, "M, the rows of A", "N, the columns of B"));
      break;
    case Product::kABt:
      ATTNKIT_RETURN_IF_ERROR(CheckShape("B", B, B.rows, A.cols, "N", "K, the columns of A"));
      ATTNKIT_RETURN_IF_ERROR(
          CheckShape("C", C, A.rows, B.rows, "M, the rows of A", "N, the rows of B"));
      break;
    case Product::kAtB:
      ATTNKIT_RETURN_IF_ERROR(CheckShape("B", B, A.rows, B.cols, "K, the rows of A", "N"));
      ATTNKIT_RETURN_IF_ERROR(
          CheckShape("C", C, A.cols, B.cols, "M, the columns of A", "N, the columns of B"));
      break;
  }
  if (scan_inputs) {
    ATTNKIT_RETURN_IF_ERROR(CheckFinite("A", A));
    ATTNKIT_RETURN_IF_ERROR(CheckFinite("B", B));
  }
  ATTNKIT_RETURN_IF_ERROR(CheckNoOverlap("C", C, "A", A));
  return CheckNoOverlap("C", C, "B", B);
}

// C's error when it holds inf or NaN: from scanned inputs an overflow; from
// inputs promised finite (FiniteInputs) an overflow or a broken promise.
Status NonFiniteProduct(const char* what, bool scanned_inputs) {
  if (scanned_inputs) return internal::OverflowStatus("A", what);
  return Status(ErrorCode::kOverflow, "A",
                std::string("expected ") + what +
                    " within float range, got inf or NaN: the product overflowed, or A or B "
                    "(promised finite by FiniteInputs) holds inf or NaN");
}

// The product after its checks: the right-hand factor packed in panels, a
// few at a time into room for kMaxPanel columns, when C has enough rows to
// repay the pass (internal::PacksB), then one dispatch. The kernels
// check C's finiteness as they store it.
Status RunProduct(Product kind, ConstMatrixView A, ConstMatrixView B, MatrixView C,
                  bool scanned_inputs) {
  const size_t K = kind == Product::kABt ? B.cols : B.rows;
  const char* packed_name = kind == Product::kABt ? "B^T packed in panels" : "B packed in panels";
  internal::ScratchBuffer packed;  // every float the kernels read is written by the packing
  if (internal::PacksB(C.rows, kind == Product::kAtB)) {
    size_t n;
    ATTNKIT_RETURN_IF_ERROR(internal::CheckedProduct("B", packed_name, K, internal::kMaxPanel, &n));
    if (!packed.Allocate(n)) return internal::OutOfMemory("B", packed_name, n);
  }
  switch (kind) {
    case Product::kAB:
      if (!internal::RunMatMul(A, B, C, packed.data())) {
        return NonFiniteProduct("A B", scanned_inputs);
      }
      break;
    case Product::kABt:
      if (!internal::RunMatMulTransposed(A, B, C, packed.data())) {
        return NonFiniteProduct("A B^T", scanned_inputs);
      }
      break;
    case Product::kAtB:
      if (!internal::RunMatMulTransposedA(A, B, C, packed.data())) {
        return NonFiniteProduct("A^T B", scanned_inputs);
      }
      break;
  }
  return Status::Ok();
}

Status Multiply(Product kind, ConstMatrixView A, ConstMatrixView B, MatrixView C,
                bool scan_inputs) {
  ATTNKIT_RETURN_IF_ERROR(CheckProduct(kind, A, B, C, scan_inputs));
  return RunProduct(kind, A, B, C, scan_inputs);
}

}  // namespace

Status MatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  return Multiply(Product::kAB, A, B, C, /*scan_inputs=*/true);
}
Status MatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C, FiniteInputs) {
  return Multiply(Product::kAB, A, B, C, /*scan_inputs=*/false);
}

Status MatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  return Multiply(Product::kABt, A, B, C, /*scan_inputs=*/true);
}
Status MatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C, FiniteInputs) {
  return Multiply(Product::kABt, A, B, C, /*scan_inputs=*/false);
}

Status MatMulTransposedA(ConstMatrixView A, ConstMatrixView B, MatrixView C) {
  return Multiply(Product::kAtB, A, B, C, /*scan_inputs=*/true);
}
Status MatMulTransposedA(ConstMatrixView A, ConstMatrixView B, MatrixView C, FiniteInputs) {
  return Multiply(Product::kAtB, A, B, C, /*scan_inputs=*/false);
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
