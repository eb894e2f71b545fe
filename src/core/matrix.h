// attnkit: row-major float32 matrices. A view is (pointer, rows, cols, row
// stride in elements); it never owns memory. Matrix owns its storage and hands
// out views. Batched and multi-head tensors are stored as stacked 2-D
// matrices, e.g. [batch, seq_len, d_model] as [batch * seq_len, d_model] and
// [num_heads, seq_len, d_k] as [num_heads * seq_len, d_k].
#ifndef ATTNKIT_MATRIX_H_
#define ATTNKIT_MATRIX_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

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
  MatrixViewT Block(size_t row0, size_t num_rows, size_t col0,
                    size_t num_cols) const {
    return MatrixViewT(data + row0 * stride + col0, num_rows, num_cols, stride);
  }
};

using MatrixView = MatrixViewT<float>;
using ConstMatrixView = MatrixViewT<const float>;
// A boolean mask [T_q, T_k]: nonzero = may attend, 0 = masked out.
using MaskView = MatrixViewT<const uint8_t>;

// Owning, contiguous (stride == cols), zero-initialised.
class Matrix {
 public:
  Matrix() = default;
  Matrix(size_t rows, size_t cols) : rows_(rows), cols_(cols), data_(rows * cols) {}
  // Matrix m = {{1, 2}, {3, 4}}; rows must have equal length.
  Matrix(std::initializer_list<std::initializer_list<float>> rows);

  // Copies any view into a new contiguous matrix.
  static Matrix Copy(ConstMatrixView v);

  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }
  size_t size() const { return data_.size(); }
  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  float& operator()(size_t r, size_t c) { return data_[r * cols_ + c]; }
  float operator()(size_t r, size_t c) const { return data_[r * cols_ + c]; }

  MatrixView view() { return MatrixView(data_.data(), rows_, cols_); }
  ConstMatrixView view() const { return ConstMatrixView(data_.data(), rows_, cols_); }
  operator MatrixView() { return view(); }              // NOLINT
  operator ConstMatrixView() const { return view(); }   // NOLINT

  // Changes the shape; contents become zero.
  void Reset(size_t rows, size_t cols);

 private:
  size_t rows_ = 0;
  size_t cols_ = 0;
  std::vector<float> data_;
};

}  // namespace attnkit

#endif  // ATTNKIT_MATRIX_H_
