// attnkit model tests: a model by its sizes, the small model, batch and error
// check that the model, GPT and text tests share (test_util.h's REQUIRE_OK
// beside them), and the one finite-difference check of the model's gradients
// against the float64 reference (model_reference.h).
#ifndef ATTNKIT_TESTS_MODEL_TEST_UTIL_H_
#define ATTNKIT_TESTS_MODEL_TEST_UTIL_H_

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attnkit/model.h"
#include "attnkit/random.h"
#include "tests/model_reference.h"
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

// Weights large enough that every part of the model matters to the loss:
// GPT-2's N(0, 0.02) would leave the gradients of a tiny model near zero.
// Every matrix N(0, 0.5^2); LayerNorm gains and biases moved by N(0, 0.3^2).
inline void Perturb(attnkit::model::Model* m, uint64_t seed) {
  attnkit::model::Rng rng(seed);
  for (attnkit::Matrix* t : m->params().Tensors()) {
    const bool vector = t->rows() == 1;  // LayerNorm gains and biases
    for (size_t k = 0; k < t->size(); ++k) {
      t->data()[k] = vector ? t->data()[k] + float(0.3 * rng.Normal()) : float(0.5 * rng.Normal());
    }
  }
}

// The logits of the last position of a full forward of `tokens`.
inline std::vector<float> LastLogits(attnkit::model::Model* m, const std::vector<int32_t>& tokens) {
  attnkit::model::Batch b;
  b.batch = 1;
  b.seq_len = tokens.size();
  b.tokens = tokens;
  b.targets.assign(tokens.size(), -1);
  attnkit::Matrix logits;
  attnkit::model::Metrics metrics;
  REQUIRE_OK(m->Forward(b, &metrics, &logits));
  const size_t V = m->config().vocab_size;
  return std::vector<float>(logits.data() + (tokens.size() - 1) * V,
                            logits.data() + tokens.size() * V);
}

// A test's model by its sizes, in ModelConfig's order: vocab_size tokens,
// max_seq_len positions, d_model, num_layers blocks of num_heads query heads
// over num_kv_heads K/V heads (0: one each), and an MLP of d_ff (0: attention-
// only blocks). Pre-LayerNorm (GPT blocks need it); d_k = d_model / num_heads,
// no biases, an unembedding of its own: change other fields after.
inline attnkit::model::ModelConfig GptConfig(size_t vocab_size, size_t max_seq_len, size_t d_model,
                                             size_t num_layers, size_t num_heads,
                                             size_t num_kv_heads, size_t d_ff) {
  attnkit::model::ModelConfig c;
  c.vocab_size = vocab_size;
  c.max_seq_len = max_seq_len;
  c.d_model = d_model;
  c.num_layers = num_layers;
  c.num_heads = num_heads;
  c.num_kv_heads = num_kv_heads;
  c.d_ff = d_ff;
  c.layer_norm = true;
  return c;
}

// 2 layers, 2 query heads sharing 1 K/V head of d_k 3, d_model 6, 5 tokens,
// 6 positions; attention-only (d_ff 0) or GPT blocks with an MLP of d_ff.
inline attnkit::model::ModelConfig SmallConfig(bool layer_norm, bool scaled, size_t d_ff = 0) {
  attnkit::model::ModelConfig c = GptConfig(5, 6, 6, 2, 2, 1, d_ff);
  c.d_k = 3;
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

// Central finite differences of the reference's loss in x, one entry at a
// time (x is restored): (loss(x + h) - loss(x - h)) / 2h.
template <typename LossOf>
double CentralDifference(double* x, double h, const LossOf& loss) {
  const double saved = *x;
  *x = saved + h;
  const double up = loss();
  *x = saved - h;
  const double down = loss();
  *x = saved;
  return (up - down) / (2 * h);
}

// A float32 gradient of an O(1) loss against its finite difference fd:
// within `absolute` plus 1e-3 relative. Returns err / tolerance.
inline double GradientError(double got, double fd, double absolute) {
  const double tolerance = absolute + 1e-3 * std::abs(fd);
  return std::abs(got - fd) / tolerance;
}

// Forward and Backward of m on batch, then every parameter's gradient against
// central finite differences of the float64 reference's loss; each tensor's
// gradient must be nonzero (nothing passes by being zero; b_K's is zero by
// the maths). Returns the forward's metrics.
inline attnkit::model::Metrics RequireGradientsMatchReference(attnkit::model::Model* m,
                                                              const attnkit::model::Batch& batch) {
  attnkit::model::Metrics metrics;
  REQUIRE_OK(m->Forward(batch, &metrics));
  attnkit::model::Parameters grads;
  REQUIRE_OK(m->Backward(&grads));
  std::vector<model_ref::Tensor> t = model_ref::FromParameters(m->params());
  const double loss = model_ref::Loss(m->config(), t, batch);
  CHECK(std::abs(metrics.loss - loss) <= 1e-5 * std::max(1.0, std::abs(loss)));
  const std::vector<const attnkit::Matrix*> g =
      static_cast<const attnkit::model::Parameters&>(grads).Tensors();
  const std::vector<std::string> names = m->params().Names();
  REQUIRE(g.size() == t.size());
  double worst = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    INFO(names[i]);
    REQUIRE(g[i]->size() == t[i].size());
    double magnitude = 0;
    for (size_t k = 0; k < t[i].size(); ++k) magnitude += std::abs(g[i]->data()[k]);
    // b_K adds q.b_K to every score of a query alike, which the softmax
    // cancels: its gradient is zero (float32 rounding aside), and is still
    // checked against the finite differences below.
    const bool zero_by_maths =
        names[i].size() >= 4 && names[i].compare(names[i].size() - 4, 4, ".b_K") == 0;
    if (!zero_by_maths) CHECK(magnitude > 1e-3);
    for (size_t k = 0; k < t[i].size(); ++k) {
      const double fd =
          CentralDifference(&t[i][k], 1e-5, [&] { return model_ref::Loss(m->config(), t, batch); });
      const double error = GradientError(g[i]->data()[k], fd, 1e-4);
      worst = std::max(worst, error);
      if (error > 1) {
        FAIL_CHECK(names[i] << "[" << k << "]: gradient " << g[i]->data()[k]
                            << ", finite differences " << fd);
      }
    }
  }
  INFO("worst error / tolerance " << worst);
  CHECK(worst < 1);
  return metrics;
}

// Inspect's weights and d_scores of one sequence (tokens, targets) against
// the float64 reference: the weights within 1e-5, dS against the reference's
// loss moved one score at a time, exactly 0 above the diagonal (masked).
// Returns Inspect's metrics.
inline attnkit::model::Metrics RequireScoreGradientsMatchReference(
    attnkit::model::Model* m, const std::vector<int32_t>& tokens,
    const std::vector<int32_t>& targets) {
  attnkit::model::Inspection in;
  REQUIRE_OK(m->Inspect(tokens, &targets, &in));
  const attnkit::model::ModelConfig& c = m->config();
  const size_t T = tokens.size(), h = c.num_heads;
  attnkit::model::Batch batch;
  batch.batch = 1;
  batch.seq_len = T;
  batch.tokens = tokens;
  batch.targets = targets;
  std::vector<model_ref::Tensor> t = model_ref::FromParameters(m->params());
  std::vector<std::vector<double>> ref_weights;
  const double loss = model_ref::Loss(c, t, batch, &ref_weights);
  REQUIRE(in.has_targets);
  CHECK(std::abs(in.metrics.loss - loss) <= 1e-5 * std::max(1.0, loss));
  REQUIRE(in.layers.size() == c.num_layers);
  double magnitude = 0;
  for (size_t l = 0; l < c.num_layers; ++l) {
    const attnkit::Matrix& dS = in.layers[l].d_scores;
    REQUIRE(dS.rows() == h * T);
    REQUIRE(dS.cols() == T);
    for (size_t head = 0; head < h; ++head) {
      for (size_t i = 0; i < T; ++i) {
        for (size_t j = 0; j < T; ++j) {
          INFO("layer " << l << " head " << head << " query " << i << " key " << j);
          const float got = dS(head * T + i, j);
          CHECK(std::abs(in.layers[l].weights(head * T + i, j) -
                         ref_weights[l][(head * T + i) * T + j]) < 1e-5);
          if (j > i) {
            CHECK(got == 0.0f);
            continue;
          }
          model_ref::ScoreNudge nudge{0, l, head, i, j, 0};
          const double fd = CentralDifference(
              &nudge.delta, 1e-5, [&] { return model_ref::Loss(c, t, batch, nullptr, &nudge); });
          CHECK(GradientError(got, fd, 1e-5) <= 1);
          magnitude += std::abs(fd);
        }
      }
    }
  }
  CHECK(magnitude > 1e-3);  // the check is not passed by zeros
  return in.metrics;
}

}  // namespace model_test

#endif  // ATTNKIT_TESTS_MODEL_TEST_UTIL_H_
