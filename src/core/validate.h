// attnkit: argument checks shared by the public operations. Every message
// names the parameter, what was expected and what was given.
#ifndef ATTNKIT_VALIDATE_H_
#define ATTNKIT_VALIDATE_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "attnkit/matrix.h"
#include "attnkit/status.h"
#include "hwy/base.h"  // HWY_INLINE
#include "src/core/internal.h"

namespace attnkit {

struct AttentionOptions;  // attention.h

namespace internal {

// The largest matrix (in elements) attnkit accepts or allocates: 2^28 floats
// (1 GiB). Larger requests fail with ErrorCode::kOverflow instead of
// exhausting memory.
constexpr size_t kMaxElements = size_t{1} << 28;

// "1 row", "3 rows"
std::string CountString(size_t n, const char* noun);

// "[3, 4]"
std::string ShapeString(size_t rows, size_t cols);

// "0.5", "nan", "-inf"
std::string FloatString(float v);

// a * b, or an error naming `parameter` if it overflows or exceeds
// kMaxElements; `what` says what the product counts ("cached keys").
Status CheckedProduct(const char* parameter, const char* what, size_t a, size_t b, size_t* product);
// As above, where the product is the parameter's own size.
inline Status CheckedProduct(const char* parameter, size_t a, size_t b, size_t* product) {
  return CheckedProduct(parameter, parameter, a, b, product);
}

// Every public pointer parameter that must not be null goes through this:
// kInvalidArgument naming `parameter`, "expected a pointer, got null".
Status NullPointer(const char* parameter);
inline Status CheckPointer(const char* parameter, const void* p) {
  return p != nullptr ? Status::Ok() : NullPointer(parameter);
}

// A usable view: non-null, rows and cols > 0, stride >= cols, size in range.
template <typename T>
Status CheckView(const char* name, MatrixViewT<T> v);

// CheckView plus the exact shape. `rows_note` / `cols_note` say where the
// expected number comes from, e.g. "d_model, the columns of X".
template <typename T>
Status CheckShape(const char* name, MatrixViewT<T> v, size_t rows, size_t cols,
                  const char* rows_note, const char* cols_note);

// Every value finite (additive masks may also hold -inf). With a pool (a
// call large enough for it, PoolFor), bands of rows are checked on its
// threads; the error is the same.
Status CheckFinite(const char* name, ConstMatrixView v, bool allow_neg_inf = false,
                   ThreadPool* pool = nullptr);

// Q [T_q, d_k], K [T_k, d_k], V [T_k, d_v] of one head: shapes and finite values.
Status CheckQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V);

// The lean paths' twins of the checks above: true where the check would
// pass, with no Status built (a small call makes dozens of them); a lean path
// runs only when every twin holds, and otherwise the checks name the failure.

// CheckView would pass: non-null, rows and cols > 0, stride >= cols, size in
// range.
template <typename T>
bool ViewUsable(MatrixViewT<T> v) {
  return v.rows != 0 && v.cols != 0 && v.data != nullptr && v.stride >= v.cols &&
         v.rows <= kMaxElements / v.stride;
}

// CheckShape would pass.
template <typename T>
bool ShapeUsable(MatrixViewT<T> v, size_t rows, size_t cols) {
  return ViewUsable(v) && v.rows == rows && v.cols == cols;
}

// CheckQKV's shapes would pass (its finiteness is not tested).
inline bool QKVUsable(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V) {
  return ViewUsable(Q) && ShapeUsable(K, K.rows, Q.cols) && ShapeUsable(V, K.rows, V.cols);
}

// a and b (usable views) share no element when their address ranges do not
// meet, tested here, else the exact test (strided views may interleave).
bool DisjointInterleaved(ConstMatrixView a, ConstMatrixView b);
HWY_INLINE bool Disjoint(ConstMatrixView a, ConstMatrixView b) {
  // Compare as integers: pointers into different arrays are not ordered.
  const auto a0 = reinterpret_cast<uintptr_t>(a.data), b0 = reinterpret_cast<uintptr_t>(b.data);
  const auto a1 = reinterpret_cast<uintptr_t>(a.data + (a.rows - 1) * a.stride + a.cols);
  const auto b1 = reinterpret_cast<uintptr_t>(b.data + (b.rows - 1) * b.stride + b.cols);
  return !(a0 < b1 && b0 < a1) || DisjointInterleaved(a, b);
}

// `out` must not share memory with `in`.
Status CheckNoOverlap(const char* out_name, ConstMatrixView out, const char* in_name,
                      ConstMatrixView in);

// A view under its parameter's name.
struct NamedView {
  const char* name;
  ConstMatrixView view;
};

// The first output of [out_begin, out_end) that shares memory with an input
// or another output, and that view (nulls if none).
struct Overlap {
  const NamedView* out = nullptr;
  const NamedView* with = nullptr;
};
inline Overlap FirstOverlap(const NamedView* out_begin, const NamedView* out_end,
                            const NamedView* in_begin, const NamedView* in_end) {
  for (const NamedView* out = out_begin; out != out_end; ++out) {
    for (const NamedView* in = in_begin; in != in_end; ++in) {
      if (!Disjoint(out->view, in->view)) return {out, in};
    }
    for (const NamedView* other = out_begin; other != out_end; ++other) {
      if (other != out && !Disjoint(out->view, other->view)) return {out, other};
    }
  }
  return {};
}

// Every output apart from every input and from the other outputs
// (CheckOutputsApart would pass).
inline bool OutputsApart(std::initializer_list<NamedView> outputs,
                         std::initializer_list<NamedView> inputs) {
  return FirstOverlap(outputs.begin(), outputs.end(), inputs.begin(), inputs.end()).out == nullptr;
}

// Every output apart from every input and from the other outputs: else
// kInvalidArgument naming the first output that overlaps (CheckNoOverlap).
Status CheckOutputsApart(const NamedView* out_begin, const NamedView* out_end,
                         const NamedView* in_begin, const NamedView* in_end);
inline Status CheckOutputsApart(std::initializer_list<NamedView> outputs,
                                std::initializer_list<NamedView> inputs) {
  return CheckOutputsApart(outputs.begin(), outputs.end(), inputs.begin(), inputs.end());
}

// Checks options against the shapes of one head [T_q, T_k], `batch` items
// and `num_heads` query heads (1 and 1 for single-head calls): each option's
// check (attention_options.h), in the table's order. `batched`: whether
// options.key_lengths and causal_offsets may be used (key_lengths: 0 or
// `batch` of them).
Status CheckOptions(const AttentionOptions& options, size_t T_q, size_t T_k, bool batched,
                    size_t batch, size_t num_heads);

// The score parameters of options checked by CheckOptions: the scale (by
// default 1/sqrt(default_scale_dim)), softcap and causal.
ScoreParams ScoreParamsOf(const AttentionOptions& options, size_t default_scale_dim);

// The key length of batch item `item` (all keys if no padding is set).
size_t KeyLength(const AttentionOptions& options, size_t item, size_t T_k);

// Sets t's key length, causal offset and mask slices for (item, head) from
// options checked by CheckOptions; t->Q and t->K must be set.
void SetHeadMasks(const AttentionOptions& options, size_t item, size_t head, HeadTask* t);

// The head of a single-head call: Q, K, V, its output `out` (and log-sum-exp
// `lse`, empty if not kept), and the masks of options checked by CheckOptions.
HeadTask OneHead(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                 const AttentionOptions& options, MatrixView out, MatrixView lse = MatrixView());

// m = zeros [rows, cols] holding `what`, or kOverflow naming `parameter` (the
// input whose size sets it) if the size is out of range or the memory is not
// there.
Status Allocate(const char* parameter, const char* what, size_t rows, size_t cols, Matrix* m);

// m = a contiguous copy of v, or kOverflow as Allocate.
Status AllocateCopy(const char* parameter, const char* what, ConstMatrixView v, Matrix* m);

// kOverflow: `floats` floats for `what` (sized by `parameter`) could not be
// allocated.
Status OutOfMemory(const char* parameter, const char* what, size_t floats);

// kOverflow: `what` (computed from `parameter`) overflowed float.
Status OverflowStatus(const char* parameter, const char* what);

}  // namespace internal
}  // namespace attnkit

#endif  // ATTNKIT_VALIDATE_H_
