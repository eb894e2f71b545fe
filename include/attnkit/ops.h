// attnkit: the kernels attention is built from, each a public operation that
// checks its arguments and then dispatches once to the best SIMD target
// (Highway dynamic dispatch natively, static SIMD128 in WebAssembly).
#ifndef ATTNKIT_OPS_H_
#define ATTNKIT_OPS_H_

#include <cstdint>
#include <vector>

#include "attnkit/matrix.h"
#include "attnkit/status.h"

namespace attnkit {

// C = A B.     A [M, K], B [K, N] -> C [M, N]. C must not alias A or B.
Status MatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C);

// C = A B^T.   A [M, K], B [N, K] -> C [M, N] (Q K^T). C must not alias A or B.
Status MatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C);

// C = A^T B.   A [K, M], B [K, N] -> C [M, N] (a weight's gradient X^T dY,
// summed over the K rows of a batch). C must not alias A or B.
Status MatMulTransposedA(ConstMatrixView A, ConstMatrixView B, MatrixView C);

// The promise of a caller whose A and B hold no NaN or inf by construction
// (a model's own weights and activations): MatMul(A, B, C, FiniteInputs{})
// and the two others skip their scans of A and B. Shapes and aliasing are
// still checked, and C's finiteness too (inside the product's kernel): a NaN
// or inf in A or B makes C non-finite, so a broken promise is reported as
// kOverflow, never a silent NaN.
struct FiniteInputs {};
Status MatMul(ConstMatrixView A, ConstMatrixView B, MatrixView C, FiniteInputs);
Status MatMulTransposed(ConstMatrixView A, ConstMatrixView B, MatrixView C, FiniteInputs);
Status MatMulTransposedA(ConstMatrixView A, ConstMatrixView B, MatrixView C, FiniteInputs);

// In place: s -> s * scale, then if softcap > 0, s -> softcap * tanh(s / softcap).
// x [M, N]; every value must be finite; scale finite; softcap 0 or finite > 0.
Status ScaleScores(MatrixView x, float scale, float softcap);

// In place, per row: p_j = exp(s_j - max_j s) / sum_j exp(s_j - max_j s).
// -inf entries mean "masked" and get weight exactly 0. A row whose entries are
// all -inf (fully masked) becomes all zeros, never NaN. x [M, N]; NaN and +inf
// are rejected.
Status SoftmaxRows(MatrixView x);

// Which SIMD targets this build compiled and the CPU supports, for tests and
// benchmarks. In WebAssembly there is exactly one (static dispatch).
namespace targets {
// Highway target bits (HWY_AVX3, HWY_AVX2, ..., HWY_WASM), best first.
std::vector<int64_t> Available();
// "AVX3", "AVX2", "SSE4", "WASM", ...
const char* Name(int64_t target);
// The target that public operations currently dispatch to.
int64_t Current();
// Restricts dispatch to `target` (0 restores normal dispatch). Natively this
// calls hwy::SetSupportedTargetsForTest; in WebAssembly it is a no-op.
void ForceForTest(int64_t target);
}  // namespace targets

}  // namespace attnkit

#endif  // ATTNKIT_OPS_H_
