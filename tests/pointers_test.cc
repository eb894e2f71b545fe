// Null pointers: every public function of the core and the model layer
// (include/attnkit/*.h) given a null pointer returns a Status naming that
// parameter ("expected a pointer, got null"), never a crash. The list of
// calls is kept complete by a test that reads the public headers: every
// pointer parameter they declare is either called null here, or listed as
// optional (null has a documented meaning), private or without a Status.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attnkit/attention.h"
#include "attnkit/attnkit.h"
#include "attnkit/backward.h"
#include "attnkit/backward_trace.h"
#include "attnkit/checkpoint.h"
#if !defined(__EMSCRIPTEN__)
#include "attnkit/checkpoint_file.h"
#endif
#include "attnkit/generate.h"
#include "attnkit/kv_cache.h"
#if defined(ATTNKIT_HAS_ONNX)
#include "attnkit/onnx.h"
#endif
#include "attnkit/model.h"
#include "attnkit/multihead.h"
#include "attnkit/ops.h"
#include "attnkit/packed_weights.h"
#include "attnkit/tasks.h"
#include "attnkit/text.h"
#include "tests/model_test_util.h"

namespace {

using attnkit::ConstMatrixView;
using attnkit::ErrorCode;
using attnkit::Matrix;
using attnkit::Status;
namespace model = attnkit::model;

// One pointer parameter called null: `key` is "header.h:Function(parameter)".
struct NullCall {
  std::string key;
  std::function<Status()> call;
};

std::string ParameterOf(const std::string& key) {
  const size_t open = key.rfind('('), close = key.rfind(')');
  return key.substr(open + 1, close - open - 1);
}

std::vector<NullCall> NullCalls() {
  static const Matrix X = {{1, 2}, {3, 4}};
  static const attnkit::AttentionOptions options;
  static const std::vector<uint8_t> weights_file = [] {
    model::Model m;
    REQUIRE(m.Init(model_test::SmallConfig(false, true), 1).ok());
    std::vector<uint8_t> bytes;
    REQUIRE(model::ExportWeights(m, &bytes).ok());
    return bytes;
  }();
  attnkit::MultiHeadWeights w;
  w.W_Q = X;
  w.W_K = X;
  w.W_V = X;
  attnkit::HeadConfig heads;
  heads.num_heads = 1;
  const uint32_t words[model::kConfigWords] = {};
  std::vector<NullCall> calls = {
      {"attention.h:TraceAttention(trace)",
       [] { return attnkit::TraceAttention(X, X, X, X, options, nullptr); }},
      {"attention.h:TraceAttentionQKV(trace)",
       [] { return attnkit::TraceAttentionQKV(X, X, X, options, nullptr); }},
      {"backward_trace.h:TraceAttentionBackward(trace)",
       [] { return attnkit::TraceAttentionBackward(X, X, X, X, X, options, nullptr); }},
      {"backward_trace.h:TraceAttentionBackwardQKV(trace)",
       [] { return attnkit::TraceAttentionBackwardQKV(X, X, X, X, options, nullptr); }},
      {"kv_cache.h:Create(cache)", [] { return attnkit::KVCache::Create(1, 1, 2, 2, 4, nullptr); }},
      {"kv_cache.h:Clone(copy)", [] { return attnkit::KVCache().Clone(nullptr); }},
      {"kv_cache.h:MultiHeadDecode(cache)",
       [w, heads] {
         Matrix out(2, 2);
         return attnkit::MultiHeadDecode(X, w, heads, options, nullptr, out);
       }},
      {"packed_weights.h:PackMultiHeadWeights(packed)",
       [w, heads] { return attnkit::PackMultiHeadWeights(w, heads, nullptr); }},
      {"packed_weights.h:PackMatrices(packed)", [] { return attnkit::PackMatrices({}, nullptr); }},
      {"ops.h:ForceByName(name)", [] { return attnkit::targets::ForceByName(nullptr); }},
      {"checkpoint.h:Load(data)",
       [] {
         model::CheckpointLoader loader;
         REQUIRE(loader.Init(model_test::SmallConfig(false, true)).ok());
         return loader.Load("wte.weight", model::DType::kF32, {5, 6}, nullptr);
       }},
      {"checkpoint.h:LoadPart(data)",
       [] {
         model::CheckpointLoader loader;
         REQUIRE(loader.Init(model_test::SmallConfig(false, true)).ok());
         return loader.LoadPart("wte.weight", model::DType::kF32, {5, 6}, 0, 6, nullptr);
       }},
      {"checkpoint.h:Finish(out)", [] { return model::CheckpointLoader().Finish(nullptr); }},
      {"generate.h:Next(out)", [] { return model::Generator().Next({}, nullptr); }},
      {"model.h:ConfigFromWords(words)",
       [] {
         model::ModelConfig c;
         return model::ConfigFromWords(nullptr, &c);
       }},
      {"model.h:ConfigFromWords(config)",
       [words] { return model::ConfigFromWords(words, nullptr); }},
      {"model.h:InitParameters(params)",
       [] { return model::InitParameters(model_test::SmallConfig(false, true), 1, nullptr); }},
      {"model.h:Backward(grads)", [] { return model::Model().Backward(nullptr); }},
      {"model.h:AttentionWeights(weights)",
       [] { return model::Model().AttentionWeights(0, nullptr); }},
      {"model.h:FusedWeights(out)", [] { return model::Model().FusedWeights(nullptr); }},
      {"model.h:PackedLayerWeights(out)",
       [] { return model::Model().PackedLayerWeights(nullptr); }},
      {"model.h:Inspect(out)",
       [] {
         return model::Model().Inspect({1, 2}, nullptr, nullptr);
       }},
      {"model.h:Step(params)", [] { return model::AdamW().Step(model::Parameters(), nullptr); }},
      {"model.h:TrainStep(model)",
       [] {
         model::Parameters grads;
         model::AdamW adam;
         return model::TrainStep(model_test::SmallBatch(), nullptr, &grads, &adam, nullptr);
       }},
      {"model.h:TrainStep(grads)",
       [] {
         model::Model m;
         model::AdamW adam;
         return model::TrainStep(model_test::SmallBatch(), &m, nullptr, &adam, nullptr);
       }},
      {"model.h:TrainStep(adam)",
       [] {
         model::Model m;
         model::Parameters grads;
         return model::TrainStep(model_test::SmallBatch(), &m, &grads, nullptr, nullptr);
       }},
      {"model.h:ExportWeights(bytes)",
       [] { return model::ExportWeights(model::Model(), nullptr); }},
      {"model.h:ImportWeights(data)", [] { return model::ImportWeights(nullptr, 64, nullptr); }},
      {"model.h:ImportWeights(model)",
       [] { return model::ImportWeights(weights_file.data(), weights_file.size(), nullptr); }},
      {"tasks.h:Next(out)", [] { return model::TaskGenerator().Next(1, nullptr); }},
      {"text.h:DecodeUtf8(data)",
       [] {
         std::vector<uint32_t> cps;
         return model::DecodeUtf8(nullptr, 4, "text", &cps);
       }},
      {"text.h:DecodeUtf8(parameter)",
       [] {
         std::vector<uint32_t> cps;
         return model::DecodeUtf8("abcd", 4, nullptr, &cps);
       }},
      {"text.h:DecodeUtf8(code_points)",
       [] { return model::DecodeUtf8("abcd", 4, "text", nullptr); }},
      {"text.h:FromVocabulary(parameter)",
       [] {
         return model::Tokenizer().FromVocabulary({0xFFFD, 'a'}, nullptr);
       }},
      {"text.h:Encode(tokens)", [] { return model::Tokenizer().Encode("ab", nullptr); }},
      {"text.h:Encode(parameter)",
       [] {
         std::vector<int32_t> tokens;
         return model::Tokenizer().Encode("ab", &tokens, nullptr);
       }},
      {"text.h:Decode(tokens)",
       [] {
         std::string s;
         return model::Tokenizer().Decode(nullptr, 3, &s);
       }},
      {"text.h:Decode(text)",
       [] {
         const int32_t tokens[1] = {0};
         return model::Tokenizer().Decode(tokens, 1, nullptr);
       }},
      {"text.h:Next(out)", [] { return model::TextDataset().Next(1, nullptr); }},
      {"text.h:ValidationBatch(out)",
       [] { return model::TextDataset().ValidationBatch(0, 1, nullptr); }},
      {"text.h:ValidationLoss(model)",
       [] {
         float loss;
         return model::TextDataset().ValidationLoss(nullptr, 1, &loss);
       }},
      {"text.h:ValidationLoss(loss)",
       [] {
         model::Model m;
         return model::TextDataset().ValidationLoss(&m, 1, nullptr);
       }},
      {"checkpoint.h:ConfigFromShapes(config)",
       [] { return model::ConfigFromShapes({}, 1, nullptr); }},
  };
#if !defined(__EMSCRIPTEN__)
  // Checkpoint files are native only (src/model/checkpoint_file.cc).
  const std::vector<NullCall> files = {
      {"checkpoint_file.h:Read(bytes)",
       [] { return model::SafetensorsFile().Read(model::SafetensorsTensor(), nullptr); }},
      {"checkpoint_file.h:ConfigFromJson(config)",
       [] { return model::ConfigFromJson("{}", nullptr); }},
      {"checkpoint_file.h:ReadConfigJson(config)",
       [] { return model::ReadConfigJson("config.json", nullptr); }},
      {"checkpoint_file.h:OpenCheckpoint(out)",
       [] {
         return model::OpenCheckpoint("model.safetensors", model::CheckpointOptions(), nullptr);
       }},
  };
  calls.insert(calls.end(), files.begin(), files.end());
#endif
#if defined(ATTNKIT_HAS_ONNX)
  // The ONNX export: native builds with ONNX (attnkit::onnx).
  calls.push_back({"onnx.h:ExportOnnx(bytes)", [] {
                     model::Model m;
                     return model::ExportOnnx(m, model::OnnxOptions(), nullptr);
                   }});
#endif
  return calls;
}

// Pointer parameters where null is not an error, or that need no Status.
const std::set<std::string>& NotCalledNull() {
  static const std::set<std::string> keys = {
      // Optional: null has a documented meaning (no pool, not wanted, none).
      "backward.h:ProjectionBackward(pool)",
      "model.h:CheckConfig(resolved)",
      "model.h:set_pool(pool)",
      "model.h:Forward(metrics)",
      "model.h:Forward(logits)",
      "model.h:Backward(d_attention)",
      "model.h:Inspect(targets)",
      "model.h:TrainStep(metrics)",
      "model.h:Step(metrics)",
      "model.h:Step(pool)",
      "tasks.h:CheckTask(model)",
      // No Status to return: false for a null pointer (checked below).
      "checkpoint.h:DTypeFromName(dtype)",
      // No Status to return: a documented precondition (non-null).
      "checkpoint.h:WidenToFloat(data)",
      "checkpoint.h:WidenToFloat(out)",
      "model.h:ConfigToWords(words)",
      "random.h:SplitMix64(state)",
      "text.h:AppendUtf8(out)",
      // Private members (their callers pass their own buffers).
      "tasks.h:Sequence(tokens)",
      "tasks.h:Sequence(targets)",
      "text.h:Window(out)",
  };
  return keys;
}

TEST_CASE("Null pointers: every public pointer parameter returns a Status naming it",
          "[errors][pointers]") {
  for (const NullCall& c : NullCalls()) {
    INFO(c.key);
    const Status s = c.call();
    INFO(s.ToString());
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == ErrorCode::kInvalidArgument);
    CHECK(s.parameter() == ParameterOf(c.key));
    CHECK(s.detail() == "expected a pointer, got null");
  }
}

TEST_CASE("Null pointers: the optional ones are accepted", "[errors][pointers]") {
  model::Model m;
  REQUIRE_OK(m.Init(model_test::SmallConfig(false, true), 1));
  m.set_pool(nullptr);
  REQUIRE_OK(m.Forward(model_test::SmallBatch(), nullptr, nullptr));
  model::Parameters grads;
  REQUIRE_OK(m.Backward(&grads, nullptr));
  model::Inspection inspection;
  REQUIRE_OK(m.Inspect({1, 2, 3}, nullptr, &inspection));
  REQUIRE_OK(model::CheckConfig(model_test::SmallConfig(false, true), nullptr));
  model::AdamW adam;
  REQUIRE_OK(adam.Init({}, m.params()));
  REQUIRE_OK(model::TrainStep(model_test::SmallBatch(), &m, &grads, &adam, nullptr));
  model::Trainer trainer;
  REQUIRE_OK(trainer.Init(model_test::SmallConfig(false, true), 1, {}));
  REQUIRE_OK(trainer.Step(model_test::SmallBatch(), nullptr));
  // DTypeFromName has no Status: a null dtype is a name not read.
  CHECK_FALSE(model::DTypeFromName("F32", nullptr));
  model::TaskConfig task;
  task.kind = model::TaskKind::kCopy;
  task.length = 2;
  task.vocab_size = 5;
  REQUIRE_OK(model::CheckTask(task, nullptr));
}

// The headers are read from the source tree, natively (the WebAssembly tests
// run in Node without its file system; the headers are the same).
#ifndef __EMSCRIPTEN__

// "a/b/tests/x.cc" -> "a/b/include/attnkit/".
std::string HeaderDir() {
  std::string file = __FILE__;
  const size_t slash = file.rfind("tests/");
  return file.substr(0, slash) + "include/attnkit/";
}

std::string WithoutComments(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t comment = line.find("//");
    out += (comment == std::string::npos ? line : line.substr(0, comment)) + "\n";
  }
  return out;
}

bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The name a parameter declares: "const float* x = nullptr" -> "x",
// "const uint32_t words[kConfigWords]" -> "words".
std::string DeclaredName(std::string p) {
  p = p.substr(0, p.find('='));
  p = p.substr(0, p.find('['));
  size_t end = p.size();
  while (end > 0 && !IsIdent(p[end - 1])) --end;
  size_t begin = end;
  while (begin > 0 && IsIdent(p[begin - 1])) --begin;
  return p.substr(begin, end - begin);
}

// "header.h:Function(parameter)" for every pointer or array parameter of a
// function declared (";") or defined ("{") in `text`.
std::set<std::string> PointerParameters(const std::string& header, const std::string& text) {
  std::set<std::string> keys;
  const std::set<std::string> not_functions = {"if", "for", "while", "switch", "return", "sizeof"};
  for (size_t open = text.find('('); open != std::string::npos; open = text.find('(', open + 1)) {
    size_t name_end = open;
    while (name_end > 0 && text[name_end - 1] == ' ') --name_end;
    size_t name_begin = name_end;
    while (name_begin > 0 && IsIdent(text[name_begin - 1])) --name_begin;
    const std::string name = text.substr(name_begin, name_end - name_begin);
    if (name.empty() || not_functions.count(name) || !std::isalpha(name[0])) continue;
    // A call, not a declaration: "return F(a * b);".
    size_t before = name_begin;
    while (before > 0 && text[before - 1] == ' ') --before;
    if (before >= 6 && text.compare(before - 6, 6, "return") == 0) continue;
    const size_t close = text.find_first_of("()", open + 1);
    if (close == std::string::npos || text[close] != ')') continue;  // nested: not a declaration
    size_t after = text.find_first_not_of(" \n", close + 1);
    if (text.compare(after, 5, "const") == 0) after = text.find_first_not_of(" \n", after + 5);
    if (after == std::string::npos || (text[after] != ';' && text[after] != '{')) continue;
    // Split the parameters at commas outside <>.
    const std::string params = text.substr(open + 1, close - open - 1);
    int depth = 0;
    std::string current;
    std::vector<std::string> list;
    for (char c : params + ",") {
      if (c == '<') ++depth;
      if (c == '>') --depth;
      if (c == ',' && depth == 0) {
        list.push_back(current);
        current.clear();
      } else {
        current += c;
      }
    }
    for (const std::string& p : list) {
      const std::string declared = p.substr(0, p.find('='));
      if (declared.find('*') == std::string::npos && declared.find('[') == std::string::npos) {
        continue;
      }
      keys.insert(header + ":" + name + "(" + DeclaredName(p) + ")");
    }
  }
  return keys;
}

TEST_CASE("Null pointers: the list covers every pointer parameter of the public headers",
          "[errors][pointers]") {
  const std::vector<std::string> headers = {
    "attention.h",
    "attnkit.h",
    "backward.h",
    "backward_trace.h",
    "checkpoint.h",
    "generate.h",
    "kv_cache.h",
    "matrix.h",
    "model.h",
    "multihead.h",
    "ops.h",
    "packed_weights.h",
    "random.h",
    "status.h",
    "tasks.h",
    "text.h",
    "thread_pool.h",
#if !defined(__EMSCRIPTEN__)
    "checkpoint_file.h",
#endif
#if defined(ATTNKIT_HAS_ONNX)
    "onnx.h",
#endif
  };
  std::set<std::string> declared;
  for (const std::string& h : headers) {
    std::ifstream in(HeaderDir() + h);
    INFO(HeaderDir() + h);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    std::string flat = WithoutComments(text.str());
    for (char& c : flat) {
      if (c == '\n' || c == '\t') c = ' ';
    }
    for (const std::string& key : PointerParameters(h, flat)) declared.insert(key);
  }
  // The parser finds what is known to be there.
  CHECK(declared.count("model.h:ImportWeights(data)") == 1);
  CHECK(declared.count("text.h:DecodeUtf8(code_points)") == 1);
  std::set<std::string> listed = NotCalledNull();
  for (const NullCall& c : NullCalls()) listed.insert(c.key);
  for (const std::string& key : declared) {
    INFO("declared in a public header, not in this test's lists: " << key);
    CHECK(listed.count(key) == 1);
  }
  for (const std::string& key : listed) {
    INFO("in this test's lists, not declared in a public header: " << key);
    CHECK(declared.count(key) == 1);
  }
}

#endif  // __EMSCRIPTEN__

}  // namespace
