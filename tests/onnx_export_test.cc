// The ONNX export (include/attnkit/onnx.h): every kind of model the model
// layer holds (attention-only, GPT with and without biases, grouped K/V heads,
// the scale switch off, 1 and 8 layers, a tiny GPT-2 checkpoint tied and
// untied, a language model's vocabulary) at every opset, with and without the
// KV cache, parsed back with ONNX's own messages: its inputs, outputs,
// initializers (the model's weights, bit for bit) and metadata; ONNX's checker
// (libonnx 1.12: opsets up to 17) on the opset-17 files. onnxruntime runs the
// files in tests/js/onnx-native.test.js, which also compares them with the
// npm package's, byte for byte.
#include <catch2/catch.hpp>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "attnkit/checkpoint.h"
#include "attnkit/model.h"
#include "attnkit/onnx.h"
#include "attnkit/version.h"
#include "tests/checkpoint_test_util.h"
#include "tests/model_test_util.h"

namespace {

using attnkit::Status;
using attnkit::model::CheckOnnxSize;
using attnkit::model::ExportOnnx;
using attnkit::model::ExportOnnxFile;
using attnkit::model::kOnnxGraphBytes;
using attnkit::model::kOnnxMaxMessageBytes;
using attnkit::model::kOnnxMaxOpset;
using attnkit::model::kOnnxMinOpset;
using attnkit::model::Model;
using attnkit::model::ModelConfig;
using attnkit::model::OnnxOptions;
using model_test::GptConfig;
using model_test::RequireNames;

// The metadata_props of a file, by key.
std::map<std::string, std::string> Metadata(const onnx::ModelProto& proto) {
  std::map<std::string, std::string> out;
  for (const auto& p : proto.metadata_props()) out[p.key()] = p.value();
  return out;
}

std::vector<std::string> Names(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(x.name());
  return out;
}

// Exports `m` with `options`, parses it back and checks what every file
// holds: the opset, the interface, each weight as an initializer read by a
// node, the metadata; ONNX's checker at opset 17. Returns the parsed file.
onnx::ModelProto RequireExports(const Model& m, const OnnxOptions& options) {
  INFO("opset " << options.opset << ", cache " << options.cache);
  std::string bytes;
  REQUIRE_OK(ExportOnnx(m, options, &bytes));
  onnx::ModelProto proto;
  REQUIRE(proto.ParseFromString(bytes));
  // Written by parts, the file is still protobuf's encoding of what it holds.
  CHECK(proto.SerializeAsString() == bytes);
  REQUIRE(proto.opset_import_size() == 1);
  CHECK(proto.opset_import(0).domain().empty());
  CHECK(proto.opset_import(0).version() == options.opset);
  CHECK(proto.producer_name() == "attnkit");
  CHECK(proto.producer_version() == ATTNKIT_VERSION_STRING);

  const ModelConfig& c = m.config();
  std::vector<std::string> inputs = {"input_ids"}, outputs = {"logits"};
  for (size_t l = 0; options.cache && l < c.num_layers; ++l) {
    for (const char* part : {"key", "value"}) {
      inputs.push_back("past_key_values." + std::to_string(l) + "." + part);
      outputs.push_back("present." + std::to_string(l) + "." + part);
    }
  }
  const onnx::GraphProto& g = proto.graph();
  CHECK(Names(g.input()) == inputs);
  CHECK(Names(g.output()) == outputs);
  const auto& logits = g.output(0).type().tensor_type();
  CHECK(logits.elem_type() == onnx::TensorProto::FLOAT);
  REQUIRE(logits.shape().dim_size() == 3);
  CHECK(logits.shape().dim(2).dim_value() == int64_t(c.vocab_size));
  if (options.cache) {
    const auto& past = g.input(1).type().tensor_type().shape();
    REQUIRE(past.dim_size() == 4);
    CHECK(past.dim(1).dim_value() == int64_t(c.num_kv_heads));
    CHECK(past.dim(2).dim_param() == "past_sequence");
    CHECK(past.dim(3).dim_value() == int64_t(c.d_k));
  }

  // Every weight, under its name, bit for bit; every initializer read.
  std::set<std::string> read;
  for (const auto& node : g.node()) read.insert(node.input().begin(), node.input().end());
  std::map<std::string, const onnx::TensorProto*> initializers;
  for (const auto& t : g.initializer()) {
    CHECK(read.count(t.name()) == 1);
    initializers[t.name()] = &t;
  }
  const std::vector<const attnkit::Matrix*> tensors = m.params().Tensors();
  const std::vector<std::string> names = m.params().Names();
  for (size_t i = 0; i < tensors.size(); ++i) {
    // The weights file's names (layers.0.ln_gain, final_gain, ...).
    const std::string& name = names[i];
    INFO(name);
    REQUIRE(initializers.count(name) == 1);
    const onnx::TensorProto& t = *initializers[name];
    CHECK(t.data_type() == onnx::TensorProto::FLOAT);
    const std::string& raw = t.raw_data();
    REQUIRE(raw.size() == 4 * tensors[i]->size());
    CHECK(std::memcmp(raw.data(), tensors[i]->data(), raw.size()) == 0);
  }

  const std::map<std::string, std::string> meta = Metadata(proto);
  CHECK(meta.at("producer") == std::string("attnkit ") + ATTNKIT_VERSION_STRING);
  CHECK(meta.at("trained_steps") == std::to_string(m.trained_steps()));
  CHECK(meta.at("config").rfind("{\"vocabSize\":" + std::to_string(c.vocab_size) + ",", 0) == 0);
  if (options.opset == 17) {
    try {
      onnx::checker::check_model(proto);
    } catch (const std::exception& e) {
      FAIL("ONNX's checker: " << e.what());
    }
  }
  return proto;
}

// Every opset, without and with the cache.
void RequireExportsAll(const Model& m) {
  for (int opset = kOnnxMinOpset; opset <= kOnnxMaxOpset; ++opset) {
    for (bool cache : {false, true}) {
      OnnxOptions options;
      options.opset = opset;
      options.cache = cache;
      RequireExports(m, options);
    }
  }
}

// The operators of a file (each once).
std::set<std::string> Operators(const onnx::ModelProto& proto) {
  std::set<std::string> out;
  for (const auto& node : proto.graph().node()) out.insert(node.op_type());
  return out;
}

TEST_CASE("ONNX export: every kind of model, every opset, with and without the cache",
          "[model][onnx]") {
  struct Kind {
    const char* what;
    ModelConfig config;
  };
  ModelConfig attention_only = GptConfig(8, 12, 16, 1, 2, 0, 0);
  attention_only.layer_norm = false;
  ModelConfig gpt_bias = GptConfig(10, 12, 16, 2, 2, 0, 32);
  gpt_bias.bias = true;
  ModelConfig grouped = GptConfig(10, 12, 32, 2, 8, 2, 0);
  grouped.bias = true;
  ModelConfig unscaled = GptConfig(10, 12, 16, 1, 4, 1, 0);
  unscaled.layer_norm = false;
  unscaled.scale_by_sqrt_dk = false;
  ModelConfig eight = GptConfig(12, 12, 16, 8, 2, 0, 32);
  eight.bias = true;
  eight.tied_unembedding = true;
  const std::vector<Kind> kinds = {
      {"attention-only, 1 layer", attention_only},
      {"GPT with biases", gpt_bias},
      {"GPT without biases", GptConfig(10, 12, 16, 2, 2, 0, 32)},
      {"grouped K/V heads (8 on 2)", grouped},
      {"one K/V head, the scale switch off", unscaled},
      {"8 GPT layers, tied unembedding", eight},
  };
  for (const Kind& kind : kinds) {
    INFO(kind.what);
    Model m;
    REQUIRE_OK(m.Init(kind.config, 11));
    RequireExportsAll(m);
  }
}

TEST_CASE("ONNX export: the operators follow the opset", "[model][onnx]") {
  Model m;
  REQUIRE_OK(m.Init(GptConfig(10, 12, 16, 2, 2, 0, 32), 3));
  OnnxOptions options;
  const std::set<std::string> at23 = Operators(RequireExports(m, options));
  CHECK(at23.count("Attention") == 1);
  CHECK(at23.count("Gelu") == 1);
  CHECK(at23.count("Softmax") == 0);
  options.opset = 20;
  const std::set<std::string> at20 = Operators(RequireExports(m, options));
  CHECK(at20.count("Attention") == 0);
  CHECK(at20.count("Gelu") == 1);
  options.opset = 17;
  const std::set<std::string> at17 = Operators(RequireExports(m, options));
  CHECK(at17.count("Attention") == 0);
  CHECK(at17.count("Gelu") == 0);
  CHECK(at17.count("Softmax") == 1);
  CHECK(at17.count("Tanh") == 1);
}

TEST_CASE("ONNX export: a tiny GPT-2 checkpoint, tied and untied, names GPT-2's tokenizer",
          "[model][onnx]") {
  for (bool tied : {true, false}) {
    INFO("tied " << tied);
    const ModelConfig c = checkpoint_test::TinyGpt2(tied);
    attnkit::model::CheckpointLoader loader;
    REQUIRE_OK(loader.Init(c));
    for (const auto& [name, t] : checkpoint_test::Gpt2Checkpoint(c, 5)) {
      REQUIRE_OK(checkpoint_test::Load(&loader, name, t));
    }
    Model m;
    REQUIRE_OK(loader.Finish(&m));
    RequireExportsAll(m);
    OnnxOptions options;
    options.tokenizer = "gpt2";
    const onnx::ModelProto proto = RequireExports(m, options);
    const std::map<std::string, std::string> meta = Metadata(proto);
    CHECK(meta.at("tokenizer") == "gpt2");
    CHECK(meta.count("vocabulary") == 0);
    bool unembedding = false;
    for (const auto& t : proto.graph().initializer()) unembedding |= t.name() == "unembedding";
    CHECK(unembedding == !tied);
  }
}

TEST_CASE("ONNX export: the metadata as the npm package writes it", "[model][onnx]") {
  ModelConfig c = GptConfig(12, 8, 8, 1, 2, 0, 16);
  c.layer_norm_epsilon = 1e-7f;
  Model m;
  REQUIRE_OK(m.Init(c, 2));
  // Characters JSON.stringify escapes, and some it writes as they are.
  m.set_vocabulary({0xFFFD, 1, '\t', '\n', ' ', '"', '\\', 'a', 0x7F, 0xE9, 0x2028, 0x1F600});
  m.set_trained_steps(42);
  OnnxOptions options;
  std::map<std::string, std::string> meta = Metadata(RequireExports(m, options));
  CHECK(meta.at("config") ==
        "{\"vocabSize\":12,\"maxSeqLen\":8,\"dModel\":8,\"numLayers\":1,\"numHeads\":2,"
        "\"numKvHeads\":2,\"dK\":4,\"dFF\":16,\"layerNorm\":true,\"scaleBySqrtDk\":true,"
        "\"bias\":false,\"tiedUnembedding\":false,\"gpt2Init\":false,"
        "\"layerNormEpsilon\":1.0000000116860974e-7}");
  CHECK(meta.at("trained_steps") == "42");
  CHECK(meta.at("tokenizer") == "characters");
  CHECK(meta.at("vocabulary") ==
        "[\"\xEF\xBF\xBD\",\"\\u0001\",\"\\t\",\"\\n\",\" \",\"\\\"\",\"\\\\\",\"a\","
        "\"\x7F\",\"\xC3\xA9\",\"\xE2\x80\xA8\",\"\xF0\x9F\x98\x80\"]");
  // "none" leaves the vocabulary out; the default epsilon as JavaScript prints it.
  options.tokenizer = "none";
  c.layer_norm_epsilon = 1e-5f;
  REQUIRE_OK(m.Init(c, 2));
  meta = Metadata(RequireExports(m, options));
  CHECK(meta.count("tokenizer") == 0);
  CHECK(meta.count("vocabulary") == 0);
  CHECK(meta.at("config").find("\"layerNormEpsilon\":0.000009999999747378752}") !=
        std::string::npos);
}

TEST_CASE("ONNX export: to a file, the same bytes", "[model][onnx]") {
  Model m;
  REQUIRE_OK(m.Init(GptConfig(10, 12, 16, 2, 2, 0, 32), 4));
  OnnxOptions options;
  options.cache = true;
  std::string bytes, again;
  REQUIRE_OK(ExportOnnx(m, options, &bytes));
  REQUIRE_OK(ExportOnnx(m, options, &again));
  CHECK(bytes == again);
  const std::string path = "onnx_export_test.onnx";
  REQUIRE_OK(ExportOnnxFile(m, options, path));
  std::ifstream file(path, std::ios::binary);
  const std::string written((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
  file.close();
  std::remove(path.c_str());
  CHECK(written == bytes);
  RequireNames(ExportOnnxFile(m, options, "no/such/folder/model.onnx"), "path");
}

TEST_CASE("ONNX export: bad requests are named errors, and the model keeps working",
          "[model][onnx][errors]") {
  Model m;
  REQUIRE_OK(m.Init(GptConfig(8, 8, 8, 1, 2, 0, 0), 1));
  std::string bytes;
  OnnxOptions options;
  for (int opset : {kOnnxMinOpset - 1, kOnnxMaxOpset + 1, -1}) {
    options.opset = opset;
    const Status s = ExportOnnx(m, options, &bytes);
    RequireNames(s, "options.opset");
    CHECK(s.detail() == "expected an ONNX opset from 17 (LayerNormalization) to 24, got " +
                            std::to_string(opset));
    RequireNames(ExportOnnxFile(m, options, "never.onnx"), "options.opset");
  }
  options = OnnxOptions();
  options.tokenizer = "bpe";
  RequireNames(ExportOnnx(m, options, &bytes), "options.tokenizer");
  options.tokenizer = "characters";  // a model without a vocabulary
  RequireNames(ExportOnnx(m, options, &bytes), "options.tokenizer");
  RequireNames(ExportOnnx(Model(), OnnxOptions(), &bytes), "model");
  RequireNames(ExportOnnx(m, OnnxOptions(), nullptr), "bytes");
  CHECK(bytes.empty());
  REQUIRE_OK(ExportOnnx(m, OnnxOptions(), &bytes));
  CHECK_FALSE(bytes.empty());
}

TEST_CASE("ONNX export: a model over protobuf's 2 GiB is refused before anything is written",
          "[model][onnx][errors]") {
  // The check ExportOnnx makes first (a model of 2^29 parameters would take
  // minutes to make): the most parameters whose file fits, and one more.
  const size_t most = (kOnnxMaxMessageBytes - kOnnxGraphBytes) / 4;
  REQUIRE_OK(CheckOnnxSize(most));
  const Status s = CheckOnnxSize(most + 1);
  RequireNames(s, "model");
  CHECK(s.detail() ==
        "expected a model whose ONNX file fits one protobuf message (2 GiB: at most " +
            std::to_string(most) + " parameters), got " + std::to_string(most + 1) +
            " parameters (" + std::to_string(4 * (most + 1)) + " bytes of weights)");
}

}  // namespace
