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

// Which SIMD targets this build compiled and the CPU supports, and which one
// public operations dispatch to: by default the best; a program (for
// benchmarks, or to debug a result on another target) may force one. In
// WebAssembly there is exactly one (static dispatch).
//
// The environment variable ATTNKIT_TARGET, read once when the library loads,
// forces a target by name as ForceByName does ("AVX2", "sse4"; unset or empty:
// the best). A name that is not available leaves dispatch normal, and
// EnvironmentStatus() says why.
//
// Forcing applies to the whole process: not while other threads call
// attnkit.
namespace targets {
// Highway target bits (HWY_AVX3, HWY_AVX2, ..., HWY_WASM) compiled into this
// build and supported by this CPU, best first; the same while forced.
std::vector<int64_t> Available();
// "AVX3", "AVX2", "SSE4", "WASM", ...
const char* Name(int64_t target);
// The target that public operations currently dispatch to (the forced one,
// while forced).
int64_t Current();
// The forced target, or 0 when dispatch picks the best.
int64_t Forced();
// Dispatches every public operation to `target`, one of Available() (0: back
// to the best). Errors: kInvalidArgument naming "target" if it is not one of
// Available() (not compiled into this build, or not supported by this CPU);
// dispatch is then unchanged.
Status Force(int64_t target);
// As Force, by name as Name gives it, in any case ("avx2"). Errors name "name".
Status ForceByName(const char* name);
// The result of reading ATTNKIT_TARGET: OK if unset, empty or available,
// else the error ForceByName gave, naming "ATTNKIT_TARGET".
Status EnvironmentStatus();
// Force for tests, which force only targets of Available(): errors ignored.
void ForceForTest(int64_t target);
}  // namespace targets

}  // namespace attnkit

#endif  // ATTNKIT_OPS_H_
