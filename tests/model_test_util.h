// attnkit model tests: the small model, batch and error check that the model,
// GPT and text tests share (test_util.h's REQUIRE_OK beside them).
#ifndef ATTNKIT_TESTS_MODEL_TEST_UTIL_H_
#define ATTNKIT_TESTS_MODEL_TEST_UTIL_H_

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

#include "attnkit/model.h"
#include "tests/test_util.h"

namespace model_test {

// Checks that `s` is an error naming `parameter`.
inline void RequireNames(const attnkit::Status& s, const std::string& parameter) {
  INFO(s.ToString());
  REQUIRE_FALSE(s.ok());
  CHECK(s.parameter() == parameter);
  // No word doubled in ToString() (test_util.h's ErrorMismatch).
  CHECK(attnkit_test::ErrorMismatch(s, attnkit_test::Err(s.code())).empty());
}

// 2 layers, 2 query heads sharing 1 K/V head of d_k 3, d_model 6, 5 tokens,
// 6 positions; attention-only (d_ff 0) or GPT blocks with an MLP of d_ff.
inline attnkit::model::ModelConfig SmallConfig(bool layer_norm, bool scaled, size_t d_ff = 0) {
  attnkit::model::ModelConfig c;
  c.vocab_size = 5;
  c.max_seq_len = 6;
  c.d_model = 6;
  c.num_layers = 2;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.d_k = 3;
  c.d_ff = d_ff;
  c.layer_norm = layer_norm;
  c.scale_by_sqrt_dk = scaled;
  return c;
}

// 2 sequences of 5 tokens; targets of -1 are left out of the loss.
inline attnkit::model::Batch SmallBatch() {
  attnkit::model::Batch b;
  b.batch = 2;
  b.seq_len = 5;
  b.tokens = {1, 4, 0, 2, 3, 2, 2, 1, 4, 0};
  b.targets = {-1, 0, 3, -1, 1, 4, -1, 2, 2, 3};
  return b;
}

}  // namespace model_test

#endif  // ATTNKIT_TESTS_MODEL_TEST_UTIL_H_
