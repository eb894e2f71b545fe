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
#include "tests/checkpoint_test_util.h"
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
using checkpoint_test::Gpt2Checkpoint;
using checkpoint_test::HfTensor;
using checkpoint_test::Load;
using checkpoint_test::RequireFilledFrom;
using checkpoint_test::TinyGpt2;
using model_test::RequireNames;

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

// Tensor `t` of `hf` through LoadPart in parts of `part` values (the last
// one shorter), as `dtype`.
Status LoadInParts(CheckpointLoader* loader, const std::string& name, const HfTensor& t,
                   DType dtype, size_t part) {
  const std::vector<uint8_t> bytes = checkpoint_test::Bytes(dtype, t.values);
  const size_t n = t.values.size(), size = attnkit::model::DTypeBytes(dtype);
  for (size_t first = 0; first < n; first += part) {
    const Status s = loader->LoadPart(name, dtype, t.shape, first, std::min(part, n - first),
                                      bytes.data() + first * size);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

TEST_CASE("Checkpoint: tensors in parts fill the model as whole ones", "[model][checkpoint]") {
  // Parts that end inside a row, across W_Q | W_K | W_V's columns, and down
  // lm_head's transposed columns; one value at a time; every dtype.
  for (size_t part : {1, 3, 5, 13, 1000}) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      INFO("part " << part << " dtype " << attnkit::model::DTypeName(dtype));
      const ModelConfig c = TinyGpt2(false);
      const std::map<std::string, HfTensor> hf = Gpt2Checkpoint(c, 5);
      CheckpointLoader loader;
      REQUIRE_OK(loader.Init(c));
      for (const auto& [name, t] : hf) {
        INFO(name);
        REQUIRE_OK(LoadInParts(&loader, name, t, dtype, part));
      }
      Model m;
      REQUIRE_OK(loader.Finish(&m));
      RequireFilledFrom(m, hf);
    }
  }
}

TEST_CASE("Checkpoint: parts out of order, mixed or past the end are refused",
          "[model][checkpoint]") {
  const ModelConfig c = TinyGpt2(false);
  const std::map<std::string, HfTensor> hf = Gpt2Checkpoint(c, 9);
  const HfTensor& c_attn = hf.at("transformer.h.0.attn.c_attn.weight");  // [4, 12]
  const std::vector<uint8_t> bytes = checkpoint_test::Bytes(DType::kF32, c_attn.values);
  const std::string name = "h.0.attn.c_attn.weight";
  CheckpointLoader loader;
  REQUIRE_OK(loader.Init(c));
  // Not from value 0, then a gap.
  Status s = loader.LoadPart(name, DType::kF32, c_attn.shape, 4, 4, bytes.data() + 16);
  RequireNames(s, name);
  CHECK(s.detail() == "expected a part from value 0, got one from value 4");
  REQUIRE_OK(loader.LoadPart(name, DType::kF32, c_attn.shape, 0, 10, bytes.data()));
  s = loader.LoadPart(name, DType::kF32, c_attn.shape, 11, 4, bytes.data() + 44);
  CHECK(s.detail() ==
        "expected a part from value 10 (the values of it loaded so far) or 0, got one from "
        "value 11");
  // A failed part starts the tensor over: value 10 is now refused, 0 taken.
  s = loader.LoadPart(name, DType::kF32, c_attn.shape, 10, 4, bytes.data() + 40);
  CHECK(s.detail() == "expected a part from value 0, got one from value 10");
  REQUIRE_OK(loader.LoadPart(name, DType::kF32, c_attn.shape, 0, 10, bytes.data()));
  // Another tensor in between; another dtype; past the shape's values.
  s = Load(&loader, "wpe.weight", hf.at("transformer.wpe.weight"));
  RequireNames(s, "wpe.weight");
  CHECK(s.detail() ==
        "expected the rest of h.0.attn.c_attn.weight first (a tensor's parts one after "
        "another), got a part of this one");
  REQUIRE_OK(loader.LoadPart(name, DType::kF32, c_attn.shape, 0, 10, bytes.data()));
  const std::vector<uint8_t> half = checkpoint_test::Bytes(DType::kF16, c_attn.values);
  s = loader.LoadPart(name, DType::kF16, c_attn.shape, 10, 4, half.data() + 20);
  CHECK(s.detail() == "expected the dtype of its first part, F32, got F16");
  REQUIRE_OK(loader.LoadPart(name, DType::kF32, c_attn.shape, 0, 40, bytes.data()));
  s = loader.LoadPart(name, DType::kF32, c_attn.shape, 40, 9, bytes.data() + 160);
  RequireNames(s, name);
  CHECK(s.code() == attnkit::ErrorCode::kShapeMismatch);
  CHECK(s.detail() == "expected values up to 48 (the shape's), got 9 from value 40");
  // A value that is not finite names its index in the whole tensor.
  HfTensor bad = c_attn;
  bad.values[45] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<uint8_t> bad_bytes = checkpoint_test::Bytes(DType::kF32, bad.values);
  REQUIRE_OK(loader.LoadPart(name, DType::kF32, c_attn.shape, 0, 40, bytes.data()));
  s = loader.LoadPart(name, DType::kF32, c_attn.shape, 40, 8, bad_bytes.data() + 160);
  CHECK(s.detail() == "expected finite values, got nan at element 45");
  // Most of a tensor is not loaded: Finish names it; it starts over from 0.
  for (const auto& [n, t] : hf) {
    if (n != "transformer.h.0.attn.c_attn.weight") REQUIRE_OK(Load(&loader, n, t));
  }
  REQUIRE_OK(loader.LoadPart(name, DType::kF32, c_attn.shape, 0, 47, bytes.data()));
  Model m;
  RequireNames(loader.Finish(&m), "h.0.attn.c_attn.weight");
  REQUIRE_OK(LoadInParts(&loader, name, c_attn, DType::kF32, 7));
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

TEST_CASE("Checkpoint: which tensors the loader reads; dtype names", "[model][checkpoint]") {
  using attnkit::model::IsMaskBuffer;
  CHECK(IsMaskBuffer("h.0.attn.bias"));
  CHECK(IsMaskBuffer("transformer.h.11.attn.masked_bias"));
  CHECK_FALSE(IsMaskBuffer("h.0.attn.c_attn.bias"));
  CHECK_FALSE(IsMaskBuffer("attn.bias"));
  CheckpointLoader loader;
  REQUIRE_OK(loader.Init(TinyGpt2(true)));
  CHECK_FALSE(loader.Reads("h.1.attn.bias"));
  CHECK_FALSE(loader.Reads("lm_head.weight"));  // tied: skipped
  CHECK(loader.Reads("transformer.wte.weight"));
  CHECK(loader.Reads("bert.pooler.dense.weight"));  // Load names it
  REQUIRE_OK(loader.Init(TinyGpt2(false)));
  CHECK(loader.Reads("lm_head.weight"));
  DType d = DType::kF32;
  CHECK(attnkit::model::DTypeFromName("BF16", &d));
  CHECK(d == DType::kBF16);
  CHECK_FALSE(attnkit::model::DTypeFromName("F64", &d));
  CHECK(d == DType::kBF16);
  CHECK(attnkit::model::ShapeText({}) == "[]");
  CHECK(attnkit::model::ShapeText({768, 2304}) == "[768, 2304]");
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

TEST_CASE("Model::Allocate unzeroed: the same tensors for the loader to fill",
          "[model][checkpoint]") {
  const ModelConfig c = TinyGpt2(false);
  Model zeroed, unset;
  REQUIRE_OK(zeroed.Allocate(c));
  REQUIRE_OK(unset.Allocate(c, /*zeroed=*/false));
  const std::vector<Matrix*> a = zeroed.params().Tensors(), b = unset.params().Tensors();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i]->rows() == b[i]->rows());
    CHECK(a[i]->cols() == b[i]->cols());
    CHECK(b[i]->data() != nullptr);
  }
  // A shape whose count overflows is refused before any allocation, as Reset's.
  Matrix m(2, 3);
  CHECK_FALSE(m.ResetForOverwrite(SIZE_MAX / 2, 4));
  CHECK(m.rows() == 0);
  CHECK(m.cols() == 0);
  REQUIRE(m.ResetForOverwrite(3, 5));
  CHECK(m.size() == 15);
}

}  // namespace
