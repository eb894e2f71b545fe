#include "src/core/validate.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "attnkit/attention.h"
#include "src/core/attention_options.h"
#include "src/core/internal.h"

namespace attnkit {
namespace internal {
namespace {

std::string Str(size_t v) { return std::to_string(v); }

// True if no value of row [n] is NaN or +-inf (all exponent bits set). Written
// on the bits, without branches, so that the compiler vectorises it. Only
// for inputs that RunAllFinite (the best SIMD target, several times faster
// than this baseline loop) found non-finite: additive masks with -inf, and
// errors.
bool RowFinite(const float* row, size_t n) {
  uint32_t bad = 0;
  for (size_t c = 0; c < n; ++c) {
    uint32_t bits;
    std::memcpy(&bits, row + c, sizeof(bits));
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

}  // namespace

std::string FloatString(float v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", static_cast<double>(v));
  return buf;
}

std::string CountString(size_t n, const char* noun) {
  return Str(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string ShapeString(size_t rows, size_t cols) {
  return "[" + Str(rows) + ", " + Str(cols) + "]";
}

Status CheckedProduct(const char* parameter, const char* what, size_t a, size_t b,
                      size_t* product) {
  if (b != 0 && a > std::numeric_limits<size_t>::max() / b) {
    return Status(ErrorCode::kOverflow, parameter,
                  std::string("expected a size of ") + what + " that fits in size_t, got " +
                      Str(a) + " * " + Str(b) + " which overflows");
  }
  *product = a * b;
  if (*product > kMaxElements) {
    return Status(ErrorCode::kOverflow, parameter,
                  std::string("expected at most 2^28 = ") + Str(kMaxElements) + " elements of " +
                      what + ", got " + Str(a) + " * " + Str(b) + " = " + Str(*product));
  }
  return Status::Ok();
}

Status NullPointer(const char* parameter) {
  return Status(ErrorCode::kInvalidArgument, parameter, "expected a pointer, got null");
}

template <typename T>
Status CheckView(const char* name, MatrixViewT<T> v) {
  const std::string n(name);
  if (v.rows == 0 || v.cols == 0) {
    return Status(ErrorCode::kInvalidArgument, n,
                  "expected a non-empty matrix, got shape " + ShapeString(v.rows, v.cols));
  }
  if (v.data == nullptr) {
    return Status(ErrorCode::kInvalidArgument, n,
                  "expected a data pointer, got null for shape " + ShapeString(v.rows, v.cols));
  }
  if (v.stride < v.cols) {
    return Status(ErrorCode::kInvalidArgument, n,
                  "expected a row stride >= cols = " + Str(v.cols) + ", got " + Str(v.stride));
  }
  size_t span;
  ATTNKIT_RETURN_IF_ERROR(CheckedProduct(name, v.rows, v.stride, &span));
  return Status::Ok();
}
template Status CheckView(const char*, MatrixViewT<float>);
template Status CheckView(const char*, MatrixViewT<const float>);
template Status CheckView(const char*, MatrixViewT<const uint8_t>);

template <typename T>
Status CheckShape(const char* name, MatrixViewT<T> v, size_t rows, size_t cols,
                  const char* rows_note, const char* cols_note) {
  ATTNKIT_RETURN_IF_ERROR(CheckView(name, v));
  const std::string n(name);
  if (v.rows != rows) {
    return Status(ErrorCode::kShapeMismatch, n,
                  "expected " + CountString(rows, "row") + " (" + rows_note + "), got " +
                      Str(v.rows) + " (shape " + ShapeString(v.rows, v.cols) + ")");
  }
  if (v.cols != cols) {
    return Status(ErrorCode::kShapeMismatch, n,
                  "expected " + CountString(cols, "column") + " (" + cols_note + "), got " +
                      Str(v.cols) + " (shape " + ShapeString(v.rows, v.cols) + ")");
  }
  return Status::Ok();
}
template Status CheckShape(const char*, MatrixViewT<float>, size_t, size_t, const char*,
                           const char*);
template Status CheckShape(const char*, MatrixViewT<const float>, size_t, size_t, const char*,
                           const char*);
template Status CheckShape(const char*, MatrixViewT<const uint8_t>, size_t, size_t, const char*,
                           const char*);

Status CheckFinite(const char* name, ConstMatrixView v, bool allow_neg_inf, ThreadPool* pool) {
  std::atomic<bool> finite{true};
  ParallelRanges(pool, v.rows, 16, [&](size_t r0, size_t r1) {
    if (!RunAllFinite(v.Block(r0, r1 - r0, 0, v.cols))) {
      finite.store(false, std::memory_order_relaxed);
    }
  });
  if (finite.load()) return Status::Ok();
  // Find the first value not allowed, row by row.
  for (size_t r = 0; r < v.rows; ++r) {
    const float* row = v.Row(r);
    if (RowFinite(row, v.cols)) continue;
    for (size_t c = 0; c < v.cols; ++c) {
      const float x = row[c];
      if (std::isfinite(x) || (allow_neg_inf && x == -std::numeric_limits<float>::infinity())) {
        continue;
      }
      return Status(ErrorCode::kNonFinite, name,
                    std::string("expected finite values") + (allow_neg_inf ? " or -inf" : "") +
                        ", got " + FloatString(x) + " at (" + Str(r) + ", " + Str(c) + ")");
    }
  }
  return Status::Ok();
}

Status CheckQKV(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V) {
  ATTNKIT_RETURN_IF_ERROR(CheckView("Q", Q));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("K", K, K.rows, Q.cols, "T_k", "d_k, the columns of Q"));
  ATTNKIT_RETURN_IF_ERROR(CheckShape("V", V, K.rows, V.cols, "T_k, the rows of K", "d_v"));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("Q", Q));
  ATTNKIT_RETURN_IF_ERROR(CheckFinite("K", K));
  return CheckFinite("V", V);
}

Status CheckNoOverlap(const char* out_name, ConstMatrixView out, const char* in_name,
                      ConstMatrixView in) {
  if (Disjoint(out, in)) return Status::Ok();
  return Status(
      ErrorCode::kInvalidArgument, out_name,
      std::string("expected memory separate from ") + in_name + ", got an overlapping view");
}

Status CheckOutputsApart(const NamedView* out_begin, const NamedView* out_end,
                         const NamedView* in_begin, const NamedView* in_end) {
  const Overlap o = FirstOverlap(out_begin, out_end, in_begin, in_end);
  if (o.out == nullptr) return Status::Ok();
  return CheckNoOverlap(o.out->name, o.out->view, o.with->name, o.with->view);
}

bool DisjointInterleaved(ConstMatrixView out, ConstMatrixView in) {
  // Views with one row stride that take disjoint column ranges of the same
  // rows (e.g. Q, K and V as column blocks of one [T, 3d] buffer) never share
  // an element, even though their address ranges interleave.
  const auto a0 = reinterpret_cast<uintptr_t>(out.data), b0 = reinterpret_cast<uintptr_t>(in.data);
  if (out.stride == in.stride && a0 % sizeof(float) == 0 && b0 % sizeof(float) == 0) {
    // Column positions on a circle of length s: `in` starts d after `out`.
    const size_t s = out.stride;
    const ptrdiff_t delta = static_cast<ptrdiff_t>(b0 - a0) / static_cast<ptrdiff_t>(sizeof(float));
    const ptrdiff_t ss = static_cast<ptrdiff_t>(s);
    const size_t d = static_cast<size_t>(((delta % ss) + ss) % ss);
    if (out.cols <= d && d + in.cols <= s) return true;
  }
  return false;
}

namespace {

// The rows of (item, head) of a mask checked by CheckOptions: [T_q, cols], with
// row stride 0 when one row serves every query.
template <typename T>
MatrixViewT<T> MaskSlice(MatrixViewT<T> m, MaskLayout layout, size_t item, size_t head,
                         size_t T_q) {
  const size_t blocks = layout.batch * layout.heads;
  const size_t queries = m.rows / blocks;
  const size_t block =
      (layout.batch == 1 ? 0 : item) * layout.heads + (layout.heads == 1 ? 0 : head);
  return MatrixViewT<T>(m.data + block * queries * m.stride, T_q, m.cols,
                        queries == 1 ? 0 : m.stride);
}

}  // namespace

ScoreParams ScoreParamsOf(const AttentionOptions& o, size_t default_scale_dim) {
  ScoreParams params;
  params.scale = o.scale.has_value()
                     ? *o.scale
                     : static_cast<float>(1.0 / std::sqrt(static_cast<double>(default_scale_dim)));
  params.softcap = o.softcap;
  params.causal = o.causal;
  return params;
}

Status CheckOptions(const AttentionOptions& o, size_t T_q, size_t T_k, bool batched, size_t batch,
                    size_t num_heads) {
  return CheckAttentionOptions(o, OptionShapes{T_q, T_k, batched, batch, num_heads});
}

size_t KeyLength(const AttentionOptions& o, size_t item, size_t T_k) {
  if (!o.key_lengths.empty()) return o.key_lengths[item];
  return o.key_length.value_or(T_k);
}

void SetHeadMasks(const AttentionOptions& o, size_t item, size_t head, HeadTask* t) {
  const size_t T_q = t->Q.rows, T_k = t->K.rows;
  size_t keys = std::min(KeyLength(o, item, T_k), T_k);
  t->bool_mask = MaskView();
  t->additive_mask = ConstMatrixView();
  if (!o.bool_mask.empty()) {
    t->bool_mask = MaskSlice(o.bool_mask, o.bool_mask_layout, item, head, T_q);
    keys = std::min(keys, o.bool_mask.cols);
  }
  if (!o.additive_mask.empty()) {
    t->additive_mask = MaskSlice(o.additive_mask, o.additive_mask_layout, item, head, T_q);
    keys = std::min(keys, o.additive_mask.cols);
  }
  t->key_length = keys;
  // Offsets beyond [-T_q, T_k] see the same keys as those bounds: clamping
  // keeps i + 1 + offset within ptrdiff_t.
  int64_t offset = static_cast<int64_t>(T_k) - static_cast<int64_t>(T_q);
  if (o.causal_alignment == CausalAlignment::kUpperLeft) {
    offset = o.causal_offsets.empty() ? o.causal_offset : o.causal_offsets[item];
    offset = std::max<int64_t>(-static_cast<int64_t>(T_q), std::min<int64_t>(offset, T_k));
  }
  t->causal_offset = static_cast<ptrdiff_t>(offset);
}

HeadTask OneHead(ConstMatrixView Q, ConstMatrixView K, ConstMatrixView V,
                 const AttentionOptions& options, MatrixView out, MatrixView lse) {
  HeadTask head;
  head.Q = Q;
  head.K = K;
  head.V = V;
  head.out = out;
  head.lse = lse;
  SetHeadMasks(options, 0, 0, &head);
  return head;
}

Status Allocate(const char* parameter, const char* what, size_t rows, size_t cols, Matrix* m) {
  size_t n;
  ATTNKIT_RETURN_IF_ERROR(CheckedProduct(parameter, what, rows, cols, &n));
  if (!m->Reset(rows, cols)) return OutOfMemory(parameter, what, n);
  return Status::Ok();
}

Status AllocateCopy(const char* parameter, const char* what, ConstMatrixView v, Matrix* m) {
  ATTNKIT_RETURN_IF_ERROR(Allocate(parameter, what, v.rows, v.cols, m));
  for (size_t r = 0; r < v.rows; ++r) {
    std::copy(v.Row(r), v.Row(r) + v.cols, m->data() + r * v.cols);
  }
  return Status::Ok();
}

Status OutOfMemory(const char* parameter, const char* what, size_t floats) {
  return Status(
      ErrorCode::kOverflow, parameter,
      "expected memory for " + Str(floats) + " floats of " + what + ", got an allocation failure");
}

Status OverflowStatus(const char* parameter, const char* what) {
  return Status(ErrorCode::kOverflow, parameter,
                std::string("expected ") + what +
                    " within float range, got an overflow (inf or NaN) from finite inputs; "
                    "scale the inputs down");
}

}  // namespace internal
}  // namespace attnkit
