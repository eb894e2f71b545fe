// The GPT blocks of the model (d_ff > 0), its schedule, weights file v2 and
// generation (include/attnkit/model.h, generate.h).
//  - Every parameter kind's gradient (embeddings, both LayerNorms, W_Q/K/V/O,
//    W_1, W_2, unembedding) against central finite differences of the
//    float64 reference (model_reference.h), grouped K/V heads and plain,
//    scaled and unscaled; the same gradients on every compiled SIMD target.
//  - Inspect's weights and dS against the reference through the MLP blocks.
//  - Training is bit-identical with a ThreadPool of 1 and of 3 threads.
//  - The cosine schedule; weight decay on W_1 and W_2.
//  - Weights v2 round trip with a vocabulary, version 1 still loading,
//    corrupt vocabularies refused.
//  - Generation: cached logits equal a full forward of the same context
//    (also across the re-prefill), the weights equal the forward's, the same
//    seed gives the same tokens, top_k 1 and temperature 0 are argmax; errors.
//  - A 2-layer GPT lowers its loss on a repetitive string.
//  - The GELU kernels against float64 over the whole float range.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attnkit/generate.h"
#include "attnkit/model.h"
#include "attnkit/ops.h"
#include "attnkit/random.h"
#include "src/model/kernels.h"
#include "tests/model_reference.h"
#include "tests/model_test_util.h"

namespace {

using namespace attnkit;
using namespace attnkit::model;
using model_test::GptConfig;
using model_test::LastLogits;
using model_test::Perturb;
using model_test::RequireGradientsMatchReference;
using model_test::RequireNames;
using model_test::RequireScoreGradientsMatchReference;
using model_test::SmallBatch;
using model_test::SmallConfig;

TEST_CASE("gpt: GELU and its derivative match float64 on every target", "[gpt]") {
  // u on [-12, 12] in steps of 1/64 and beyond (where GELU is 0 or u), in rows
  // of 37 (full vectors and one-lane tails). Tolerances, twice to four times
  // the largest errors seen: GELU within 4 ulp of |u| (the rounding of inner,
  // carried by the exponential), the derivative within 4e-7.
  std::vector<float> values;
  for (int i = -12 * 64; i <= 12 * 64; ++i) values.push_back(float(i) / 64.0f);
  for (float big : {15.0f, 30.0f, 100.0f, 1e4f, 1e19f}) {
    values.push_back(big);
    values.push_back(-big);
  }
  const size_t cols = 37, rows = (values.size() + cols - 1) / cols;
  values.resize(rows * cols, 0.5f);
  Matrix u(rows, cols), act(rows, cols), slope(rows, cols);
  std::copy(values.begin(), values.end(), u.data());
  for (const int64_t target : targets::Available()) {
    INFO("target " << targets::Name(target));
    targets::ForceForTest(target);
    kernels::Gelu(u, act);
    std::fill(slope.data(), slope.data() + slope.size(), 1.0f);
    kernels::GeluBackward(u, slope);
    targets::ForceForTest(0);
    double worst_gelu = 0, worst_slope = 0;
    for (size_t i = 0; i < u.size(); ++i) {
      const double x = u.data()[i];
      const double inner = 0.7978845608028654 * (x + 0.044715 * x * x * x);
      const double t = std::tanh(inner);
      const double gelu = 0.5 * x * (1 + t);
      const double d =
          0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x);
      INFO("u " << x << ": GELU " << act.data()[i] << " vs " << gelu << ", GELU' "
                << slope.data()[i] << " vs " << d);
      REQUIRE(std::isfinite(act.data()[i]));
      REQUIRE(std::isfinite(slope.data()[i]));
      worst_gelu = std::max(worst_gelu, std::abs(act.data()[i] - gelu) / std::abs(x));
      worst_slope = std::max(worst_slope, std::abs(slope.data()[i] - d));
      CHECK(std::abs(act.data()[i] - gelu) <= 4 * 6e-8 * std::abs(x));
      CHECK(std::abs(slope.data()[i] - d) <= 4e-7);
    }
    WARN("target " << targets::Name(target) << ": GELU error / |u| " << worst_gelu
                   << ", GELU' error " << worst_slope);
  }
}

TEST_CASE("gpt: every gradient matches finite differences of the float64 reference", "[gpt]") {
  for (const size_t shape : {0, 1, 2}) {
    for (const bool scaled : {true, false}) {
      INFO("shape " << shape << " scaled " << scaled);
      ModelConfig config = SmallConfig(true, scaled, 8);
      if (shape == 1) {  // 3 heads with their own K/V heads, 3 layers
        config.num_layers = 3;
        config.num_heads = 3;
        config.num_kv_heads = 3;
        config.d_k = 2;
        config.d_ff = 5;
      }
      if (shape == 2) {  // GPT-2's: biases, a tied unembedding, another epsilon
        config.bias = true;
        config.tied_unembedding = true;
        config.layer_norm_epsilon = 1e-3f;
      }
      Model m;
      REQUIRE_OK(m.Init(config, 3 + shape));
      Perturb(&m, 17 + shape);
      // Every kind is there: 2 embeddings, 10 per layer (16 with biases), 2
      // final LayerNorm, unembedding (untied).
      const std::vector<std::string> names = m.params().Names();
      CHECK(names.size() == 2 + (shape == 2 ? 16 : 10) * config.num_layers + (shape == 2 ? 2 : 3));
      CHECK(std::count(names.begin(), names.end(), "layers.0.W_1") == 1);
      CHECK(std::count(names.begin(), names.end(), "layers.1.ln2_bias") == 1);
      RequireGradientsMatchReference(&m, SmallBatch());
    }
  }
}

TEST_CASE("gpt: Inspect's weights and dS match the float64 reference", "[gpt][inspect]") {
  // dS = d loss / d S through the MLP blocks after each attention: the
  // reference's loss moved one score at a time; with GPT-2's biases too.
  for (const bool bias : {false, true}) {
    INFO("bias " << bias);
    ModelConfig c = SmallConfig(true, true, 8);
    c.bias = bias;
    c.tied_unembedding = bias;
    Model m;
    REQUIRE_OK(m.Init(c, 21));
    Perturb(&m, 22);
    RequireScoreGradientsMatchReference(&m, {1, 4, 0, 2, 3}, {-1, 0, 3, -1, 1});
  }
}

TEST_CASE("gpt: attention-only layers with biases match the float64 reference", "[gpt]") {
  ModelConfig c = SmallConfig(false, true, 0);
  c.bias = true;
  Model m;
  REQUIRE_OK(m.Init(c, 31));
  Perturb(&m, 32);
  const std::vector<std::string> names = m.params().Names();
  CHECK(std::count(names.begin(), names.end(), "layers.1.b_O") == 1);
  CHECK(std::count(names.begin(), names.end(), "layers.1.b_1") == 0);
  RequireGradientsMatchReference(&m, SmallBatch());
}

TEST_CASE("gpt: loss and gradients agree on every compiled SIMD target", "[gpt]") {
  // The model's kernels (LayerNorm, GELU, softmax-cross-entropy) on each
  // target against the float64 reference's loss, and the gradients against
  // the best target's within float32 rounding; with biases, their adds and
  // column sums too.
  for (const bool bias : {false, true}) {
    INFO("bias " << bias);
    Model m;
    ModelConfig config = SmallConfig(true, true, 8);
    config.d_model = 20;  // rows longer than a vector, with a tail, on every target
    config.d_k = 10;
    config.d_ff = 37;
    config.vocab_size = 23;
    config.bias = bias;
    REQUIRE_OK(m.Init(config, 5));
    Perturb(&m, 6);
    Batch batch = SmallBatch();
    for (int32_t& tok : batch.tokens) tok = (tok * 7 + 3) % 23;
    const double loss = model_ref::Loss(m.config(), model_ref::FromParameters(m.params()), batch);
    std::vector<float> best;
    for (const int64_t target : targets::Available()) {
      INFO(targets::Name(target));
      targets::ForceForTest(target);
      Metrics metrics;
      Parameters grads;
      const Status forward = m.Forward(batch, &metrics);
      const Status backward = m.Backward(&grads);
      targets::ForceForTest(0);
      REQUIRE_OK(forward);
      REQUIRE_OK(backward);
      CHECK(std::abs(metrics.loss - loss) <= 1e-5 * std::max(1.0, std::abs(loss)));
      std::vector<float> flat;
      for (const Matrix* t : static_cast<const Parameters&>(grads).Tensors()) {
        flat.insert(flat.end(), t->data(), t->data() + t->size());
      }
      if (best.empty()) {
        best = flat;
        continue;
      }
      REQUIRE(flat.size() == best.size());
      for (size_t k = 0; k < flat.size(); ++k) {
        if (std::abs(flat[k] - best[k]) > 1e-5 + 1e-4 * std::abs(best[k])) {
          FAIL_CHECK("gradient " << k << ": " << flat[k] << " against " << best[k]);
        }
      }
    }
  }
}

TEST_CASE("gpt: the initialisation has the documented scales, GPT-2's with gpt2_init", "[gpt]") {
  ModelConfig c = GptConfig(64, 64, 64, 8, 4, 0, 256);
  c.d_k = 8;
  auto std_of = [](const Matrix& t) {
    double s2 = 0;
    for (size_t k = 0; k < t.size(); ++k) s2 += double(t.data()[k]) * t.data()[k];
    return std::sqrt(s2 / double(t.size()));
  };
  for (const bool gpt2 : {false, true}) {
    INFO("gpt2_init " << gpt2);
    c.gpt2_init = gpt2;
    Model m;
    REQUIRE_OK(m.Init(c, 1));
    const Parameters& p = m.params();
    // The default: embeddings N(0, 0.3^2), every matrix N(0, 1 / fan_in).
    // GPT-2's: N(0, 0.02^2), W_O and W_2 divided by sqrt(2 num_layers).
    const double residual = 0.02 / std::sqrt(16.0);
    CHECK(std_of(p.token_embedding) == Approx(gpt2 ? 0.02 : 0.3).epsilon(0.05));
    CHECK(std_of(p.position_embedding) == Approx(gpt2 ? 0.02 : 0.3).epsilon(0.05));
    CHECK(std_of(p.layers[3].W_Q) == Approx(gpt2 ? 0.02 : 1 / 8.0).epsilon(0.05));
    CHECK(std_of(p.layers[3].W_1) == Approx(gpt2 ? 0.02 : 1 / 8.0).epsilon(0.05));
    CHECK(std_of(p.layers[3].W_O) == Approx(gpt2 ? residual : 1 / std::sqrt(32.0)).epsilon(0.05));
    CHECK(std_of(p.layers[3].W_2) == Approx(gpt2 ? residual : 1 / 16.0).epsilon(0.05));
    CHECK(std_of(p.unembedding) == Approx(gpt2 ? 0.02 : 1 / 8.0).epsilon(0.05));
    CHECK(p.layers[7].ln2_gain(0, 3) == 1.0f);
    CHECK(p.layers[7].ln2_bias(0, 3) == 0.0f);
    CHECK(p.Count() == 64 * 64 * 3 + 8 * (4 * 64 * 32 + 2 * 64 * 256 + 4 * 64) + 2 * 64);
  }
}

// Trains a GPT for `steps` steps on a fixed pattern with a pool of `threads`
// and returns the exported weights.
std::vector<uint8_t> TrainGptWithThreads(size_t threads, size_t steps) {
  const ModelConfig c = GptConfig(11, 12, 16, 2, 4, 2, 40);
  AdamWConfig opt;
  opt.learning_rate = 3e-3f;
  opt.warmup_steps = 3;
  opt.decay_steps = 15;
  Trainer trainer;
  REQUIRE_OK(trainer.Init(c, 11, opt));
  ThreadPool pool(threads);
  trainer.model().set_pool(&pool);
  Rng rng(4);
  Batch batch;
  batch.batch = 8;
  batch.seq_len = 12;
  Metrics metrics;
  for (size_t s = 0; s < steps; ++s) {
    batch.tokens.clear();
    batch.targets.clear();
    for (size_t i = 0; i < batch.batch * batch.seq_len; ++i) {
      batch.tokens.push_back(int32_t(rng.Below(11)));
      batch.targets.push_back(int32_t(rng.Below(12)) - 1);
    }
    REQUIRE_OK(trainer.Step(batch, &metrics));
  }
  std::vector<uint8_t> bytes;
  REQUIRE_OK(ExportWeights(trainer.model(), &bytes));
  return bytes;
}

TEST_CASE("gpt: training is bit-identical with 1 and 3 threads", "[gpt]") {
  const std::vector<uint8_t> one = TrainGptWithThreads(1, 12);
  const std::vector<uint8_t> three = TrainGptWithThreads(3, 12);
  REQUIRE(one.size() == three.size());
  CHECK(one == three);
}

TEST_CASE("gpt: the learning rate warms up, then follows the cosine", "[gpt]") {
  AdamWConfig c;
  c.learning_rate = 1e-3f;
  c.min_learning_rate = 1e-4f;
  c.warmup_steps = 10;
  c.decay_steps = 110;
  Model m;
  REQUIRE_OK(m.Init(SmallConfig(true, true, 8), 1));
  AdamW adam;
  REQUIRE_OK(adam.Init(c, m.params()));
  CHECK(adam.LearningRate(5) == Approx(5e-4).epsilon(1e-6));
  CHECK(adam.LearningRate(10) == Approx(1e-3).epsilon(1e-6));
  // Half-way through the decay, the cosine is at the middle of its range.
  CHECK(adam.LearningRate(60) == Approx(5.5e-4).epsilon(1e-6));
  // A quarter of the way: min + (max - min) (1 + cos(pi / 4)) / 2.
  CHECK(adam.LearningRate(35) ==
        Approx(1e-4 + 9e-4 * (1 + std::cos(3.14159265358979 / 4)) / 2).epsilon(1e-6));
  CHECK(adam.LearningRate(110) == Approx(1e-4).epsilon(1e-6));
  CHECK(adam.LearningRate(500) == Approx(1e-4).epsilon(1e-6));
  for (size_t step = 11; step < 110; ++step) {
    CHECK(adam.LearningRate(step + 1) < adam.LearningRate(step));
  }
  // Without decay_steps the rate stays at learning_rate after the warm-up.
  c.decay_steps = 0;
  REQUIRE_OK(adam.Init(c, m.params()));
  CHECK(adam.LearningRate(500) == 1e-3f);
}

TEST_CASE("gpt: weight decay reaches W_1 and W_2, not the LayerNorms or biases", "[gpt]") {
  Model m;
  ModelConfig config = SmallConfig(true, true, 8);
  config.bias = true;
  REQUIRE_OK(m.Init(config, 2));
  Perturb(&m, 3);
  const Parameters before = m.params();
  Parameters zero;
  REQUIRE_OK(zero.Allocate(m.config()));
  AdamWConfig c;
  c.learning_rate = 0.1f;
  c.weight_decay = 0.5f;
  AdamW adam;
  REQUIRE_OK(adam.Init(c, m.params()));
  REQUIRE_OK(adam.Step(zero, &m.params()));  // a zero gradient: only the decay moves weights
  const Parameters& after = m.params();
  CHECK(after.layers[1].W_1(2, 3) == Approx(before.layers[1].W_1(2, 3) * 0.95f));
  CHECK(after.layers[1].W_2(5, 1) == Approx(before.layers[1].W_2(5, 1) * 0.95f));
  CHECK(after.layers[1].ln2_gain(0, 1) == before.layers[1].ln2_gain(0, 1));
  CHECK(after.token_embedding(1, 1) == before.token_embedding(1, 1));
  CHECK(after.unembedding(2, 4) == Approx(before.unembedding(2, 4) * 0.95f));
  for (const Matrix LayerParameters::*b :
       {&LayerParameters::b_Q, &LayerParameters::b_K, &LayerParameters::b_V, &LayerParameters::b_O,
        &LayerParameters::b_1, &LayerParameters::b_2}) {
    REQUIRE((after.layers[1].*b).size() > 0);
    CHECK((after.layers[1].*b)(0, 0) == (before.layers[1].*b)(0, 0));
    CHECK((after.layers[1].*b)(0, 0) != 0.0f);
  }
}

// Rewrites the trailing FNV-1a hash after an edit.
std::vector<uint8_t> Rehash(std::vector<uint8_t> f) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i + 4 < f.size(); ++i) h = (h ^ f[i]) * 16777619u;
  for (int i = 0; i < 4; ++i) f[f.size() - 4 + i] = uint8_t(h >> (8 * i));
  return f;
}

void PutU32(std::vector<uint8_t>* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(uint8_t(v >> (8 * i)));
}

TEST_CASE("gpt: weights v2 carry d_ff and the vocabulary; version 1 still loads", "[gpt]") {
  Model m;
  REQUIRE_OK(m.Init(SmallConfig(true, false, 8), 9));
  const std::vector<uint32_t> vocabulary = {'a', 0xE9, 0x4E2D, 0x1F600, ' '};
  m.set_vocabulary(vocabulary);
  std::vector<uint8_t> bytes;
  REQUIRE_OK(ExportWeights(m, &bytes));
  // magic, version, 10 config words, vocabulary length + 5, trained steps, count, floats, hash
  CHECK(bytes.size() == 8 + 4 + 40 + 4 + 20 + 4 + 4 + 4 * m.params().Count() + 4);
  CHECK(bytes[8] == 4);
  CHECK(bytes[8 + 4 + 4 * 7] == 8);  // d_ff
  Model back;
  REQUIRE_OK(ImportWeights(bytes.data(), bytes.size(), &back));
  CHECK(back.config().d_ff == 8);
  CHECK(back.vocabulary() == vocabulary);
  std::vector<uint8_t> again;
  REQUIRE_OK(ExportWeights(back, &again));
  CHECK(again == bytes);
  Metrics a, b;
  REQUIRE_OK(m.Forward(SmallBatch(), &a));
  REQUIRE_OK(back.Forward(SmallBatch(), &b));
  CHECK(a.loss == b.loss);

  auto rejects = [](const std::vector<uint8_t>& file, const std::string& says) {
    Model target;
    REQUIRE_OK(target.Init(SmallConfig(true, true, 8), 1));
    target.set_vocabulary({1, 2, 3, 4, 5});
    const Status s = ImportWeights(file.data(), file.size(), &target);
    INFO(s.ToString());
    REQUIRE_FALSE(s.ok());
    CHECK(s.parameter() == "weights");
    CHECK(s.detail().find(says) != std::string::npos);
    CHECK(target.vocabulary().size() == 5);  // unchanged
    CHECK(target.config().scale_by_sqrt_dk);
  };
  const size_t length_at = 8 + 4 + 40;
  std::vector<uint8_t> f = bytes;
  f[length_at] = 4;  // 4 code points for 5 tokens
  rejects(Rehash(f), "vocabulary length 4");
  f = bytes;
  f[length_at] = 200;  // more code points than the file holds
  rejects(Rehash(f), "vocabulary length 200");
  rejects(std::vector<uint8_t>(bytes.begin(), bytes.begin() + length_at + 8), "truncated");
  f = bytes;
  f[length_at + 4 + 8] ^= 1;  // one bit of the vocabulary
  rejects(f, "hash");
  f = bytes;
  f[8 + 4 + 4 * 8] = 2;  // flags: scale_by_sqrt_dk only, so d_ff 8 without layer_norm
  rejects(Rehash(f), "d_ff");

  // A version 1 file, as the attention-only model wrote it: 8 config words
  // (no d_ff), no vocabulary.
  Model old;
  ModelConfig oc = SmallConfig(true, true, 8);
  oc.d_ff = 0;
  REQUIRE_OK(old.Init(oc, 4));
  std::vector<uint8_t> v1(bytes.begin(), bytes.begin() + 8);
  PutU32(&v1, 1);
  uint32_t words[kConfigWords];
  ConfigToWords(old.config(), words);
  for (size_t i = 0; i <= kConfigSizeWords; ++i) {
    if (i != kConfigSizeWords - 1) PutU32(&v1, words[i]);  // leave out d_ff (and epsilon)
  }
  PutU32(&v1, uint32_t(old.params().Count()));
  for (const Matrix* t : old.params().Tensors()) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(t->data());
    v1.insert(v1.end(), p, p + 4 * t->size());
  }
  PutU32(&v1, 0);
  v1 = Rehash(v1);
  Model loaded;
  REQUIRE_OK(loaded.Init(SmallConfig(true, true, 8), 1));
  loaded.set_vocabulary({1, 2, 3, 4, 5});
  REQUIRE_OK(ImportWeights(v1.data(), v1.size(), &loaded));
  CHECK(loaded.config().d_ff == 0);
  CHECK(loaded.vocabulary().empty());
  REQUIRE_OK(old.Forward(SmallBatch(), &a));
  REQUIRE_OK(loaded.Forward(SmallBatch(), &b));
  CHECK(a.loss == b.loss);
  // Exported again it is a version 4 file.
  REQUIRE_OK(ExportWeights(loaded, &again));
  CHECK(again[8] == 4);
  // d_ff, epsilon, the vocabulary length, the trained steps
  CHECK(again.size() == v1.size() + 16);
}

TEST_CASE("gpt: weights v3 carry the trained steps; version 2 loads with none", "[gpt]") {
  ModelConfig c = SmallConfig(true, false, 8);
  Trainer trainer;
  REQUIRE_OK(trainer.Init(c, 5, AdamWConfig{}));
  CHECK(trainer.model().trained_steps() == 0);
  Metrics metrics;
  for (int i = 0; i < 3; ++i) REQUIRE_OK(trainer.Step(SmallBatch(), &metrics));
  CHECK(trainer.model().trained_steps() == 3);
  std::vector<uint8_t> bytes;
  REQUIRE_OK(ExportWeights(trainer.model(), &bytes));
  const size_t epsilon_at = 8 + 4 + 36;    // the last config word
  const size_t steps_at = 8 + 4 + 40 + 4;  // after an empty vocabulary
  CHECK(bytes[steps_at] == 3);
  Model back;
  REQUIRE_OK(ImportWeights(bytes.data(), bytes.size(), &back));
  CHECK(back.trained_steps() == 3);
  REQUIRE_OK(back.Init(c, 5));
  CHECK(back.trained_steps() == 0);  // a new model has had no update
  // The same file as version 3 wrote it: no epsilon word (1e-5 then).
  std::vector<uint8_t> v3(bytes.begin(), bytes.begin() + epsilon_at);
  v3[8] = 3;
  v3.insert(v3.end(), bytes.begin() + epsilon_at + 4, bytes.end());
  v3 = Rehash(v3);
  Model v3_model;
  REQUIRE_OK(ImportWeights(v3.data(), v3.size(), &v3_model));
  CHECK(v3_model.trained_steps() == 3);
  CHECK(v3_model.config().layer_norm_epsilon == 1e-5f);
  // As version 2 wrote it: no trained steps either.
  std::vector<uint8_t> v2(v3.begin(), v3.begin() + steps_at - 4);
  v2[8] = 2;
  v2.insert(v2.end(), v3.begin() + steps_at, v3.end());
  v2 = Rehash(v2);
  Model old;
  REQUIRE_OK(ImportWeights(v2.data(), v2.size(), &old));
  CHECK(old.trained_steps() == 0);
  Metrics a, b, b3;
  REQUIRE_OK(trainer.model().Forward(SmallBatch(), &a));
  REQUIRE_OK(old.Forward(SmallBatch(), &b));
  REQUIRE_OK(v3_model.Forward(SmallBatch(), &b3));
  CHECK(a.loss == b.loss);
  CHECK(a.loss == b3.loss);
  // Cut short after the vocabulary: named.
  std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + steps_at + 2);
  PutU32(&cut, 0);
  const Status s = ImportWeights(cut.data(), cut.size(), &old);
  CHECK(s.parameter() == "weights");
  CHECK(s.detail().find("truncated") != std::string::npos);
}

TEST_CASE("gpt: weights v4 carry bias, a tied unembedding and the LayerNorm epsilon", "[gpt]") {
  ModelConfig c = SmallConfig(true, true, 8);
  c.bias = true;
  c.tied_unembedding = true;
  c.gpt2_init = true;
  c.layer_norm_epsilon = 1e-3f;
  Model m;
  REQUIRE_OK(m.Init(c, 12));
  // Biases (zero at Init) given values, so that the file must carry them.
  for (LayerParameters& l : m.params().layers) {
    for (Matrix* b : {&l.b_Q, &l.b_K, &l.b_V, &l.b_O, &l.b_1, &l.b_2}) {
      REQUIRE(b->size() > 0);
      for (size_t k = 0; k < b->size(); ++k) b->data()[k] = 0.01f * float(k + 1);
    }
  }
  CHECK(m.params().unembedding.size() == 0);
  const std::vector<std::string> names = m.params().Names();
  CHECK(std::find(names.begin(), names.end(), "unembedding") == names.end());
  CHECK(std::find(names.begin(), names.end(), "layers.1.b_2") != names.end());
  std::vector<uint8_t> bytes;
  REQUIRE_OK(ExportWeights(m, &bytes));
  CHECK(bytes[8] == 4);
  CHECK(bytes[8 + 4 + 4 * 8] == (1 | 2 | 4 | 8 | 16));  // every flag
  Model back;
  REQUIRE_OK(ImportWeights(bytes.data(), bytes.size(), &back));
  CHECK(back.config().bias);
  CHECK(back.config().tied_unembedding);
  CHECK(back.config().gpt2_init);
  CHECK(back.config().layer_norm_epsilon == 1e-3f);
  const std::vector<const Matrix*> a = static_cast<const Model&>(m).params().Tensors();
  const std::vector<const Matrix*> b = static_cast<const Model&>(back).params().Tensors();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(names[i]);
    REQUIRE(a[i]->size() == b[i]->size());
    CHECK(std::memcmp(a[i]->data(), b[i]->data(), 4 * a[i]->size()) == 0);
  }
  std::vector<uint8_t> again;
  REQUIRE_OK(ExportWeights(back, &again));
  CHECK(again == bytes);
  // An epsilon that is not > 0 and finite: the config's error, named.
  for (float bad : {0.0f, -1e-5f, std::numeric_limits<float>::infinity()}) {
    std::vector<uint8_t> f = bytes;
    std::memcpy(&f[8 + 4 + 36], &bad, 4);
    const Status s = ImportWeights(f.data(), f.size(), &back);
    INFO(s.ToString());
    CHECK(s.detail().find("layer_norm_epsilon") != std::string::npos);
  }
}

// 13 tokens, 10 positions, d_model 24, 3 blocks of 4 heads over 2 K/V heads, d_ff 48.
ModelConfig GenerationConfig() { return GptConfig(13, 10, 24, 3, 4, 2, 48); }

TEST_CASE("gpt: cached generation equals a full forward of the same context", "[gpt][generate]") {
  // 30 tokens from a 3-token prompt with max_seq_len 10: the context fills,
  // is re-prefilled from its last 5 tokens, and fills again, several times.
  // With GPT-2's biases and tied unembedding too (bias 1).
  for (const size_t variant : {0, 1, 2, 3}) {
    const size_t d_ff = variant % 2 ? 48 : 0;
    const bool bias = variant >= 2;
    INFO("d_ff " << d_ff << " bias " << bias);
    ModelConfig c = GenerationConfig();
    c.d_ff = d_ff;
    c.bias = bias;
    c.tied_unembedding = bias;
    Model m;
    REQUIRE_OK(m.Init(c, 8));
    Perturb(&m, 12);
    Model reference = m;  // full forwards on a copy (Forward keeps its own state)
    Generator gen;
    REQUIRE_OK(gen.Start(m, {3, 1, 4}, 42));
    SampleOptions options;
    options.temperature = 0.8f;
    size_t re_prefills = 0, previous = gen.context().size();
    for (size_t step = 0; step < 30; ++step) {
      const std::vector<int32_t> context = gen.context();
      REQUIRE(context.size() <= c.max_seq_len);
      if (context.size() < previous) ++re_prefills;
      previous = context.size();
      GeneratedToken token;
      REQUIRE_OK(gen.Next(options, &token));
      const std::vector<float> full = LastLogits(&reference, context);
      REQUIRE(token.logits.size() == full.size());
      // float32 through different orders of summation: 1e-4 of the logits' scale.
      for (size_t j = 0; j < full.size(); ++j) {
        CHECK(std::abs(token.logits[j] - full[j]) <= 1e-4f * (1 + std::abs(full[j])));
      }
      // Each head's weights over the cache are the forward's last row.
      REQUIRE(token.weights.size() == c.num_layers);
      for (size_t l = 0; l < c.num_layers; ++l) {
        Matrix w;
        REQUIRE_OK(reference.AttentionWeights(l, &w));
        const size_t T = context.size();
        REQUIRE(token.weights[l].rows() == c.num_heads);
        REQUIRE(token.weights[l].cols() == T);
        for (size_t head = 0; head < c.num_heads; ++head) {
          for (size_t j = 0; j < T; ++j) {
            CHECK(std::abs(token.weights[l](head, j) - w(head * T + T - 1, j)) <= 1e-5f);
          }
        }
      }
      CHECK(token.token >= 0);
      CHECK(size_t(token.token) < c.vocab_size);
      const std::vector<int32_t>& now = gen.context();
      CHECK(now.back() == token.token);
    }
    CHECK(re_prefills >= 3);
  }
}

TEST_CASE("gpt: sampling is seeded; top_k 1 and temperature 0 are argmax", "[gpt][generate]") {
  Model m;
  REQUIRE_OK(m.Init(GenerationConfig(), 3));
  Perturb(&m, 5);
  auto sample = [&](uint64_t seed, SampleOptions options, size_t n) {
    Generator gen;
    REQUIRE_OK(gen.Start(m, {1, 2}, seed));
    std::vector<int32_t> tokens;
    for (size_t i = 0; i < n; ++i) {
      GeneratedToken t;
      REQUIRE_OK(gen.Next(options, &t));
      tokens.push_back(t.token);
      if (options.temperature == 0 || options.top_k == 1) {
        const size_t arg =
            size_t(std::max_element(t.logits.begin(), t.logits.end()) - t.logits.begin());
        CHECK(size_t(t.token) == arg);
      }
      if (options.top_k > 1) {  // the token is among the top_k logits
        size_t above = 0;
        for (float v : t.logits) above += v > t.logits[size_t(t.token)];
        CHECK(above < options.top_k);
      }
    }
    return tokens;
  };
  SampleOptions hot;
  hot.temperature = 1.5f;
  const std::vector<int32_t> a = sample(7, hot, 40);
  CHECK(a == sample(7, hot, 40));
  CHECK(a != sample(8, hot, 40));
  SampleOptions top1;
  top1.top_k = 1;
  SampleOptions cold;
  cold.temperature = 0;
  CHECK(sample(1, top1, 20) == sample(2, cold, 20));
  SampleOptions top3;
  top3.top_k = 3;
  top3.temperature = 2.0f;
  sample(3, top3, 30);
}

TEST_CASE("gpt: generation errors name prompt, temperature, top_k", "[gpt][generate]") {
  Model m;
  REQUIRE_OK(m.Init(GenerationConfig(), 3));
  Generator gen;
  GeneratedToken t;
  RequireNames(gen.Next(SampleOptions(), &t), "generator");
  RequireNames(gen.Start(m, {}, 1), "prompt");
  RequireNames(gen.Start(m, {1, 13}, 1), "prompt");
  RequireNames(gen.Start(m, {-1}, 1), "prompt");
  Model empty;
  RequireNames(gen.Start(empty, {1}, 1), "model");
  REQUIRE_OK(gen.Start(m, {1, 2, 3}, 1));
  SampleOptions o;
  o.temperature = -1;
  RequireNames(gen.Next(o, &t), "temperature");
  o.temperature = std::nanf("");
  RequireNames(gen.Next(o, &t), "temperature");
  o = SampleOptions();
  o.top_k = 14;
  RequireNames(gen.Next(o, &t), "top_k");
  CHECK(gen.context().size() == 3);  // errors leave the context as it was
  REQUIRE_OK(gen.Next(SampleOptions(), &t));
  CHECK(gen.context().size() == 4);
  // A prompt longer than max_seq_len keeps its last max_seq_len / 2 tokens.
  REQUIRE_OK(gen.Start(m, std::vector<int32_t>(25, 2), 1));
  CHECK(gen.context().size() == 5);
}

TEST_CASE("gpt: a 2-layer GPT lowers its loss on a repetitive string", "[gpt][train]") {
  const std::string text = "the cat sat on the mat. the dog sat on the log. ";
  std::string alphabet = text;
  std::sort(alphabet.begin(), alphabet.end());
  alphabet.erase(std::unique(alphabet.begin(), alphabet.end()), alphabet.end());
  const ModelConfig c = GptConfig(alphabet.size(), 16, 32, 2, 4, 0, 128);
  AdamWConfig opt;
  opt.learning_rate = 1e-2f;
  opt.warmup_steps = 10;
  opt.decay_steps = 150;
  opt.min_learning_rate = 1e-3f;
  Trainer trainer;
  REQUIRE_OK(trainer.Init(c, 1, opt));
  Rng rng(2);
  Batch batch;
  batch.batch = 8;
  batch.seq_len = 16;
  auto token = [&](size_t i) { return int32_t(alphabet.find(text[i % text.size()])); };
  float first = 0, last = 0;
  double untrained = 0;
  for (size_t step = 0; step < 150; ++step) {
    batch.tokens.clear();
    batch.targets.clear();
    for (size_t b = 0; b < batch.batch; ++b) {
      const size_t start = rng.Below(text.size());
      for (size_t t = 0; t < batch.seq_len; ++t) {
        batch.tokens.push_back(token(start + t));
        batch.targets.push_back(token(start + t + 1));
      }
    }
    // The untrained model's loss on the first batch, in float64.
    if (step == 0) {
      const Model& m = trainer.model();
      untrained = model_ref::Loss(m.config(), model_ref::FromParameters(m.params()), batch);
    }
    Metrics metrics;
    REQUIRE_OK(trainer.Step(batch, &metrics));
    if (step == 0) first = metrics.loss;
    last = metrics.loss;
  }
  INFO("first loss " << first << ", last " << last);
  // The first step scores the untrained model, no better than the uniform
  // guess ln(vocab_size); the string is nearly deterministic given the
  // previous characters (only "cat"/"dog", "mat"/"log" are choices).
  CHECK(first == Approx(untrained).epsilon(1e-5));
  CHECK(first > std::log(double(c.vocab_size)));
  CHECK(last < 0.5f);
}

}  // namespace
