#include "src/core/matrix.h"

#include <algorithm>

namespace attnkit {

Matrix::Matrix(std::initializer_list<std::initializer_list<float>> rows)
    : rows_(rows.size()), cols_(rows.size() ? rows.begin()->size() : 0) {
  data_.reserve(rows_ * cols_);
  for (const auto& row : rows) {
    // Short rows are zero-padded, long rows truncated: the shape is set by the
    // first row.
    size_t c = 0;
    for (float v : row) {
      if (c++ < cols_) data_.push_back(v);
    }
    for (; c < cols_; ++c) data_.push_back(0.0f);
  }
}

Matrix Matrix::Copy(ConstMatrixView v) {
  Matrix m(v.rows, v.cols);
  for (size_t r = 0; r < v.rows; ++r) {
    std::copy(v.Row(r), v.Row(r) + v.cols, m.data() + r * v.cols);
  }
  return m;
}

void Matrix::Reset(size_t rows, size_t cols) {
  rows_ = rows;
  cols_ = cols;
  data_.assign(rows * cols, 0.0f);
}

}  // namespace attnkit
