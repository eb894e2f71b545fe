// The core's attention option table (src/core/attention_options.h): each
// entry reads exactly the words it names, in the table's order, so that the
// layout the bindings export (optionLayout, which tests/js/option-layout.test.js
// compares with the JS schema) is the layout they read.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "src/core/attention_options.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::AttentionOptions;
using attnkit::CausalAlignment;
using attnkit::internal::ArgWords;
using attnkit::internal::AttentionOptionEntries;
using attnkit::internal::AttentionOptionEntry;

// The number of comma-separated names in `words`.
size_t WordCount(const std::string& words) {
  size_t n = 1;
  for (char c : words) n += c == ',';
  return n;
}

uint32_t Bits(float f) {
  uint32_t w;
  std::memcpy(&w, &f, sizeof(w));
  return w;
}

TEST_CASE("attention options: each entry reads exactly the words it names", "[options]") {
  // Zero words: every address null and every count 0 (empty arrays and
  // views), the defaults of the rest.
  const std::vector<uint32_t> block(64, 0);
  size_t total = 0;
  ArgWords all(block.data());
  AttentionOptions o;
  for (const AttentionOptionEntry& option : AttentionOptionEntries()) {
    INFO(option.words);
    ArgWords a(block.data());
    option.read(a, &o);
    CHECK(static_cast<size_t>(a.position() - block.data()) == WordCount(option.words));
    total += WordCount(option.words);
    option.read(all, &o);
  }
  CHECK(static_cast<size_t>(all.position() - block.data()) == total);
  CHECK(total < block.size());
}

TEST_CASE("attention options: the words of the scalar options read into their fields",
          "[options]") {
  // scale, softcap, causal, causal_alignment, causal_offset, causal_offsets
  // (address, count), key_length, key_lengths (address, count), then the two
  // masks' five words each (null).
  std::vector<uint32_t> block = {Bits(0.5f), Bits(2.0f), 1, 1, static_cast<uint32_t>(-3),
                                 0,          0,          5, 0, 0};
  block.resize(64, 0);
  ArgWords a(block.data());
  AttentionOptions o;
  for (const AttentionOptionEntry& option : AttentionOptionEntries()) option.read(a, &o);
  REQUIRE(o.scale.has_value());
  CHECK(*o.scale == 0.5f);
  CHECK(o.softcap == 2.0f);
  CHECK(o.causal);
  CHECK(o.causal_alignment == CausalAlignment::kUpperLeft);
  CHECK(o.causal_offset == -3);
  CHECK(o.causal_offsets.empty());
  REQUIRE(o.key_length.has_value());
  CHECK(*o.key_length == 5);
  CHECK(o.key_lengths.empty());
  CHECK(o.bool_mask.empty());
  CHECK(o.additive_mask.empty());

  // Absent: scale 0 and key_length -1 leave them unset.
  const std::vector<uint32_t> absent = {0, 0, 0, 0, 0, 0, 0, static_cast<uint32_t>(-1), 0, 0};
  std::vector<uint32_t> none(absent);
  none.resize(64, 0);
  ArgWords b(none.data());
  AttentionOptions d;
  for (const AttentionOptionEntry& option : AttentionOptionEntries()) option.read(b, &d);
  CHECK_FALSE(d.scale.has_value());
  CHECK_FALSE(d.key_length.has_value());
  CHECK(d.causal_alignment == CausalAlignment::kLowerRight);
}

}  // namespace
}  // namespace attnkit_test
