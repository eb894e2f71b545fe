// attnkit: row-major float32 matrices. A view is (pointer, rows, cols, row
// stride in elements); it never owns memory. Matrix owns its storage and hands
// out views. Batched and multi-head tensors are stored as stacked 2-D
// matrices, e.g. [batch, seq_len, d_model] as [batch * seq_len, d_model] and
// [num_heads, seq_len, d_k] as [num_heads * seq_len, d_k].
#ifndef ATTNKIT_MATRIX_H_
#define ATTNKIT_MATRIX_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <memory>

namespace attnkit {

// Element (r, c) lives at data[r * stride + c]; stride >= cols.
template <typename T>
struct MatrixViewT {
  T* data = nullptr;
  size_t rows = 0;
  size_t cols = 0;
  size_t stride = 0;

  MatrixViewT() = default;
  MatrixViewT(T* data_, size_t rows_, size_t cols_)
      : data(data_), rows(rows_), cols(cols_), stride(cols_) {}
  MatrixViewT(T* data_, size_t rows_, size_t cols_, size_t stride_)
      : data(data_), rows(rows_), cols(cols_), stride(stride_) {}
  // A mutable view converts to a const one.
  template <typename U>
  MatrixViewT(const MatrixViewT<U>& o)  // NOLINT(google-explicit-constructor)
      : data(o.data), rows(o.rows), cols(o.cols), stride(o.stride) {}

  bool empty() const { return data == nullptr && rows == 0 && cols == 0; }
  T* Row(size_t r) const { return data + r * stride; }
  T& operator()(size_t r, size_t c) const { return data[r * stride + c]; }
  // Rows [row0, row0 + num_rows) and columns [col0, col0 + num_cols).
  MatrixViewT Block(size_t row0, size_t num_rows, size_t col0, size_t num_cols) const {
    return MatrixViewT(data + row0 * stride + col0, num_rows, num_cols, stride);
  }
};

using MatrixView = MatrixViewT<float>;
using ConstMatrixView = MatrixViewT<const float>;
// A boolean mask [T_q, T_k]: nonzero = may attend, 0 = masked out.
using MaskView = MatrixViewT<const uint8_t>;

// Zero-initialised floats from calloc: allocation failure is reported (empty
// buffer), never an exception or an abort, natively and in WebAssembly.
class FloatBuffer {
 public:
  FloatBuffer() = default;
  // Returns false (and leaves the buffer empty) if the memory is not there.
  bool Allocate(size_t n) {
    data_.reset(n ? static_cast<float*>(std::calloc(n, sizeof(float))) : nullptr);
    size_ = data_ ? n : 0;
    return data_ != nullptr || n == 0;
  }
  // As Allocate, without zeroing: for workspaces whose every float is written
  // before it is read, where zeroing would be most of a small call's cost.
  bool AllocateUninitialized(size_t n) {
    // n * sizeof(float) wraps past 2^32 bytes in wasm32's size_t: refuse, as calloc does.
    if (n > SIZE_MAX / sizeof(float)) {
      data_.reset();
      size_ = 0;
      return false;
    }
    data_.reset(n ? static_cast<float*>(std::malloc(n * sizeof(float))) : nullptr);
    size_ = data_ ? n : 0;
    return data_ != nullptr || n == 0;
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> data_;
  size_t size_ = 0;
};

// Owning, contiguous (stride == cols), zero-initialised. If memory cannot be
// had, a constructor or Reset leaves the matrix empty (0 x 0).
class Matrix {
 public:
  Matrix() = default;
  Matrix(size_t rows, size_t cols) { Reset(rows, cols); }
  // Matrix m = {{1, 2}, {3, 4}}. Rows of unequal length ({{1, 2, 3}, {4}})
  // give an empty matrix (0 x 0), as a failed allocation does: no row is
  // padded or cut, and every operation given it returns a Status naming the
  // parameter ("expected a non-empty matrix, got shape [0, 0]").
  Matrix(std::initializer_list<std::initializer_list<float>> rows);

  // Copies any view into a new contiguous matrix (empty if out of memory).
  static Matrix Copy(ConstMatrixView v);
  Matrix(Matrix&&) = default;
  Matrix& operator=(Matrix&&) = default;
  Matrix(const Matrix& o) : Matrix(Copy(o)) {}
  Matrix& operator=(const Matrix& o) { return *this = Copy(o); }

  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }
  size_t size() const { return rows_ * cols_; }
  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  float& operator()(size_t r, size_t c) { return data()[r * cols_ + c]; }
  float operator()(size_t r, size_t c) const { return data()[r * cols_ + c]; }

  MatrixView view() { return MatrixView(data_.data(), rows_, cols_); }
  ConstMatrixView view() const { return ConstMatrixView(data_.data(), rows_, cols_); }
  operator MatrixView() { return view(); }             // NOLINT
  operator ConstMatrixView() const { return view(); }  // NOLINT

  // Changes the shape; contents become zero. Returns false (matrix empty) if
  // the memory is not there.
  bool Reset(size_t rows, size_t cols);
  // As Reset, with the contents left unset: for a caller that writes every
  // value before it reads any, where zeroing would make all of a large
  // matrix's memory resident at once (a checkpoint's weights, which arrive
  // one tensor after another).
  bool ResetForOverwrite(size_t rows, size_t cols);

 private:
  size_t rows_ = 0;
  size_t cols_ = 0;
  FloatBuffer data_;
};

}  // namespace attnkit

#endif  // ATTNKIT_MATRIX_H_
