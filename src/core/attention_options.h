// attnkit: the attention options (AttentionOptions, attention.h), one entry
// each, in the order of the JS schema (ATTENTION_OPTIONS, src/js/options.js):
// its words in a call's argument block, how they are read, and its check with
// the error's parameter and words. CheckOptions (validate.cc) runs the checks
// in this order; the bindings read the words (bindings.cc) and export them
// (optionLayout), which tests/js/option-layout.test.js compares with the JS
// schema. Adding an option: its field in AttentionOptions, one entry here
// (attention_options.cc), its kernel.
#ifndef ATTNKIT_ATTENTION_OPTIONS_H_
#define ATTNKIT_ATTENTION_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "attnkit/attention.h"
#include "attnkit/matrix.h"
#include "attnkit/status.h"

namespace attnkit {
namespace internal {

// A cursor over the 32-bit words of an argument block that the JS layer
// writes into wasm memory: a float is its bits, an address a 32-bit pointer
// (0 = none), a matrix 3 words [address, rows, cols].
class ArgWords {
 public:
  explicit ArgWords(const uint32_t* w) : w_(w) {}

  uint32_t Word() { return *w_++; }
  float Float() {
    float f;
    std::memcpy(&f, w_++, sizeof(f));
    return f;
  }
  template <typename T>
  T* Address() {
    return reinterpret_cast<T*>(static_cast<uintptr_t>(Word()));
  }
  template <typename T>
  MatrixViewT<T> View() {
    T* const data = Address<T>();
    const uint32_t rows = Word(), cols = Word();
    if (data == nullptr) return MatrixViewT<T>();
    return MatrixViewT<T>(data, rows, cols);
  }
  // An array of `W`s: [address, count].
  template <typename W, typename T>
  void Array(std::vector<T>* values) {
    const W* const data = Address<const W>();
    const uint32_t count = Word();
    if (count == 0) {
      values->clear();  // the usual case: no call into the vector's assign
    } else {
      values->assign(data, data + count);
    }
  }
  // The next word to read.
  const uint32_t* position() const { return w_; }

  // [batch, heads] of a mask tensor
  MaskLayout Layout() {
    MaskLayout layout;
    layout.batch = Word();
    layout.heads = Word();
    return layout;
  }

 private:
  const uint32_t* w_;
};

// The shapes a call's options are checked against: one head [T_q, T_k],
// `batch` items and `num_heads` query heads (1 and 1 for single-head calls);
// `batched`: whether key_lengths and causal_offsets may be used.
struct OptionShapes {
  size_t T_q, T_k;
  bool batched;
  size_t batch, num_heads;
};

struct AttentionOptionEntry {
  // Its words' names, comma-separated (the JS schema's `words`).
  const char* words;
  // Reads them into o. Absent options arrive as their defaults.
  void (*read)(ArgWords& a, AttentionOptions* o);
  // Its check against the call's shapes, or null if any value is valid.
  Status (*check)(const AttentionOptions& o, const OptionShapes& shapes);
};

// The table, in the JS schema's order.
struct AttentionOptionTable {
  const AttentionOptionEntry* first;
  size_t size;
  const AttentionOptionEntry* begin() const { return first; }
  const AttentionOptionEntry* end() const { return first + size; }
};
AttentionOptionTable AttentionOptionEntries();

// Every entry's words read into *o, in the table's order.
void ReadAttentionOptions(ArgWords& a, AttentionOptions* o);

// Every entry's check in the table's order; the first error.
Status CheckAttentionOptions(const AttentionOptions& o, const OptionShapes& shapes);

}  // namespace internal
}  // namespace attnkit

#endif  // ATTNKIT_ATTENTION_OPTIONS_H_
