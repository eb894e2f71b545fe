// attnkit model tests: tiny GPT-2 checkpoints in Hugging Face's layout, as
// tensors by name (f32, f16 and bf16 bytes), and the check that a model holds
// them, which the loader's tests (model_checkpoint_test.cc) and the file
// reader's (model_checkpoint_file_test.cc) share.
#ifndef ATTNKIT_TESTS_CHECKPOINT_TEST_UTIL_H_
#define ATTNKIT_TESTS_CHECKPOINT_TEST_UTIL_H_

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "attnkit/checkpoint.h"
#include "attnkit/model.h"
#include "tests/model_test_util.h"

namespace checkpoint_test {

using attnkit::Matrix;
using attnkit::Status;
using attnkit::model::CheckpointLoader;
using attnkit::model::DType;
using attnkit::model::Model;
using attnkit::model::ModelConfig;

// A GPT-2 of 2 layers: d_model 4, 2 heads, d_ff 8, 7 tokens, 5 positions.
inline ModelConfig TinyGpt2(bool tied) {
  ModelConfig c = model_test::GptConfig(7, 5, 4, 2, 2, 0, 8);
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
inline std::map<std::string, HfTensor> Gpt2Checkpoint(const ModelConfig& c, uint32_t seed) {
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
inline uint16_t Narrow(DType dtype, float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if (dtype == DType::kBF16) return uint16_t(u >> 16);
  if (v == 0) return uint16_t(u >> 16);
  const uint32_t sign = u >> 31, exponent = (u >> 23) & 0xff, mantissa = u & 0x7fffff;
  return uint16_t(sign << 15 | (exponent - 127 + 15) << 10 | mantissa >> 13);
}

// values as the bytes of `dtype`, little-endian.
inline std::vector<uint8_t> Bytes(DType dtype, const std::vector<float>& values) {
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

inline Status Load(CheckpointLoader* loader, const std::string& name, const HfTensor& t,
                   DType dtype = DType::kF32) {
  const std::vector<uint8_t> bytes = Bytes(dtype, t.values);
  return loader->Load(name, dtype, t.shape, bytes.data());
}

// m [rows, cols] against columns [col0, col0 + m.cols()) of the row-major
// source [rows, source_cols].
inline void RequireColumns(const Matrix& m, const std::vector<float>& source, size_t source_cols,
                           size_t col0) {
  for (size_t r = 0; r < m.rows(); ++r) {
    for (size_t j = 0; j < m.cols(); ++j) REQUIRE(m(r, j) == source[r * source_cols + col0 + j]);
  }
}

// The model's tensors against the checkpoint's, by the table in checkpoint.h.
inline void RequireFilledFrom(const Model& m, const std::map<std::string, HfTensor>& hf) {
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

}  // namespace checkpoint_test

#endif  // ATTNKIT_TESTS_CHECKPOINT_TEST_UTIL_H_
