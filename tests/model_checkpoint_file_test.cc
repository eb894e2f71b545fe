// attnkit model tests: GPT-2 checkpoints opened from their files
// (include/attnkit/checkpoint_file.h). Tiny checkpoints are written into a
// temporary folder in Hugging Face's layout (model.safetensors with a header
// written here by hand, config.json or none): F32, F16 and BF16; with and
// without the "transformer." prefix; lm_head stored, tied, or stored beside a
// tied config; the mask buffers present (one as BOOL) or not; 1, 2 and 13
// layers, heads of 2 and 3. Each opened model holds the tensors
// (RequireFilledFrom), gives logits equal bit for bit to those of the same
// tensors fed to CheckpointLoader, and a loss equal to the float64
// reference's. config.json's rules; every bad file, config and argument is a
// named error that leaves the output as it was.
#include <catch2/catch.hpp>

#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "attnkit/checkpoint.h"
#include "attnkit/checkpoint_file.h"
#include "attnkit/model.h"
#include "tests/checkpoint_test_util.h"
#include "tests/model_reference.h"
#include "tests/model_test_util.h"

namespace {

namespace fs = std::filesystem;
using attnkit::ErrorCode;
using attnkit::Matrix;
using attnkit::Status;
using attnkit::model::Batch;
using attnkit::model::CheckpointLoader;
using attnkit::model::CheckpointOptions;
using attnkit::model::ConfigFromJson;
using attnkit::model::ConfigFromShapes;
using attnkit::model::DType;
using attnkit::model::Metrics;
using attnkit::model::Model;
using attnkit::model::ModelConfig;
using attnkit::model::OpenCheckpoint;
using attnkit::model::ReadConfigJson;
using attnkit::model::SafetensorsFile;
using attnkit::model::SafetensorsTensor;
using checkpoint_test::Gpt2Checkpoint;
using checkpoint_test::HfTensor;
using checkpoint_test::RequireFilledFrom;
using checkpoint_test::TinyGpt2;
using model_test::RequireNames;

// A fresh folder under the system's temporary one, removed with its files.
class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "attnkit-checkpoint-XXXXXX").string();
    REQUIRE(mkdtemp(&t[0]) != nullptr);
    path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(f.good());
}

// One tensor of a safetensors file: its header entry and data.
struct Entry {
  std::string name, dtype;
  std::vector<size_t> shape;
  std::string bytes;
};

std::string JsonShape(const std::vector<size_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// 8 bytes of little-endian `header_length`, then `header` and `data`.
std::string Raw(uint64_t header_length, const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char(header_length >> (8 * i) & 0xff);
  return out + header + data;
}

// A safetensors file of `entries`, their data in this order, the header
// padded with spaces to a multiple of 8 (as Hugging Face's writer pads it).
std::string Safetensors(const std::vector<Entry>& entries) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}", data;
  for (const Entry& e : entries) {
    header += ",\"" + e.name + "\":{\"dtype\":\"" + e.dtype + "\",\"shape\":" + JsonShape(e.shape) +
              ",\"data_offsets\":[" + std::to_string(data.size()) + "," +
              std::to_string(data.size() + e.bytes.size()) + "]}";
    data += e.bytes;
  }
  header += "}";
  while (header.size() % 8) header += ' ';
  return Raw(header.size(), header, data);
}

// How a checkpoint is written.
struct Layout {
  DType dtype = DType::kF32;
  bool prefix = true;        // "transformer." before every name but lm_head's
  bool buffers = true;       // h.{i}.attn.bias (BOOL) and h.{i}.attn.masked_bias (F32)
  bool head_stored = false;  // lm_head.weight written though the config ties it
};

// The entries of checkpoint `hf` (Gpt2Checkpoint's) written as `layout` says.
std::vector<Entry> Entries(const std::map<std::string, HfTensor>& hf, const Layout& layout) {
  std::vector<Entry> out;
  for (const auto& [name, t] : hf) {
    const bool mask = name.size() > 10 && (name.compare(name.size() - 10, 10, ".attn.bias") == 0 ||
                                           name.find("masked_bias") != std::string::npos);
    if (mask && !layout.buffers) continue;
    const std::string given =
        !layout.prefix && name.compare(0, 12, "transformer.") == 0 ? name.substr(12) : name;
    Entry e{given, attnkit::model::DTypeName(layout.dtype), t.shape, ""};
    if (mask && name.find("masked_bias") == std::string::npos) {
      // The causal mask as Hugging Face stores it: one byte per entry.
      e.dtype = "BOOL";
      for (size_t k = 0; k < t.values.size(); ++k) e.bytes += char(t.values[k] > 0);
    } else {
      const std::vector<uint8_t> b =
          checkpoint_test::Bytes(mask ? DType::kF32 : layout.dtype, t.values);
      if (mask) e.dtype = "F32";
      e.bytes.assign(b.begin(), b.end());
    }
    out.push_back(e);
  }
  if (layout.head_stored) {
    const HfTensor& wte = hf.at("transformer.wte.weight");
    const std::vector<uint8_t> b = checkpoint_test::Bytes(layout.dtype, wte.values);
    out.push_back({"lm_head.weight", attnkit::model::DTypeName(layout.dtype), wte.shape,
                   std::string(b.begin(), b.end())});
  }
  return out;
}

// c's config.json as Hugging Face writes it (n_inner null when d_ff is 4 d_model).
std::string ConfigJson(const ModelConfig& c) {
  char eps[32];
  std::snprintf(eps, sizeof(eps), "%.9g", double(c.layer_norm_epsilon));
  const std::string n_inner = c.d_ff == 4 * c.d_model ? "null" : std::to_string(c.d_ff);
  return "{\n  \"activation_function\": \"gelu_new\",\n  \"architectures\": "
         "[\"GPT2LMHeadModel\"],\n"
         "  \"model_type\": \"gpt2\",\n  \"n_ctx\": " +
         std::to_string(c.max_seq_len) + ",\n  \"n_embd\": " + std::to_string(c.d_model) +
         ",\n  \"n_head\": " + std::to_string(c.num_heads) + ",\n  \"n_inner\": " + n_inner +
         ",\n  \"n_layer\": " + std::to_string(c.num_layers) +
         ",\n  \"n_positions\": " + std::to_string(c.max_seq_len) +
         ",\n  \"layer_norm_epsilon\": " + eps + ",\n  \"scale_attn_weights\": true,\n" +
         "  \"tie_word_embeddings\": " + (c.tied_unembedding ? "true" : "false") +
         ",\n  \"vocab_size\": " + std::to_string(c.vocab_size) + "\n}\n";
}

// One sequence of up to 5 tokens of the model's vocabulary, every position scored.
Batch SmallSequence(const ModelConfig& c) {
  Batch b;
  b.batch = 1;
  b.seq_len = std::min<size_t>(5, c.max_seq_len);
  const int32_t tokens[] = {1, 4, 0, 2, 3}, targets[] = {4, 0, 2, 3, 1};
  for (size_t t = 0; t < b.seq_len; ++t) {
    b.tokens.push_back(tokens[t] % int32_t(c.vocab_size));
    b.targets.push_back(targets[t] % int32_t(c.vocab_size));
  }
  return b;
}

// The model's logits [T, vocab_size] and loss on SmallSequence.
std::vector<float> Logits(Model* m, double* loss = nullptr) {
  Metrics metrics;
  Matrix logits;
  REQUIRE_OK(m->Forward(SmallSequence(m->config()), &metrics, &logits));
  if (loss) *loss = metrics.loss;
  return std::vector<float>(logits.data(), logits.data() + logits.size());
}

bool BitEqual(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

// The checkpoint `hf` fed to CheckpointLoader directly, as `dtype`.
Model LoadDirectly(const ModelConfig& c, const std::map<std::string, HfTensor>& hf, DType dtype) {
  CheckpointLoader loader;
  REQUIRE_OK(loader.Init(c));
  for (const auto& [name, t] : hf) REQUIRE_OK(checkpoint_test::Load(&loader, name, t, dtype));
  Model m;
  REQUIRE_OK(loader.Finish(&m));
  return m;
}

// 1 layer of 3 heads of d_k 3 (d_model 9), d_ff 12 (not 4 d_model), tied.
ModelConfig OddGpt2() {
  ModelConfig c = TinyGpt2(true);
  c.vocab_size = 11;
  c.max_seq_len = 7;
  c.d_model = 9;
  c.num_layers = 1;
  c.num_heads = 3;
  c.d_ff = 12;
  return c;
}

// GPT-2 small's config (openai-community/gpt2).
void RequireGpt2Small(const ModelConfig& c) {
  CHECK(c.vocab_size == 50257);
  CHECK(c.max_seq_len == 1024);
  CHECK(c.d_model == 768);
  CHECK(c.num_layers == 12);
  CHECK(c.num_heads == 12);
  CHECK(c.d_ff == 3072);
  CHECK(c.layer_norm_epsilon == 1e-5f);
  CHECK((c.bias && c.layer_norm && c.scale_by_sqrt_dk && c.tied_unembedding));
}

TEST_CASE("Checkpoint files: a tiny GPT-2 opens as the loader fills it, bit for bit",
          "[model][checkpoint]") {
  ModelConfig deep = TinyGpt2(false);
  deep.num_layers = 13;
  for (const ModelConfig& base : {TinyGpt2(false), TinyGpt2(true), OddGpt2(), deep}) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      // With config.json (epsilon 1e-3): prefixed with the buffers (and a
      // stored lm_head beside a tied config), or bare without; without it
      // (the shapes decide, epsilon 1e-5): prefixed without the buffers, or
      // bare with.
      for (int variant = 0; variant < 4; ++variant) {
        const bool json = variant < 2;
        Layout layout;
        layout.dtype = dtype;
        layout.prefix = variant == 0 || variant == 2;
        layout.buffers = variant == 0 || variant == 3;
        layout.head_stored = variant == 0 && base.tied_unembedding;
        ModelConfig c = base;
        c.layer_norm_epsilon = json ? 1e-3f : 1e-5f;
        INFO("layers " << c.num_layers << " tied " << c.tied_unembedding << " dtype "
                       << attnkit::model::DTypeName(dtype) << " variant " << variant);
        const std::map<std::string, HfTensor> hf = Gpt2Checkpoint(c, 17 + uint32_t(variant));
        TempDir dir;
        WriteFile(dir / "model.safetensors", Safetensors(Entries(hf, layout)));
        if (json) WriteFile(dir / "config.json", ConfigJson(c));
        CheckpointOptions options;
        if (!json) options.num_heads = c.num_heads;
        Model opened;
        REQUIRE_OK(OpenCheckpoint(dir.path(), options, &opened));
        const ModelConfig& got = opened.config();
        CHECK(got.vocab_size == c.vocab_size);
        CHECK(got.max_seq_len == c.max_seq_len);
        CHECK(got.d_model == c.d_model);
        CHECK(got.num_layers == c.num_layers);
        CHECK(got.num_heads == c.num_heads);
        CHECK(got.d_ff == c.d_ff);
        CHECK(got.tied_unembedding == c.tied_unembedding);
        CHECK(got.layer_norm_epsilon == c.layer_norm_epsilon);
        CHECK((got.bias && got.layer_norm && got.scale_by_sqrt_dk));
        RequireFilledFrom(opened, hf);
        Model direct = LoadDirectly(c, hf, dtype);
        double loss = 0;
        const std::vector<float> logits = Logits(&opened, &loss);
        CHECK(BitEqual(logits, Logits(&direct)));
        const double reference = model_ref::Loss(
            opened.config(), model_ref::FromParameters(opened.params()), SmallSequence(c));
        CHECK(std::abs(loss - reference) <= 1e-4 * std::abs(reference));
        // The .safetensors path itself finds the same (config.json beside it).
        Model by_file;
        REQUIRE_OK(OpenCheckpoint(dir / "model.safetensors", options, &by_file));
        CHECK(BitEqual(Logits(&by_file), logits));
      }
    }
  }
}

TEST_CASE("Checkpoint files: tensors over a staged part open as the loader fills them whole",
          "[model][checkpoint]") {
  // wte [300000, 4] and lm_head as much: 4.8 MB each in F32, over the 4 MB
  // OpenCheckpoint stages at once; 2.4 MB in F16 (one part).
  ModelConfig c = TinyGpt2(false);
  c.vocab_size = 300000;
  for (DType dtype : {DType::kF32, DType::kF16}) {
    INFO(attnkit::model::DTypeName(dtype));
    const std::map<std::string, HfTensor> hf = Gpt2Checkpoint(c, 23);
    Layout layout;
    layout.dtype = dtype;
    TempDir dir;
    WriteFile(dir / "model.safetensors", Safetensors(Entries(hf, layout)));
    WriteFile(dir / "config.json", ConfigJson(c));
    Model opened;
    REQUIRE_OK(OpenCheckpoint(dir.path(), CheckpointOptions(), &opened));
    RequireFilledFrom(opened, hf);
    Model direct = LoadDirectly(c, hf, dtype);
    CHECK(BitEqual(Logits(&opened), Logits(&direct)));
  }
}

TEST_CASE("Checkpoint files: SafetensorsFile reads the header and each tensor's bytes",
          "[model][checkpoint]") {
  TempDir dir;
  const std::vector<Entry> entries = {
      {"b", "F16", {2, 3}, std::string(12, '\x11')},
      {"a", "F32", {}, std::string("\x00\x00\x80\x3f", 4)},
      {"transformer.h.0.attn.bias", "BOOL", {1, 1, 2, 2}, std::string("\x01\x00\x01\x01", 4)},
      {"z", "BF16", {0, 4}, ""},
  };
  const std::string bytes = Safetensors(entries);
  WriteFile(dir / "x.safetensors", bytes);
  SafetensorsFile file;
  REQUIRE_OK(file.Open(dir / "x.safetensors"));
  CHECK(file.path() == dir / "x.safetensors");
  CHECK(file.file_bytes() == bytes.size());
  const std::vector<SafetensorsTensor>& t = file.tensors();
  REQUIRE(t.size() == 4);
  // File order (by offset), not the header's key order.
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = header << 8 | uint8_t(bytes[size_t(i)]);
  uint64_t at = 8 + header;
  for (size_t i = 0; i < 4; ++i) {
    INFO(i);
    CHECK(t[i].name == entries[i].name);
    CHECK(t[i].dtype == entries[i].dtype);
    CHECK(t[i].shape == entries[i].shape);
    CHECK(t[i].begin == at);
    at += entries[i].bytes.size();
    CHECK(t[i].end == at);
    std::vector<uint8_t> data(3, 7);
    REQUIRE_OK(file.Read(t[i], &data));
    CHECK(std::string(data.begin(), data.end()) == entries[i].bytes);
  }
  // A part of a tensor's bytes, and one that runs past them.
  std::vector<uint8_t> part;
  REQUIRE_OK(file.Read(t[0], 2, 6, &part));
  CHECK(std::string(part.begin(), part.end()) == entries[0].bytes.substr(2, 6));
  Status past = file.Read(t[0], 8, 5, &part);
  RequireNames(past, dir / "x.safetensors" + " tensor \"b\"");
  CHECK(past.detail() == "expected a part within its 12 bytes, got 5 bytes from byte 8");
  // A file cut short after Open: the read comes short, named.
  const SafetensorsTensor last_full = t[2];
  fs::resize_file(dir / "x.safetensors", bytes.size() - 2);
  std::vector<uint8_t> data;
  const Status s = file.Read(last_full, &data);
  RequireNames(s, dir / "x.safetensors" + " tensor \"transformer.h.0.attn.bias\"");
  CHECK(s.detail().find("the file changed") != std::string::npos);
  // A failed Open leaves the file closed and empty.
  WriteFile(dir / "x.safetensors", "not one");
  RequireNames(file.Open(dir / "x.safetensors"), dir / "x.safetensors");
  CHECK(file.tensors().empty());
  CHECK(file.file_bytes() == 0);
  RequireNames(file.Read(last_full, &data), "file");
  RequireNames(file.Read(last_full, nullptr), "bytes");
}

TEST_CASE("Checkpoint files: config.json by GPT-2's rules", "[model][checkpoint]") {
  // openai-community/gpt2's config.json, as the Hub serves it.
  const std::string gpt2 = R"({
  "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
  "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
  "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
  "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
  "resid_pdrop": 0.1, "summary_activation": null, "summary_first_dropout": 0.1,
  "summary_proj_to_labels": true, "summary_type": "cls_index", "summary_use_proj": true,
  "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
  "vocab_size": 50257
})";
  ModelConfig c;
  REQUIRE_OK(ConfigFromJson(gpt2, &c));
  RequireGpt2Small(c);

  // The smallest config: every default.
  const std::string sizes =
      R"("vocab_size": 7, "n_positions": 5, "n_embd": 4, "n_layer": 2, "n_head": 2)";
  auto with = [&](const std::string& more) {
    return "{" + sizes + (more.empty() ? "" : ", ") + more + "}";
  };
  REQUIRE_OK(ConfigFromJson(with(""), &c));
  CHECK(c.d_ff == 16);
  CHECK(c.layer_norm_epsilon == 1e-5f);
  CHECK(c.tied_unembedding);
  REQUIRE_OK(ConfigFromJson(with(R"("n_inner": 10, "tie_word_embeddings": false,
      "layer_norm_epsilon": 1e-6, "activation_function": "gelu_pytorch_tanh")"),
                            &c));
  CHECK(c.d_ff == 10);
  CHECK(!c.tied_unembedding);
  CHECK(c.layer_norm_epsilon == 1e-6f);
  REQUIRE_OK(ConfigFromJson(with(R"("n_inner": null, "layer_norm_epsilon": null)"), &c));
  CHECK(c.d_ff == 16);
  // n_ctx where n_positions is absent.
  REQUIRE_OK(ConfigFromJson(
      R"({"vocab_size": 7, "n_ctx": 3, "n_embd": 4, "n_layer": 1, "n_head": 1})", &c));
  CHECK(c.max_seq_len == 3);

  // Each refusal names the key; the config is left as it was.
  const ModelConfig before = c;
  const std::pair<std::string, std::string> bad[] = {
      {"{", "config.json"},
      {"[1, 2]", "config.json"},
      {"{\"vocab_size\": 7}", "config.json n_ctx"},  // n_positions absent: named by n_ctx
      {with(R"("model_type": "bert")"), "config.json model_type"},
      {with(R"("activation_function": "relu")"), "config.json activation_function"},
      {with(R"("scale_attn_weights": false)"), "config.json scale_attn_weights"},
      {with(R"("scale_attn_by_inverse_layer_idx": true)"),
       "config.json scale_attn_by_inverse_layer_idx"},
      {with(R"("add_cross_attention": true)"), "config.json add_cross_attention"},
      {with(R"("tie_word_embeddings": "yes")"), "config.json tie_word_embeddings"},
      {with(R"("layer_norm_epsilon": 0)"), "config.json layer_norm_epsilon"},
      {with(R"("layer_norm_epsilon": -1e-5)"), "config.json layer_norm_epsilon"},
      {with(R"("layer_norm_epsilon": "1e-5")"), "config.json layer_norm_epsilon"},
      {with(R"("layer_norm_epsilon": 1e-60)"), "config.json layer_norm_epsilon"},
      {with(R"("n_inner": 0)"), "config.json n_inner"},
      {R"({"vocab_size": 7, "n_positions": 5, "n_embd": 4, "n_layer": 49, "n_head": 2})",
       "config.json n_layer"},
      {R"({"vocab_size": 7, "n_positions": 5, "n_embd": 4, "n_layer": 0, "n_head": 2})",
       "config.json n_layer"},
      {R"({"vocab_size": 1, "n_positions": 5, "n_embd": 4, "n_layer": 1, "n_head": 2})",
       "config.json vocab_size"},
      {R"({"vocab_size": 7, "n_positions": 5, "n_embd": 4, "n_layer": 1, "n_head": 3})",
       "config.json n_head"},
      {R"({"vocab_size": 7, "n_positions": -5, "n_embd": 4, "n_layer": 1, "n_head": 2})",
       "config.json n_positions"},
      {R"({"vocab_size": 7, "n_positions": 5, "n_embd": 4.5, "n_layer": 1, "n_head": 2})",
       "config.json n_embd"},
      {R"({"vocab_size": 7, "n_positions": 5, "n_embd": 4, "n_layer": 1})", "config.json n_head"},
      {R"({"vocab_size": 7, "n_positions": 5, "n_embd": 100000, "n_layer": 1, "n_head": 2})",
       "config.json n_embd"},
  };
  for (const auto& [text, parameter] : bad) {
    INFO(text);
    RequireNames(ConfigFromJson(text, &c), parameter);
    CHECK(c.d_model == before.d_model);
    CHECK(c.max_seq_len == before.max_seq_len);
  }
  CHECK(ConfigFromJson(with(R"("model_type": "bert")"), &c).detail() ==
        R"(expected "gpt2" (GPT2LMHeadModel: gpt2, distilgpt2, gpt2-medium ...), got "bert")");
  RequireNames(ConfigFromJson(with(""), nullptr), "config");

  // From a file: errors name its path.
  TempDir dir;
  WriteFile(dir / "config.json", with(R"("n_layer": 60)"));
  RequireNames(ReadConfigJson(dir / "config.json", &c), dir / "config.json n_layer");
  RequireNames(ReadConfigJson(dir / "none.json", &c), dir / "none.json");
  RequireNames(ReadConfigJson(dir.path(), &c), dir.path());
  WriteFile(dir / "big.json", std::string(attnkit::model::kMaxConfigJsonBytes + 1, ' '));
  RequireNames(ReadConfigJson(dir / "big.json", &c), dir / "big.json");
  RequireNames(ReadConfigJson(dir / "config.json", nullptr), "config");
  WriteFile(dir / "config.json", gpt2);
  REQUIRE_OK(ReadConfigJson(dir / "config.json", &c));
  CHECK(c.num_heads == 12);
}

TEST_CASE("Checkpoint files: ConfigFromShapes reads GPT-2's sizes off the tensors",
          "[model][checkpoint]") {
  std::map<std::string, std::vector<size_t>> shapes = {
      {"transformer.wte.weight", {50257, 768}},
      {"transformer.wpe.weight", {1024, 768}},
      {"transformer.h.0.mlp.c_fc.weight", {768, 3072}},
      {"transformer.h.11.ln_1.weight", {768}},
      {"transformer.h.3.attn.bias", {1, 1, 1024, 1024}}};
  ModelConfig c;
  REQUIRE_OK(ConfigFromShapes(shapes, 12, &c));
  RequireGpt2Small(c);
  shapes["lm_head.weight"] = {50257, 768};
  REQUIRE_OK(ConfigFromShapes(shapes, 12, &c));
  CHECK(!c.tied_unembedding);
  RequireNames(ConfigFromShapes(shapes, 0, &c), "num_heads");
  RequireNames(ConfigFromShapes(shapes, 5, &c), "num_heads");
  RequireNames(ConfigFromShapes(shapes, 12, nullptr), "config");
  shapes["transformer.h.48.ln_1.weight"] = {768};
  RequireNames(ConfigFromShapes(shapes, 12, &c), "num_layers");
  shapes.erase("transformer.h.48.ln_1.weight");
  shapes["transformer.wpe.weight"] = {1024};
  RequireNames(ConfigFromShapes(shapes, 12, &c), "transformer.wpe.weight");
  shapes.erase("transformer.wpe.weight");
  const Status s = ConfigFromShapes(shapes, 12, &c);
  RequireNames(s, "wpe.weight");
  CHECK(s.detail().find("lm_head.weight") != std::string::npos);
}

TEST_CASE("Checkpoint files: every bad file is a named error, the library keeps working",
          "[model][checkpoint]") {
  const ModelConfig c = TinyGpt2(false);
  const std::map<std::string, HfTensor> hf = Gpt2Checkpoint(c, 23);
  const std::vector<Entry> good = Entries(hf, Layout());
  TempDir dir;
  const std::string file = dir / "model.safetensors";
  const std::string config = dir / "config.json";
  const auto tensor = [&](const std::string& name) { return file + " tensor \"" + name + "\""; };
  WriteFile(file, Safetensors(good));
  WriteFile(config, ConfigJson(c));
  // A model opened before every failure, which must leave it as it was.
  Model m;
  REQUIRE_OK(OpenCheckpoint(dir.path(), {}, &m));
  const std::vector<float> logits = Logits(&m);
  // Opens dir with `safetensors` as its model.safetensors: an error of
  // `code` naming `parameter`, its detail holding `detail`, and m as it was.
  auto fails = [&](const std::string& safetensors, const std::string& parameter,
                   const std::string& detail, CheckpointOptions options = {},
                   ErrorCode code = ErrorCode::kInvalidArgument) {
    WriteFile(file, safetensors);
    const Status s = OpenCheckpoint(dir.path(), options, &m);
    INFO(s.ToString());
    RequireNames(s, parameter);
    CHECK(s.code() == code);
    CHECK(s.detail().find(detail) != std::string::npos);
    REQUIRE(BitEqual(Logits(&m), logits));
  };
  // Another architecture's tensor.
  const std::vector<Entry> bert = {
      {"bert.embeddings.word_embeddings.weight", "F32", {7, 4}, std::string(112, '\0')}};
  auto header = [&](const std::string& json, const std::string& data = "") {
    return Raw(json.size(), json, data);
  };

  SECTION("the file: missing, a directory, empty, short, not safetensors") {
    RequireNames(OpenCheckpoint(dir / "missing.safetensors", {}, &m), dir / "missing.safetensors");
    TempDir empty_dir;
    RequireNames(OpenCheckpoint(empty_dir.path(), {}, &m), empty_dir / "model.safetensors");
    fails("", file, "got 0 bytes");
    fails("abcde", file, "got 5 bytes");
    fails(Raw(1, "{"), file, "a safetensors header length of 2 .. 100000000 bytes");
    fails(Raw(uint64_t{1} << 40, "{}"), file, "got 1099511627776");
    fails(Raw(1000, "{}      "), file, "expected a header of at most 8 bytes (the file holds 16)");
    fails("<!DOCTYPE html><html>not a checkpoint</html>", file, "header length");
  }
  SECTION("the header: JSON that does not parse, or not an object") {
    fails(header("{\"a\": }"), file, "text that does not parse");
    fails(header("{\"\xff\": 1}"), file, "text that does not parse");
    fails(header("[1, 2]  "), file, "got a JSON array");
    // Nested deeply: a parse error or an array, never a crash.
    fails(header(std::string(100000, '[')), file, "text that does not parse");
    fails(header(std::string(100000, '[') + std::string(100000, ']')), file, "got a JSON array");
    fails(header("{\"wte.weight\": " + std::string(100000, '[') + std::string(100000, ']') + "}"),
          tensor("wte.weight"), "got [[[[...]]]]");
  }
  SECTION("an entry without dtype, shape or data_offsets") {
    for (const std::string& entry :
         {"5", "{\"shape\": [1], \"data_offsets\": [0, 4]}",
          "{\"dtype\": \"F32\", \"data_offsets\": [0, 4]}", "{\"dtype\": \"F32\", \"shape\": [1]}",
          "{\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}",
          "{\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]}",
          "{\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, \"4\"]}",
          "{\"dtype\": 3, \"shape\": [1], \"data_offsets\": [0, 4]}"}) {
      INFO(entry);
      fails(header("{\"wte.weight\": " + entry + "}", "abcd"), tensor("wte.weight"),
            "expected {dtype, shape: [sizes], data_offsets: [begin, end]}");
    }
  }
  SECTION("a dtype other than F32, F16 or BF16") {
    for (const char* dtype : {"F64", "I8", "BOOL", "f32"}) {
      fails(header(std::string("{\"wte.weight\": {\"dtype\": \"") + dtype +
                       "\", \"shape\": [1], \"data_offsets\": [0, 8]}}",
                   "abcdefgh"),
            tensor("wte.weight"),
            std::string("F32, F16 or BF16 (widened to float32), got ") + dtype);
    }
  }
  SECTION("offsets that disagree with shape x dtype, overlap, leave gaps or run past the end") {
    fails(header(R"({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}})",
                 std::string(12, 'x')),
          tensor("a"), "expected 16 bytes (shape [2, 2] of F32), got data_offsets [0, 12]");
    fails(header(R"({"a": {"dtype": "F16", "shape": [1099511627776, 1099511627776],
                         "data_offsets": [0, 4]}})",
                 "abcd"),
          tensor("a"), "more than 2^64 bytes");
    fails(header(R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})",
                 std::string(8, 'x')),
          tensor("a"), "begin <= end");
    fails(header(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                   "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})",
                 std::string(24, 'x')),
          tensor("b"), "which overlaps the one before");
    fails(header(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                   "b": {"dtype": "F32", "shape": [4], "data_offsets": [20, 36]}})",
                 std::string(36, 'x')),
          tensor("b"), "which leaves a gap before it");
    fails(header(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [4, 20]}})",
                 std::string(20, 'x')),
          tensor("a"), "data_offsets starting at 0");
    const std::string whole = Safetensors(good);
    fails(whole.substr(0, whole.size() - 4), file, "a truncated file, or a header that lies");
    fails(whole + "tail", file, "bytes after the last tensor");
    fails(header(
              R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 18446744073709551615]}})",
              std::string(16, 'x')),
          tensor("a"), "18446744073709551615");
  }
  SECTION("tensors the model lacks, misses, or of the wrong shape; values not finite") {
    std::vector<Entry> entries = good;
    // Another architecture's names.
    fails(Safetensors(bert), tensor("bert.embeddings.word_embeddings.weight"),
          "expected a GPT-2 tensor name");
    // A tensor missing: named when the rest has arrived.
    std::vector<Entry> missing;
    for (const Entry& e : entries)
      if (e.name != "transformer.h.1.mlp.c_fc.bias") missing.push_back(e);
    fails(Safetensors(missing), tensor("h.1.mlp.c_fc.bias"),
          "expected every tensor of the config loaded");
    // A layer past config.json's n_layer.
    std::vector<Entry> extra = entries;
    extra.push_back({"transformer.h.2.ln_1.weight", "F32", {4}, std::string(16, '\0')});
    fails(Safetensors(extra), tensor("transformer.h.2.ln_1.weight"), "expected layer 0 .. 1");
    // A value that is not finite.
    std::vector<Entry> nan = entries;
    for (Entry& e : nan) {
      if (e.name == "transformer.ln_f.bias") {
        const float v = std::nanf("");
        std::memcpy(&e.bytes[4], &v, 4);
      }
    }
    fails(Safetensors(nan), tensor("transformer.ln_f.bias"), "expected finite values, got nan");
    // A config that disagrees with the tensors: their shapes are named.
    ModelConfig wider = c;
    wider.d_model = 8;
    WriteFile(config, ConfigJson(wider));
    fails(Safetensors(entries), tensor("lm_head.weight"), "expected shape [7, 8]", {},
          ErrorCode::kShapeMismatch);
  }
  SECTION("config.json and options.num_heads") {
    WriteFile(config, "{\"n_embd\": ");
    fails(Safetensors(good), config, "text that does not parse");
    WriteFile(config, ConfigJson(c));
    CheckpointOptions options;
    options.num_heads = 4;
    fails(Safetensors(good), "options.num_heads", "expected 0 or n_head 2 of " + config + ", got 4",
          options);
    options = {};
    options.config_path = dir / "other.json";
    fails(Safetensors(good), dir / "other.json", "expected a readable file", options);
    // Without config.json the heads are the caller's, the rest the shapes'.
    fs::remove(config);
    fails(Safetensors(good), "options.num_heads", "got 0");
    options = {};
    options.num_heads = 3;
    fails(Safetensors(good), "options.num_heads", "expected a divisor of d_model 4", options);
    options.num_heads = 2;
    fails(Safetensors(bert), tensor("wte.weight"), "bert.embeddings.word_embeddings.weight",
          options);
    std::vector<Entry> flat = good;
    for (Entry& e : flat)
      if (e.name == "transformer.wte.weight") e.shape = {28};
    fails(Safetensors(flat), tensor("transformer.wte.weight"), "expected a matrix", options,
          ErrorCode::kShapeMismatch);
    std::vector<Entry> deep = good;
    deep.push_back({"transformer.h.60.ln_1.weight", "F32", {4}, std::string(16, '\0')});
    fails(Safetensors(deep), file + " num_layers", "expected 1 .. 48, got 61", options);
  }
  SECTION("null pointers") {
    WriteFile(file, Safetensors(good));
    RequireNames(OpenCheckpoint(dir.path(), {}, nullptr), "out");
  }
  // Then a good checkpoint opens again, equal to the first.
  WriteFile(file, Safetensors(good));
  WriteFile(config, ConfigJson(c));
  Model again;
  REQUIRE_OK(OpenCheckpoint(dir.path(), {}, &again));
  CHECK(BitEqual(Logits(&again), logits));
}

}  // namespace
