// attnkit: the temporary memory of one call, drawn from blocks the calling
// thread keeps between calls.
//
// Why: a call's temporaries (packed operands, projections, the attention
// plan's workspace) are allocated and freed on every call. An allocator that
// gives freed blocks back to the system (glibc trims its heap's top and
// unmaps large blocks) makes the next call fault every page in again, a cost
// of the order of the call's own work, and one that depends on the process's
// heap history. Each thread keeps its freed blocks up to a bound instead.
#ifndef ATTNKIT_SCRATCH_H_
#define ATTNKIT_SCRATCH_H_

#include <cstddef>

#include "attnkit/matrix.h"
#include "attnkit/status.h"

namespace attnkit {
namespace internal {

// Floats whose contents are undefined until written, returned to the kept
// blocks of the thread that destroys it. Move-only.
class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(ScratchBuffer&& o) noexcept;
  ScratchBuffer& operator=(ScratchBuffer&& o) noexcept;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { Release(); }

  // n floats (a kept block if one fits, else new memory); false, and nothing
  // held, if the memory is not there.
  bool Allocate(size_t n);
  // Gives the block back to this thread's kept blocks.
  void Release();
  float* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  float* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// A contiguous [rows, cols] matrix of scratch floats (stride == cols).
class ScratchMatrix {
 public:
  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }
  float* data() const { return buffer_.data(); }
  MatrixView view() const { return MatrixView(data(), rows_, cols_, cols_); }
  operator ConstMatrixView() const { return ConstMatrixView(data(), rows_, cols_, cols_); }

 private:
  friend Status AllocateScratch(const char*, const char*, size_t, size_t, bool, ScratchMatrix*);
  ScratchBuffer buffer_;
  size_t rows_ = 0, cols_ = 0;
};

// m = a [rows, cols] scratch matrix, zeroed if `zero`; an error naming
// `parameter` and `what` if its size overflows or the memory is not there.
Status AllocateScratch(const char* parameter, const char* what, size_t rows, size_t cols, bool zero,
                       ScratchMatrix* m);

// The floats the calling thread keeps (for tests).
size_t KeptScratchFloats();

}  // namespace internal
}  // namespace attnkit

#endif  // ATTNKIT_SCRATCH_H_
