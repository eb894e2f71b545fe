// attnkit model tests: GPT-2's checkpoint layout (include/attnkit/checkpoint.h):
// the fp16 and bfloat16 widening on bit patterns, a tiny GPT-2 filled by its
// Hugging Face names from f32, f16 and bf16 data in any order and read back
// from params() (tied and untied), and every error of the loader.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "attnkit/checkpoint.h"
#include "attnkit/model.h"
#include "tests/model_test_util.h"

namespace {

using attnkit::ErrorCode;
using attnkit::Matrix;
using attnkit::Status;
using attnkit::model::BFloat16ToFloat;
using attnkit::model::CheckpointLoader;
using attnkit::model::DType;
using attnkit::model::HalfToFloat;
using attnkit::model::Model;
using attnkit::model::ModelConfig;
using attnkit::model::WidenToFloat;
using model_test::RequireNames;

// A GPT-2 of 2 layers: d_model 4, 2 heads, d_ff 8, 7 tokens, 5 positions.
ModelConfig TinyGpt2(bool tied) {
  ModelConfig c;
  c.vocab_size = 7;
  c.max_seq_len = 5;
  c.d_model = 4;
  c.num_layers = 2;
  c.num_heads = 2;
  c.d_ff = 8;
  c.layer_norm = true;
  c.bias = true;
  c.tied_unembedding = tied;
  return c;
}

// A Hugging Face tensor: its shape and values (each a multiple of 1/64 in
// [-2, 2], exact in f16 and bf16).
struct HfTensor {
  std::vector<size_t> shape;
  std::vector<float> values;
};

// Every tensor of a GPT2LMHeadModel of config c (with lm_head unless tied),
// the attention-mask buffers included, by name.
std::map<std::string, HfTensor> Gpt2Checkpoint(const ModelConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> k(-128, 128);
  std::map<std::string, HfTensor> out;
  auto add = [&](const std::string& name, std::vector<size_t> shape) {
    size_t n = 1;
    for (size_t s : shape) n *= s;
    HfTensor t{shape, std::vector<float>(n)};
    for (float& v : t.values) v = float(k(rng)) / 64.0f;
    out[name] = t;
  };
  const size_t d = c.d_model, V = c.vocab_size, P = c.max_seq_len, f = c.d_ff;
  add("transformer.wte.weight", {V, d});
  add("transformer.wpe.weight", {P, d});
  for (size_t i = 0; i < c.num_layers; ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    add(h + "ln_1.weight", {d});
    add(h + "ln_1.bias", {d});
    add(h + "attn.c_attn.weight", {d, 3 * d});
    add(h + "attn.c_attn.bias", {3 * d});
    add(h + "attn.c_proj.weight", {d, d});
    add(h + "attn.c_proj.bias", {d});
    add(h + "ln_2.weight", {d});
    add(h + "ln_2.bias", {d});
    add(h + "mlp.c_fc.weight", {d, f});
    add(h + "mlp.c_fc.bias", {f});
    add(h + "mlp.c_proj.weight", {f, d});
    add(h + "mlp.c_proj.bias", {d});
    add(h + "attn.bias", {1, 1, P, P});
    add(h + "attn.masked_bias", {});
  }
  add("transformer.ln_f.weight", {d});
  add("transformer.ln_f.bias", {d});
  if (!c.tied_unembedding) add("lm_head.weight", {V, d});
  return out;
}

// The bits of an f16 or bf16 whose value v is exact in it (normal or zero).
uint16_t Narrow(DType dtype, float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if (dtype == DType::kBF16) return uint16_t(u >> 16);
  if (v == 0) return uint16_t(u >> 16);
  const uint32_t sign = u >> 31, exponent = (u >> 23) & 0xff, mantissa = u & 0x7fffff;
  return uint16_t(sign << 15 | (exponent - 127 + 15) << 10 | mantissa >> 13);
}

// values as the bytes of `dtype`, little-endian.
std::vector<uint8_t> Bytes(DType dtype, const std::vector<float>& values) {
  std::vector<uint8_t> out(values.size() * attnkit::model::DTypeBytes(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(&out[4 * i], &values[i], 4);
    } else {
      const uint16_t h = Narrow(dtype, values[i]);
      out[2 * i] = uint8_t(h);
      out[2 * i + 1] = uint8_t(h >> 8);
    }
  }
  return out;
}

Status Load(CheckpointLoader* loader, const std::string& name, const HfTensor& t,
            DType dtype = DType::kF32) {
  const std::vector<uint8_t> bytes = Bytes(dtype, t.values);
  return loader->Load(name, dtype, t.shape, bytes.data());
}

// m [rows, cols] against columns [col0, col0 + m.cols()) of the row-major
// source [rows, source_cols].
void RequireColumns(const Matrix& m, const std::vector<float>& source, size_t source_cols,
                    size_t col0) {
  for (size_t r = 0; r < m.rows(); ++r) {
    for (size_t j = 0; j < m.cols(); ++j) REQUIRE(m(r, j) == source[r * source_cols + col0 + j]);
  }
}

// The model's tensors against the checkpoint's, by the table in checkpoint.h.
void RequireFilledFrom(const Model& m, const std::map<std::string, HfTensor>& hf) {
  const ModelConfig& c = m.config();
  const size_t d = c.d_model, f = c.d_ff;
  const attnkit::model::Parameters& p = m.params();
  RequireColumns(p.token_embedding, hf.at("transformer.wte.weight").values, d, 0);
  RequireColumns(p.position_embedding, hf.at("transformer.wpe.weight").values, d, 0);
  for (size_t i = 0; i < c.num_layers; ++i) {
    INFO("layer " << i);
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    const attnkit::model::LayerParameters& l = p.layers[i];
    RequireColumns(l.ln_gain, hf.at(h + "ln_1.weight").values, d, 0);
    RequireColumns(l.ln_bias, hf.at(h + "ln_1.bias").values, d, 0);
    const std::vector<float>& qkv = hf.at(h + "attn.c_attn.weight").values;
    RequireColumns(l.W_Q, qkv, 3 * d, 0);
    RequireColumns(l.W_K, qkv, 3 * d, d);
    RequireColumns(l.W_V, qkv, 3 * d, 2 * d);
    const std::vector<float>& qkv_bias = hf.at(h + "attn.c_attn.bias").values;
    RequireColumns(l.b_Q, qkv_bias, 3 * d, 0);
    RequireColumns(l.b_K, qkv_bias, 3 * d, d);
    RequireColumns(l.b_V, qkv_bias, 3 * d, 2 * d);
    RequireColumns(l.W_O, hf.at(h + "attn.c_proj.weight").values, d, 0);
    RequireColumns(l.b_O, hf.at(h + "attn.c_proj.bias").values, d, 0);
    RequireColumns(l.ln2_gain, hf.at(h + "ln_2.weight").values, d, 0);
    RequireColumns(l.ln2_bias, hf.at(h + "ln_2.bias").values, d, 0);
    RequireColumns(l.W_1, hf.at(h + "mlp.c_fc.weight").values, f, 0);
    RequireColumns(l.b_1, hf.at(h + "mlp.c_fc.bias").values, f, 0);
    RequireColumns(l.W_2, hf.at(h + "mlp.c_proj.weight").values, d, 0);
    RequireColumns(l.b_2, hf.at(h + "mlp.c_proj.bias").values, d, 0);
  }
  RequireColumns(p.final_gain, hf.at("transformer.ln_f.weight").values, d, 0);
  RequireColumns(p.final_bias, hf.at("transformer.ln_f.bias").values, d, 0);
  if (c.tied_unembedding) {
    REQUIRE(p.unembedding.size() == 0);
    return;
  }
  // lm_head [V, d] is the unembedding [d, V] transposed.
  const std::vector<float>& lm_head = hf.at("lm_head.weight").values;
  for (size_t r = 0; r < d; ++r) {
    for (size_t v = 0; v < c.vocab_size; ++v) REQUIRE(p.unembedding(r, v) == lm_head[v * d + r]);
  }
}

TEST_CASE("Checkpoint widening: f16 and bf16 bit patterns", "[model][checkpoint]") {
  CHECK(HalfToFloat(0x3C00) == 1.0f);
  CHECK(HalfToFloat(0xC000) == -2.0f);
  CHECK(HalfToFloat(0x0001) == std::ldexp(1.0f, -24));     // the smallest subnormal
  CHECK(HalfToFloat(0x03FF) == std::ldexp(1023.0f, -24));  // the largest subnormal
  CHECK(HalfToFloat(0x0400) == std::ldexp(1.0f, -14));     // the smallest normal
  CHECK(HalfToFloat(0x7BFF) == 65504.0f);                  // the largest
  CHECK(HalfToFloat(0x7C00) == std::numeric_limits<float>::infinity());
  CHECK(HalfToFloat(0xFC00) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(HalfToFloat(0x7E00)));
  CHECK(HalfToFloat(0x0000) == 0.0f);
  CHECK(std::signbit(HalfToFloat(0x8000)));
  CHECK(HalfToFloat(0x3555) == 0.25f * (1 + 0x155 / 1024.0f));
  CHECK(BFloat16ToFloat(0x3F80) == 1.0f);
  CHECK(BFloat16ToFloat(0xC000) == -2.0f);
  CHECK(BFloat16ToFloat(0x7F80) == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(BFloat16ToFloat(0x7FC0)));
  CHECK(BFloat16ToFloat(0x0001) == std::ldexp(1.0f, -133));  // a float subnormal
  // WidenToFloat: little-endian, from any alignment.
  const uint8_t bytes[] = {0, 0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00};
  float out[3];
  WidenToFloat(DType::kF16, bytes + 1, 3, out);
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == -2.0f);
  CHECK(out[2] == std::ldexp(1.0f, -24));
  WidenToFloat(DType::kBF16, bytes + 1, 2, out);
  CHECK(out[0] == BFloat16ToFloat(0x3C00));
  CHECK(out[1] == -2.0f);
  const float f32[] = {1.5f, -0.25f};
  uint8_t f32_bytes[9];
  std::memcpy(f32_bytes + 1, f32, 8);
  WidenToFloat(DType::kF32, f32_bytes + 1, 2, out);
  CHECK(out[0] == 1.5f);
  CHECK(out[1] == -0.25f);
}

TEST_CASE("Checkpoint: a tiny GPT-2 filled by Hugging Face names, in any order",
          "[model][checkpoint]") {
  for (bool tied : {false, true}) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      INFO("tied " << tied << " dtype " << attnkit::model::DTypeName(dtype));
      const ModelConfig c = TinyGpt2(tied);
      const std::map<std::string, HfTensor> hf = Gpt2Checkpoint(c, 7);
      std::vector<std::string> names;
      for (const auto& [name, t] : hf) names.push_back(name);
      std::shuffle(names.begin(), names.end(), std::mt19937(int(dtype) + 3 * tied));
      CheckpointLoader loader;
      REQUIRE_OK(loader.Init(c));
      for (size_t i = 0; i < names.size(); ++i) {
        // Half of them without the "transformer." prefix.
        const std::string& name = names[i];
        const std::string given =
            i % 2 && name.compare(0, 12, "transformer.") == 0 ? name.substr(12) : name;
        INFO(given);
        REQUIRE_OK(Load(&loader, given, hf.at(name), dtype));
      }
      // lm_head beside a tied unembedding is skipped, as Hugging Face ties it.
      if (tied)
        REQUIRE_OK(Load(&loader, "lm_head.weight", HfTensor{{7, 4}, std::vector<float>(28)}));
      Model m;
      REQUIRE_OK(loader.Finish(&m));
      CHECK(m.config().bias);
      CHECK(m.config().tied_unembedding == tied);
      RequireFilledFrom(m, hf);
      // The loader is spent.
      RequireNames(loader.Finish(&m), "loader");
    }
  }
}

TEST_CASE("Checkpoint: every error names the tensor, and the loader keeps working",
          "[model][checkpoint]") {
  const ModelConfig c = TinyGpt2(false);
  const std::map<std::string, HfTensor> hf = Gpt2Checkpoint(c, 11);
  const HfTensor& c_attn = hf.at("transformer.h.0.attn.c_attn.weight");
  CheckpointLoader loader;
  RequireNames(Load(&loader, "wte.weight", hf.at("transformer.wte.weight")), "loader");
  REQUIRE_OK(loader.Init(c));

  // Unknown names: another model's, a layer past num_layers, a bad index.
  for (const char* name : {"bert.encoder.layer.0.attention.self.query.weight", "h.2.ln_1.weight",
                           "transformer.h.2.attn.c_attn.weight", "h.x.ln_1.weight",
                           "h.0.ln_3.weight", "wte", "h..ln_1.weight", "h.0"}) {
    INFO(name);
    const Status s = Load(&loader, name, c_attn);
    RequireNames(s, name);
    CHECK(s.code() == ErrorCode::kInvalidArgument);
  }
  CHECK(Load(&loader, "h.2.ln_1.weight", c_attn).detail().find("0 .. 1") != std::string::npos);

  // A wrong shape names both.
  HfTensor wrong = c_attn;
  wrong.shape = {4, 4};
  Status s = Load(&loader, "h.0.attn.c_attn.weight", wrong);
  RequireNames(s, "h.0.attn.c_attn.weight");
  CHECK(s.code() == ErrorCode::kShapeMismatch);
  CHECK(s.detail() == "expected shape [4, 12], got [4, 4]");
  s = Load(&loader, "h.0.ln_1.weight", HfTensor{{1, 4}, std::vector<float>(4)});
  CHECK(s.detail() == "expected shape [4], got [1, 4]");
  s = Load(&loader, "lm_head.weight", HfTensor{{4, 7}, std::vector<float>(28)});
  CHECK(s.detail() == "expected shape [7, 4], got [4, 7]");

  // A value that is not finite, in any dtype: named, with its element.
  HfTensor bad = c_attn;
  bad.values[13] = std::numeric_limits<float>::infinity();
  s = Load(&loader, "h.0.attn.c_attn.weight", bad);
  RequireNames(s, "h.0.attn.c_attn.weight");
  CHECK(s.detail() == "expected finite values, got inf at element 13");
  const uint16_t half_nan[] = {0x3C00, 0x7E00, 0, 0};
  s = loader.Load("h.1.ln_2.bias", DType::kF16, {4}, half_nan);
  RequireNames(s, "h.1.ln_2.bias");
  CHECK(s.detail().find("at element 1") != std::string::npos);
  const uint16_t bf16_inf[] = {0x3F80, 0x3F80, 0x3F80, 0xFF80};
  RequireNames(loader.Load("ln_f.weight", DType::kBF16, {4}, bf16_inf), "ln_f.weight");

  // Loaded once, then a second time.
  REQUIRE_OK(Load(&loader, "h.0.attn.c_attn.weight", c_attn));
  s = Load(&loader, "transformer.h.0.attn.c_attn.weight", c_attn);
  RequireNames(s, "transformer.h.0.attn.c_attn.weight");
  CHECK(s.detail() == "expected each tensor once, got this one a second time");

  // Null data.
  RequireNames(loader.Load("wpe.weight", DType::kF32, {5, 4}, nullptr), "data");

  // Missing at Finish: the first one the config needs, named.
  Model m;
  s = loader.Finish(&m);
  RequireNames(s, "wte.weight");
  for (const auto& [name, t] : hf) {
    if (name != "transformer.h.0.attn.c_attn.weight" && name != "transformer.h.1.mlp.c_fc.bias")
      REQUIRE_OK(Load(&loader, name, t));
  }
  RequireNames(loader.Finish(&m), "h.1.mlp.c_fc.bias");
  REQUIRE_OK(Load(&loader, "h.1.mlp.c_fc.bias", hf.at("transformer.h.1.mlp.c_fc.bias")));
  REQUIRE_OK(loader.Finish(&m));
  RequireFilledFrom(m, hf);
}

TEST_CASE("Checkpoint: tensors a config leaves out are refused", "[model][checkpoint]") {
  ModelConfig c = TinyGpt2(false);
  c.bias = false;
  const std::map<std::string, HfTensor> hf = Gpt2Checkpoint(TinyGpt2(false), 3);
  CheckpointLoader loader;
  REQUIRE_OK(loader.Init(c));
  Status s = Load(&loader, "h.0.attn.c_attn.bias", hf.at("transformer.h.0.attn.c_attn.bias"));
  RequireNames(s, "h.0.attn.c_attn.bias");
  CHECK(s.detail() ==
        "expected a config with bias on, got one without: no tensor of the model "
        "takes it");
  // Without biases the rest fills the model; its biases are not asked for.
  Model m;
  auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (const auto& [name, t] : hf) {
    if (!ends_with(name, "c_attn.bias") && !ends_with(name, "c_proj.bias") &&
        !ends_with(name, "c_fc.bias"))
      REQUIRE_OK(Load(&loader, name, t));
  }
  REQUIRE_OK(loader.Finish(&m));
  CHECK(m.params().layers[0].b_Q.size() == 0);

  // Attention-only without LayerNorm: no ln_ or mlp tensors.
  ModelConfig attention_only = c;
  attention_only.d_ff = 0;
  attention_only.layer_norm = false;
  REQUIRE_OK(loader.Init(attention_only));
  RequireNames(Load(&loader, "h.1.ln_1.weight", hf.at("transformer.h.1.ln_1.weight")),
               "h.1.ln_1.weight");
  RequireNames(Load(&loader, "h.1.mlp.c_fc.weight", hf.at("transformer.h.1.mlp.c_fc.weight")),
               "h.1.mlp.c_fc.weight");
  // A bad config is CheckConfig's.
  ModelConfig bad = c;
  bad.layer_norm_epsilon = 0;
  RequireNames(loader.Init(bad), "layer_norm_epsilon");
  RequireNames(Load(&loader, "wte.weight", hf.at("transformer.wte.weight")), "loader");
}

TEST_CASE("Model::Allocate: zero weights, no random draws", "[model][checkpoint]") {
  Model m;
  ModelConfig c = TinyGpt2(true);
  REQUIRE_OK(m.Allocate(c));
  for (const Matrix* t : m.params().Tensors()) {
    for (size_t k = 0; k < t->size(); ++k) REQUIRE(t->data()[k] == 0.0f);
  }
  CHECK(m.params().unembedding.size() == 0);
  c.num_layers = attnkit::model::kMaxLayers + 1;
  RequireNames(m.Allocate(c), "num_layers");
}

}  // namespace
