// attnkit: per-thread kept blocks behind ScratchBuffer (scratch.h).
#include "src/core/scratch.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "src/core/validate.h"

namespace attnkit {
namespace internal {
namespace {

#if defined(__EMSCRIPTEN__)
// WebAssembly memory never gives pages back: its allocator already reuses
// freed blocks, and blocks kept here would only fragment it.
constexpr size_t kKeptFloats = 0;
#else
// At most 64 MiB kept per thread, in at most kKeptBlocks blocks (a layer's
// backward holds a dozen at once).
constexpr size_t kKeptFloats = size_t{1} << 24;
#endif
constexpr size_t kKeptBlocks = 16;
// A kept block serves a request when it wastes at most this many floats
// beyond twice the request (64 KiB): a small request does not take the block
// a large one of the same call would need.
constexpr size_t kSlackFloats = size_t{1} << 14;

struct Block {
  float* data;
  size_t floats;
};

class KeptBlocks {
 public:
  KeptBlocks() = default;
  KeptBlocks(const KeptBlocks&) = delete;
  KeptBlocks& operator=(const KeptBlocks&) = delete;
  ~KeptBlocks() {
    for (size_t i = 0; i < count_; ++i) std::free(blocks_[i].data);
  }

  // The smallest kept block that fits n floats without wasting too much,
  // taken out of the list; {nullptr, 0} if none.
  Block Take(size_t n) {
    size_t best = count_;
    for (size_t i = 0; i < count_; ++i) {
      const size_t f = blocks_[i].floats;
      if (f >= n && f - n <= n + kSlackFloats && (best == count_ || f < blocks_[best].floats)) {
        best = i;
      }
    }
    if (best == count_) return {nullptr, 0};
    const Block b = blocks_[best];
    Remove(best);
    return b;
  }

  // Keeps b, freeing the smallest kept blocks past the bounds; frees b
  // itself if it alone passes them.
  void Keep(Block b) {
    if (b.floats > kKeptFloats) {
      std::free(b.data);
      return;
    }
    while (count_ == kKeptBlocks || floats_ + b.floats > kKeptFloats) {
      size_t smallest = 0;
      for (size_t i = 1; i < count_; ++i) {
        if (blocks_[i].floats < blocks_[smallest].floats) smallest = i;
      }
      std::free(blocks_[smallest].data);
      Remove(smallest);
    }
    blocks_[count_++] = b;
    floats_ += b.floats;
  }

  size_t floats() const { return floats_; }

 private:
  void Remove(size_t i) {
    floats_ -= blocks_[i].floats;
    blocks_[i] = blocks_[--count_];
  }

  Block blocks_[kKeptBlocks] = {};
  size_t count_ = 0;
  size_t floats_ = 0;
};

KeptBlocks& Kept() {
  thread_local KeptBlocks kept;
  return kept;
}

}  // namespace

ScratchBuffer::ScratchBuffer(ScratchBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      capacity_(std::exchange(o.capacity_, 0)) {}

ScratchBuffer& ScratchBuffer::operator=(ScratchBuffer&& o) noexcept {
  if (this != &o) {
    Release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    capacity_ = std::exchange(o.capacity_, 0);
  }
  return *this;
}

bool ScratchBuffer::Allocate(size_t n) {
  Release();
  if (n == 0) return true;
  // n * sizeof(float) wraps past 2^32 bytes in wasm32's size_t: refuse.
  if (n > SIZE_MAX / sizeof(float)) return false;
  Block b = Kept().Take(n);
  if (b.data == nullptr) b = {static_cast<float*>(std::malloc(n * sizeof(float))), n};
  if (b.data == nullptr) return false;
  data_ = b.data;
  size_ = n;
  capacity_ = b.floats;
  return true;
}

void ScratchBuffer::Release() {
  if (data_ != nullptr) Kept().Keep({data_, capacity_});
  data_ = nullptr;
  size_ = capacity_ = 0;
}

Status AllocateScratch(const char* parameter, const char* what, size_t rows, size_t cols, bool zero,
                       ScratchMatrix* m) {
  m->buffer_.Release();
  m->rows_ = m->cols_ = 0;
  size_t n;
  ATTNKIT_RETURN_IF_ERROR(CheckedProduct(parameter, what, rows, cols, &n));
  if (!m->buffer_.Allocate(n)) return OutOfMemory(parameter, what, n);
  m->rows_ = rows;
  m->cols_ = cols;
  if (zero && n) std::memset(m->data(), 0, n * sizeof(float));
  return Status::Ok();
}

size_t KeptScratchFloats() { return Kept().floats(); }

}  // namespace internal
}  // namespace attnkit
