#include "attnkit/matrix.h"

#include <algorithm>

namespace attnkit {

Matrix::Matrix(std::initializer_list<std::initializer_list<float>> rows) {
  // Ragged rows leave the matrix empty (matrix.h).
  const size_t cols = rows.size() ? rows.begin()->size() : 0;
  for (const auto& row : rows) {
    if (row.size() != cols) return;
  }
  if (!Reset(rows.size(), cols)) return;
  size_t r = 0;
  for (const auto& row : rows) {
    size_t c = 0;
    for (float v : row) (*this)(r, c++) = v;
    ++r;
  }
}

Matrix Matrix::Copy(ConstMatrixView v) {
  Matrix m;
  if (!m.Reset(v.rows, v.cols)) return m;
  for (size_t r = 0; r < v.rows; ++r) {
    std::copy(v.Row(r), v.Row(r) + v.cols, m.data() + r * v.cols);
  }
  return m;
}

bool Matrix::Reset(size_t rows, size_t cols) {
  const bool ok = (cols == 0 || rows <= SIZE_MAX / cols) && data_.Allocate(rows * cols);
  rows_ = ok ? rows : 0;
  cols_ = ok ? cols : 0;
  return ok;
}

bool Matrix::ResetForOverwrite(size_t rows, size_t cols) {
  const bool ok =
      (cols == 0 || rows <= SIZE_MAX / cols) && data_.AllocateUninitialized(rows * cols);
  rows_ = ok ? rows : 0;
  cols_ = ok ? cols : 0;
  return ok;
}

}  // namespace attnkit
