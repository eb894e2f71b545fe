// The ONNX writer (include/attnkit/onnx.h): the npm package's src/js/onnx.js
// in C++, node for node and byte for byte. Every name, node, attribute and
// initializer is made in the same order as there (the names' counter depends
// on it), the messages are ONNX's own (libonnx's onnx::ModelProto and its
// parts) and, as there, the weights are not copied into them: each tensor's
// raw_data (field 9, its last) is written straight from the model's memory
// between the encodings of the fields around it. Protobuf writes a message's
// fields in number order, one after another, so the bytes are those of the
// whole message.
#include "attnkit/onnx.h"

#include <onnx/onnx_pb.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "attnkit/text.h"
#include "attnkit/version.h"
#include "src/core/validate.h"

namespace attnkit {
namespace model {
namespace {

// The IR version each opset came with (onnx/onnx's docs/Versioning.md),
// from kOnnxMinOpset on.
constexpr int64_t kIrVersion[] = {8, 8, 9, 9, 10, 10, 11, 12};
static_assert(sizeof(kIrVersion) / sizeof(kIrVersion[0]) == kOnnxMaxOpset - kOnnxMinOpset + 1,
              "an IR version for every opset");

// Math.PI: the double nearest pi.
constexpr double kPi = 3.14159265358979323846;

// The JS config's keys (src/js/model.js CONFIG_WORDS, CONFIG_FLAGS,
// CONFIG_FLOATS), in the order of kConfigSizes, kConfigFlags, kConfigFloats.
constexpr const char* kConfigSizeKeys[] = {"vocabSize", "maxSeqLen",  "dModel", "numLayers",
                                           "numHeads",  "numKvHeads", "dK",     "dFF"};
constexpr const char* kConfigFlagKeys[] = {"layerNorm", "scaleBySqrtDk", "bias", "tiedUnembedding",
                                           "gpt2Init"};
constexpr const char* kConfigFloatKeys[] = {"layerNormEpsilon"};
static_assert(sizeof(kConfigSizeKeys) / sizeof(kConfigSizeKeys[0]) == kConfigSizeWords, "keys");
static_assert(sizeof(kConfigFlagKeys) / sizeof(kConfigFlagKeys[0]) == kConfigFlagCount, "keys");
static_assert(sizeof(kConfigFloatKeys) / sizeof(kConfigFloatKeys[0]) == kConfigFloatWords, "keys");

// A finite double as JavaScript's Number::toString writes it (ECMA-262): the
// shortest digits that read back as v, plainly written for 1e-6 <= |v| <
// 1e21, else as d.ddde+n.
std::string JsNumber(double v) {
  if (v == 0) return "0";
  char buf[64];
  const std::to_chars_result r =
      std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string s(buf, r.ptr);  // "-1.2345e-05"
  std::string sign;
  if (s[0] == '-') {
    sign = "-";
    s.erase(0, 1);
  }
  const size_t e = s.find('e');
  const std::string digits = s.substr(0, 1) + (e > 1 ? s.substr(2, e - 2) : "");
  const int k = static_cast<int>(digits.size());
  const int n = std::atoi(s.c_str() + e + 1) + 1;  // v = 0.digits x 10^n
  if (k <= n && n <= 21) return sign + digits + std::string(n - k, '0');
  if (0 < n && n <= 21) return sign + digits.substr(0, n) + "." + digits.substr(n);
  if (-6 < n && n <= 0) return sign + "0." + std::string(-n, '0') + digits;
  const std::string mantissa = k == 1 ? digits : digits.substr(0, 1) + "." + digits.substr(1);
  return sign + mantissa + "e" + (n - 1 >= 0 ? "+" : "-") + std::to_string(std::abs(n - 1));
}

// Code point c as JSON.stringify writes it inside a string.
void AppendJsonChar(uint32_t c, std::string* out) {
  switch (c) {
    case '"':
      *out += "\\\"";
      return;
    case '\\':
      *out += "\\\\";
      return;
    case '\b':
      *out += "\\b";
      return;
    case '\f':
      *out += "\\f";
      return;
    case '\n':
      *out += "\\n";
      return;
    case '\r':
      *out += "\\r";
      return;
    case '\t':
      *out += "\\t";
      return;
    default:
      break;
  }
  if (c < 0x20) {
    static const char kHex[] = "0123456789abcdef";
    *out += "\\u00";
    *out += kHex[c >> 4];
    *out += kHex[c & 15];
    return;
  }
  AppendUtf8(c, out);
}

// JSON.stringify(model.config) of the npm package: the resolved config.
std::string ConfigJson(const ModelConfig& c) {
  std::string json = "{";
  for (size_t i = 0; i < kConfigSizeWords; ++i) {
    json += std::string(i ? "," : "") + "\"" + kConfigSizeKeys[i] +
            "\":" + std::to_string(c.*kConfigSizes[i]);
  }
  for (size_t i = 0; i < kConfigFlagCount; ++i) {
    json +=
        std::string(",\"") + kConfigFlagKeys[i] + "\":" + (c.*kConfigFlags[i] ? "true" : "false");
  }
  for (size_t i = 0; i < kConfigFloatWords; ++i) {
    json += std::string(",\"") + kConfigFloatKeys[i] + "\":" + JsNumber(c.*kConfigFloats[i]);
  }
  return json + "}";
}

// JSON.stringify of the vocabulary's characters.
std::string VocabularyJson(const std::vector<uint32_t>& vocabulary) {
  std::string json = "[";
  for (size_t i = 0; i < vocabulary.size(); ++i) {
    json += i ? ",\"" : "\"";
    AppendJsonChar(vocabulary[i], &json);
    json += "\"";
  }
  return json + "]";
}

// A node's attributes, made as onnx.js's int, float, string and ints: a
// name, a type and the value.
onnx::AttributeProto Attribute(const char* name, onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(type);
  return a;
}
onnx::AttributeProto Int(const char* name, int64_t v) {
  onnx::AttributeProto a = Attribute(name, onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}
onnx::AttributeProto Float(const char* name, float v) {
  onnx::AttributeProto a = Attribute(name, onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}
onnx::AttributeProto String(const char* name, const char* v) {
  onnx::AttributeProto a = Attribute(name, onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}
onnx::AttributeProto Ints(const char* name, std::initializer_list<int64_t> v) {
  onnx::AttributeProto a = Attribute(name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

// An initializer: its TensorProto without raw_data, and raw_data's bytes:
// `data` (the model's memory) or, for the graph's constants, `owned`.
struct Initializer {
  onnx::TensorProto head;
  const void* data = nullptr;
  size_t bytes = 0;
  std::string owned;
};

// The graph under construction (onnx.js's Graph): its nodes and initializers.
class Graph {
 public:
  // A fresh value name starting with `prefix`.
  std::string Name(const std::string& prefix) { return prefix + "_" + std::to_string(count_++); }
  // A node `op` over `inputs` ("" for an absent optional input); its outputs
  // are `outputs`, or one fresh name, which it returns.
  std::string Node(const char* op, std::vector<std::string> inputs,
                   std::vector<onnx::AttributeProto> attributes = {},
                   std::vector<std::string> outputs = {}) {
    const std::string id = Name(op);
    if (outputs.empty()) outputs.push_back(id);
    onnx::NodeProto* node = nodes_.add_node();
    node->set_name(id);
    node->set_op_type(op);
    for (std::string& in : inputs) node->add_input(std::move(in));
    for (const std::string& out : outputs) node->add_output(out);
    for (onnx::AttributeProto& a : attributes) *node->add_attribute() = std::move(a);
    return outputs[0];
  }
  // A float initializer `name` of `count` floats at `data` with `dims`.
  std::string Float(const std::string& name, const float* data, size_t count,
                    std::initializer_list<int64_t> dims) {
    Initializer& t = Add(name, onnx::TensorProto::FLOAT, dims);
    t.data = data;
    t.bytes = count * sizeof(float);
    return name;
  }
  // An int64 initializer: a vector of `values`, or with `scalar` the one value.
  std::string Int64(const std::string& prefix, std::initializer_list<int64_t> values,
                    bool scalar = false) {
    const std::string name = Name(prefix);
    Initializer& t =
        scalar ? Add(name, onnx::TensorProto::INT64, {})
               : Add(name, onnx::TensorProto::INT64, {static_cast<int64_t>(values.size())});
    t.owned.assign(reinterpret_cast<const char*>(values.begin()), values.size() * sizeof(int64_t));
    return name;
  }
  // A float32 scalar initializer.
  std::string Scalar(const std::string& prefix, float value) {
    Initializer& t = Add(Name(prefix), onnx::TensorProto::FLOAT, {});
    t.owned.assign(reinterpret_cast<const char*>(&value), sizeof(value));
    return t.head.name();
  }

  onnx::GraphProto& nodes() { return nodes_; }
  std::vector<Initializer>& initializers() { return initializers_; }

 private:
  Initializer& Add(const std::string& name, onnx::TensorProto::DataType type,
                   std::initializer_list<int64_t> dims) {
    initializers_.emplace_back();
    Initializer& t = initializers_.back();
    // onnx.js's field order of its init object is immaterial: fields are
    // written by number (dims 1, data_type 2, name 8, raw_data 9).
    t.head.set_name(name);
    for (int64_t d : dims) t.head.add_dims(d);
    t.head.set_data_type(type);
    return t;
  }

  onnx::GraphProto nodes_;  // its node field only
  std::vector<Initializer> initializers_;
  size_t count_ = 0;
};

// A parameter's matrix as a float initializer; a gain or bias [1, n] as [n].
std::string Weight(Graph& g, const std::string& name, const Matrix& m, bool vector = false) {
  const int64_t rows = static_cast<int64_t>(m.rows()), cols = static_cast<int64_t>(m.cols());
  if (vector) return g.Float(name, m.data(), m.size(), {cols});
  return g.Float(name, m.data(), m.size(), {rows, cols});
}

// The constants and shared values of the graph (onnx.js's graphValues).
struct Values {
  const ModelConfig* config = nullptr;
  int opset = 0;
  double scale = 1;
  std::string positions;
  std::string cubic, sqrt2_over_pi, one, half;  // GELU's tanh formula below kOnnxGeluOpset
  // Below kOnnxAttentionOpset: the causal mask and the heads' shapes.
  std::string visible, minus_infinity, scale_value, split_q, split_kv, merge_shape;
  std::string axis2, repeat_shape, heads_shape;
};

// y = x W (+ b): MatMul and, with a bias, Add.
std::string Linear(Graph& g, const std::string& x, const std::string& W, const std::string& b) {
  const std::string y = g.Node("MatMul", {x, W});
  return b.empty() ? y : g.Node("Add", {y, b});
}

// LayerNormalization over the last axis.
std::string LayerNorm(Graph& g, const std::string& x, const std::string& gain,
                      const std::string& bias, const ModelConfig& c) {
  return g.Node("LayerNormalization", {x, gain, bias},
                {Int("axis", -1), Float("epsilon", c.layer_norm_epsilon)});
}

// GELU's tanh form: Gelu or u/2 (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3))).
std::string Gelu(Graph& g, const std::string& u, const Values& k) {
  if (k.opset >= kOnnxGeluOpset) return g.Node("Gelu", {u}, {String("approximate", "tanh")});
  const std::string u3 = g.Node("Mul", {g.Node("Mul", {u, u}), u});
  const std::string cubic = g.Node("Mul", {u3, k.cubic});
  const std::string inner = g.Node("Mul", {g.Node("Add", {u, cubic}), k.sqrt2_over_pi});
  const std::string gate = g.Node("Add", {g.Node("Tanh", {inner}), k.one});
  const std::string half_u = g.Node("Mul", {u, k.half});
  return g.Node("Mul", {half_u, gate});
}

// A layer's cached keys and values: its inputs and outputs' names.
struct Past {
  std::string key, value, present_key, present_value;
};

// Causal attention of Q [B, S, h dK] on K, V [B, S, g dK] after the cached
// past key and value [B, g, P, dK] (present: [B, g, P + S, dK]): [B, S, h dK].
std::string Attention(Graph& g, const std::string& Q, const std::string& K, const std::string& V,
                      const Past* past, const Values& k) {
  const ModelConfig& c = *k.config;
  const size_t h = c.num_heads, kvh = c.num_kv_heads;
  std::vector<std::string> presents;
  if (past) presents = {past->present_key, past->present_value};
  if (k.opset >= kOnnxAttentionOpset) {
    std::vector<std::string> inputs = {Q, K, V};
    if (past) inputs.insert(inputs.end(), {"", past->key, past->value});
    std::vector<std::string> outputs = {g.Name("Attention")};
    outputs.insert(outputs.end(), presents.begin(), presents.end());
    return g.Node("Attention", inputs,
                  {Int("is_causal", 1), Int("q_num_heads", static_cast<int64_t>(h)),
                   Int("kv_num_heads", static_cast<int64_t>(kvh)),
                   Float("scale", static_cast<float>(k.scale))},
                  outputs);
  }
  // [B, S, n dK] -> [B, n, S, dK]
  auto heads = [&](const std::string& x, const std::string& shape) {
    return g.Node("Transpose", {g.Node("Reshape", {x, shape})}, {Ints("perm", {0, 2, 1, 3})});
  };
  std::string Kh = heads(K, k.split_kv);
  std::string Vh = heads(V, k.split_kv);
  if (past) {
    Kh = g.Node("Concat", {past->key, Kh}, {Int("axis", 2)}, {presents[0]});
    Vh = g.Node("Concat", {past->value, Vh}, {Int("axis", 2)}, {presents[1]});
  }
  // Query head i reads K/V head floor(i / (h / g)): [B, g, T, dK] -> [B, h, T, dK].
  auto repeat = [&](const std::string& x) {
    if (h == kvh) return x;
    const std::string unsqueezed = g.Node("Unsqueeze", {x, k.axis2});
    return g.Node("Reshape", {g.Node("Expand", {unsqueezed, k.repeat_shape}), k.heads_shape});
  };
  const std::string KhT = g.Node("Transpose", {repeat(Kh)}, {Ints("perm", {0, 1, 3, 2})});
  std::string scores = g.Node("MatMul", {heads(Q, k.split_q), KhT});  // [B, h, S, T]
  if (k.scale != 1) scores = g.Node("Mul", {scores, k.scale_value});
  const std::string masked = g.Node("Where", {k.visible, scores, k.minus_infinity});
  const std::string weights = g.Node("Softmax", {masked}, {Int("axis", -1)});
  const std::string z = g.Node("MatMul", {weights, repeat(Vh)});  // [B, h, S, dK]
  const std::string merged = g.Node("Transpose", {z}, {Ints("perm", {0, 2, 1, 3})});
  return g.Node("Reshape", {merged, k.merge_shape});
}

// The positions of the new tokens (after the cache's P with `cache`) and,
// below kOnnxAttentionOpset, the causal mask [S, P + S] and the heads' shapes.
Values GraphValues(Graph& g, const ModelConfig& c, int opset, bool cache) {
  const int64_t h = static_cast<int64_t>(c.num_heads), kvh = static_cast<int64_t>(c.num_kv_heads);
  const int64_t dK = static_cast<int64_t>(c.d_k);
  Values k;
  k.config = &c;
  k.opset = opset;
  k.scale = c.scale_by_sqrt_dk ? 1 / std::sqrt(static_cast<double>(c.d_k)) : 1;
  auto scalar = [&](int64_t v) { return g.Int64("const", {v}, /*scalar=*/true); };
  const std::string zero = !cache || opset < kOnnxAttentionOpset ? scalar(0) : "";
  const std::string one = scalar(1);
  const std::string seq = g.Node("Gather", {g.Node("Shape", {"input_ids"}), one});
  std::string past = zero;
  if (cache) {
    const std::string shape = g.Node("Shape", {"past_key_values.0.key"});
    past = g.Node("Gather", {shape, scalar(2)});
  }
  const std::string total = g.Node("Add", {past, seq});
  k.positions = g.Node("Range", {past, total, one});  // [S]: P .. P + S - 1
  if (opset < kOnnxGeluOpset && c.d_ff > 0) {
    k.cubic = g.Scalar("const", static_cast<float>(0.044715));
    k.sqrt2_over_pi = g.Scalar("const", static_cast<float>(std::sqrt(2 / kPi)));
    k.one = g.Scalar("const", 1);
    k.half = g.Scalar("const", 0.5f);
  }
  if (opset < kOnnxAttentionOpset) {
    // Key j is visible to query i (at position P + i) when j <= P + i.
    const std::string keys = g.Node("Range", {zero, total, one});                        // [T]
    const std::string rows = g.Node("Unsqueeze", {k.positions, g.Int64("const", {1})});  // [S, 1]
    k.visible = g.Node("LessOrEqual", {keys, rows});                                     // [S, T]
    k.minus_infinity = g.Scalar("const", -std::numeric_limits<float>::infinity());
    if (k.scale != 1) k.scale_value = g.Scalar("const", static_cast<float>(k.scale));
    k.split_q = g.Int64("const", {0, 0, h, dK});
    k.split_kv = h == kvh ? k.split_q : g.Int64("const", {0, 0, kvh, dK});
    k.merge_shape = g.Int64("const", {0, 0, h * dK});
    if (h != kvh) {
      k.axis2 = g.Int64("const", {2});
      k.repeat_shape = g.Int64("const", {1, 1, h / kvh, 1, 1});
      k.heads_shape = g.Int64("const", {0, h, -1, dK});
    }
  }
  return k;
}

// One layer's nodes on the residual stream x: the attention block, then the MLP (d_ff > 0).
std::string LayerNodes(Graph& g, std::string x, size_t l, const LayerParameters& p, const Values& k,
                       bool cache) {
  const ModelConfig& c = *k.config;
  const std::string prefix = "layers." + std::to_string(l) + ".";
  auto w = [&](const char* key, const Matrix& m, bool vector = false) {
    return m.size() ? Weight(g, prefix + key, m, vector) : std::string();
  };
  // Each initializer in onnx.js's order: a statement each (the order in
  // which a call's arguments are evaluated is unspecified in C++).
  std::string a = x;
  if (c.layer_norm) {
    const std::string gain = w("ln_gain", p.ln_gain, true);
    a = LayerNorm(g, x, gain, w("ln_bias", p.ln_bias, true), c);
  }
  auto projection = [&](const char* W, const Matrix& Wm, const char* b, const Matrix& bm) {
    const std::string weight = w(W, Wm);
    return Linear(g, a, weight, w(b, bm, true));
  };
  const std::string Q = projection("W_Q", p.W_Q, "b_Q", p.b_Q);
  const std::string K = projection("W_K", p.W_K, "b_K", p.b_K);
  const std::string V = projection("W_V", p.W_V, "b_V", p.b_V);
  Past past;
  if (cache) {
    const std::string n = std::to_string(l);
    past = {"past_key_values." + n + ".key", "past_key_values." + n + ".value",
            "present." + n + ".key", "present." + n + ".value"};
  }
  const std::string z = Attention(g, Q, K, V, cache ? &past : nullptr, k);
  const std::string W_O = w("W_O", p.W_O);
  x = g.Node("Add", {x, Linear(g, z, W_O, w("b_O", p.b_O, true))});
  if (c.d_ff > 0) {
    const std::string gain = w("ln2_gain", p.ln2_gain, true);
    const std::string b = LayerNorm(g, x, gain, w("ln2_bias", p.ln2_bias, true), c);
    const std::string W_1 = w("W_1", p.W_1);
    const std::string u = Gelu(g, Linear(g, b, W_1, w("b_1", p.b_1, true)), k);
    const std::string W_2 = w("W_2", p.W_2);
    x = g.Node("Add", {x, Linear(g, u, W_2, w("b_2", p.b_2, true))});
  }
  return x;
}

// A graph input or output: its name, element type and dims (counts, or named sizes).
void Value(onnx::ValueInfoProto* v, const std::string& name, int32_t elem_type,
           std::initializer_list<std::pair<int64_t, const char*>> dims) {
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (const auto& [count, param] : dims) {
    if (param) {
      shape->add_dim()->set_dim_param(param);
    } else {
      shape->add_dim()->set_dim_value(count);
    }
  }
}

// The graph's inputs and outputs (into `tail`), with the cache's when `cache`.
void GraphInterface(const ModelConfig& c, bool cache, onnx::GraphProto* tail) {
  const int64_t kvh = static_cast<int64_t>(c.num_kv_heads), dK = static_cast<int64_t>(c.d_k);
  constexpr int32_t kInt64 = onnx::TensorProto::INT64, kFloat = onnx::TensorProto::FLOAT;
  Value(tail->add_input(), "input_ids", kInt64, {{0, "batch"}, {0, "sequence"}});
  Value(tail->add_output(), "logits", kFloat,
        {{0, "batch"}, {0, "sequence"}, {static_cast<int64_t>(c.vocab_size), nullptr}});
  if (!cache) return;
  for (size_t l = 0; l < c.num_layers; ++l) {
    for (const char* part : {"key", "value"}) {
      const std::string suffix = std::to_string(l) + "." + part;
      Value(tail->add_input(), "past_key_values." + suffix, kFloat,
            {{0, "batch"}, {kvh, nullptr}, {0, "past_sequence"}, {dK, nullptr}});
      Value(tail->add_output(), "present." + suffix, kFloat,
            {{0, "batch"}, {kvh, nullptr}, {0, "total_sequence"}, {dK, nullptr}});
    }
  }
}

// Where the file's bytes go: a string or a file.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void Write(const void* data, size_t size) = 0;
  void Write(const std::string& s) { Write(s.data(), s.size()); }
  // Protobuf's varint of n.
  void Varint(uint64_t n) {
    uint8_t buf[10];
    size_t at = 0;
    for (; n >= 0x80; n >>= 7) buf[at++] = static_cast<uint8_t>(n | 0x80);
    buf[at++] = static_cast<uint8_t>(n);
    Write(buf, at);
  }
  // A length-delimited field's key (its number, wire type 2) and length.
  void Key(int field, uint64_t length) {
    Varint(static_cast<uint64_t>(field) << 3 | 2);
    Varint(length);
  }
};

size_t VarintSize(uint64_t n) {
  size_t size = 1;
  for (; n >= 0x80; n >>= 7) ++size;
  return size;
}
// The size of length-delimited field `field` holding `length` bytes.
size_t FieldSize(int field, size_t length) {
  return VarintSize(static_cast<uint64_t>(field) << 3 | 2) + VarintSize(length) + length;
}

// The model's fields (not its graph), the graph's (its nodes; its inputs and
// outputs) and the initializers, encoded into `sink` as one ModelProto; or,
// with sink null, only its size.
size_t Encode(const onnx::ModelProto& model_head, const onnx::ModelProto& model_tail,
              const onnx::GraphProto& graph_head, const onnx::GraphProto& graph_tail,
              const std::vector<Initializer>& initializers, Sink* sink) {
  constexpr int kGraph = onnx::ModelProto::kGraphFieldNumber;
  constexpr int kInitializer = onnx::GraphProto::kInitializerFieldNumber;
  constexpr int kRawData = onnx::TensorProto::kRawDataFieldNumber;
  std::vector<std::string> heads;
  heads.reserve(initializers.size());
  size_t graph_size = graph_head.ByteSizeLong() + graph_tail.ByteSizeLong();
  for (const Initializer& t : initializers) {
    heads.push_back(t.head.SerializeAsString());
    const size_t bytes = t.owned.empty() ? t.bytes : t.owned.size();
    graph_size += FieldSize(kInitializer, heads.back().size() + FieldSize(kRawData, bytes));
  }
  const std::string model_head_bytes = model_head.SerializeAsString();
  const std::string model_tail_bytes = model_tail.SerializeAsString();
  const size_t total =
      model_head_bytes.size() + FieldSize(kGraph, graph_size) + model_tail_bytes.size();
  if (!sink) return total;
  sink->Write(model_head_bytes);
  sink->Key(kGraph, graph_size);
  sink->Write(graph_head.SerializeAsString());
  for (size_t i = 0; i < initializers.size(); ++i) {
    const Initializer& t = initializers[i];
    const size_t bytes = t.owned.empty() ? t.bytes : t.owned.size();
    sink->Key(kInitializer, heads[i].size() + FieldSize(kRawData, bytes));
    sink->Write(heads[i]);
    sink->Key(kRawData, bytes);
    if (t.owned.empty()) {
      sink->Write(t.data, bytes);
    } else {
      sink->Write(t.owned);
    }
  }
  sink->Write(graph_tail.SerializeAsString());
  sink->Write(model_tail_bytes);
  return total;
}

Status CheckOptions(const Model& model, const OnnxOptions& options, std::string* tokenizer) {
  if (options.opset < kOnnxMinOpset || options.opset > kOnnxMaxOpset) {
    return Status(ErrorCode::kInvalidArgument, "options.opset",
                  "expected an ONNX opset from " + std::to_string(kOnnxMinOpset) +
                      " (LayerNormalization) to " + std::to_string(kOnnxMaxOpset) + ", got " +
                      std::to_string(options.opset));
  }
  const std::string& t = options.tokenizer;
  const bool vocabulary = !model.vocabulary().empty();
  if (t != "" && t != "characters" && t != "gpt2" && t != "none") {
    return Status(ErrorCode::kInvalidArgument, "options.tokenizer",
                  "expected \"characters\", \"gpt2\", \"none\" or \"\", got \"" + t + "\"");
  }
  if (t == "characters" && !vocabulary) {
    return Status(ErrorCode::kInvalidArgument, "options.tokenizer",
                  "expected \"characters\" only for a model with a vocabulary, got a model "
                  "without one");
  }
  *tokenizer = t.empty() ? (vocabulary ? "characters" : "") : t == "none" ? "" : t;
  if (model.params().token_embedding.size() == 0) {
    return Status(ErrorCode::kInvalidArgument, "model",
                  "expected a model with weights (Init, Allocate or a checkpoint), got an empty "
                  "Model");
  }
  return CheckOnnxSize(model.params().Count());
}

// The file of `model` (checked) into `sink`, or its size with sink null.
size_t Write(const Model& model, const OnnxOptions& options, const std::string& tokenizer,
             Sink* sink) {
  const ModelConfig& c = model.config();
  const Parameters& p = model.params();
  const int opset = options.opset;
  const bool cache = options.cache;
  const std::string version = ATTNKIT_VERSION_STRING;
  std::vector<std::pair<std::string, std::string>> metadata = {
      {"producer", "attnkit " + version},
      {"config", ConfigJson(c)},
      {"trained_steps", std::to_string(model.trained_steps())},
  };
  if (!tokenizer.empty()) metadata.emplace_back("tokenizer", tokenizer);
  if (tokenizer == "characters")
    metadata.emplace_back("vocabulary", VocabularyJson(model.vocabulary()));

  Graph g;
  const Values k = GraphValues(g, c, opset, cache);
  const std::string embedding = Weight(g, "token_embedding", p.token_embedding);
  const std::string tokens = g.Node("Gather", {embedding, "input_ids"});  // [B, S, d_model]
  const std::string position = Weight(g, "position_embedding", p.position_embedding);
  const std::string positions = g.Node("Gather", {position, k.positions});  // [S, d_model]
  std::string x = g.Node("Add", {tokens, positions});
  for (size_t l = 0; l < p.layers.size(); ++l) x = LayerNodes(g, x, l, p.layers[l], k, cache);
  if (c.layer_norm) {
    const std::string gain = Weight(g, "final_gain", p.final_gain, true);
    x = LayerNorm(g, x, gain, Weight(g, "final_bias", p.final_bias, true), c);
  }
  const std::string unembedding = c.tied_unembedding
                                      ? g.Node("Transpose", {embedding}, {Ints("perm", {1, 0})})
                                      : Weight(g, "unembedding", p.unembedding);
  g.Node("MatMul", {x, unembedding}, {}, {"logits"});

  onnx::GraphProto& graph_head = g.nodes();
  graph_head.set_name("attnkit");
  onnx::GraphProto graph_tail;
  GraphInterface(c, cache, &graph_tail);
  onnx::ModelProto model_head, model_tail;
  model_head.set_ir_version(kIrVersion[opset - kOnnxMinOpset]);
  model_head.set_producer_name("attnkit");
  model_head.set_producer_version(version);
  model_head.set_doc_string("A transformer trained or loaded by attnkit (docs/onnx.md)");
  onnx::OperatorSetIdProto* op_set = model_tail.add_opset_import();
  op_set->set_domain("");
  op_set->set_version(opset);
  for (const auto& [key, value] : metadata) {
    onnx::StringStringEntryProto* entry = model_tail.add_metadata_props();
    entry->set_key(key);
    entry->set_value(value);
  }
  return Encode(model_head, model_tail, graph_head, graph_tail, g.initializers(), sink);
}

class StringSink : public Sink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  void Write(const void* data, size_t size) override {
    out_->append(static_cast<const char*>(data), size);
  }
  using Sink::Write;

 private:
  std::string* out_;
};

class FileSink : public Sink {
 public:
  explicit FileSink(std::ofstream* out) : out_(out) {}
  void Write(const void* data, size_t size) override {
    out_->write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  using Sink::Write;

 private:
  std::ofstream* out_;
};

}  // namespace

Status CheckOnnxSize(size_t parameter_count) {
  const uint64_t most = (kOnnxMaxMessageBytes - kOnnxGraphBytes) / 4;
  if (parameter_count > most) {
    return Status(ErrorCode::kInvalidArgument, "model",
                  "expected a model whose ONNX file fits one protobuf message (2 GiB: at most " +
                      std::to_string(most) + " parameters), got " +
                      std::to_string(parameter_count) + " parameters (" +
                      std::to_string(uint64_t{4} * parameter_count) + " bytes of weights)");
  }
  return Status::Ok();
}

Status ExportOnnx(const Model& model, const OnnxOptions& options, std::string* bytes) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("bytes", bytes));
  std::string tokenizer;
  ATTNKIT_RETURN_IF_ERROR(CheckOptions(model, options, &tokenizer));
  // The graph is built twice (a few KB of nodes): once for the size, once to write.
  std::string out;
  out.reserve(Write(model, options, tokenizer, nullptr));
  StringSink sink(&out);
  Write(model, options, tokenizer, &sink);
  *bytes = std::move(out);
  return Status::Ok();
}

Status ExportOnnxFile(const Model& model, const OnnxOptions& options, const std::string& path) {
  std::string tokenizer;
  ATTNKIT_RETURN_IF_ERROR(CheckOptions(model, options, &tokenizer));
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) {
    return Status(
        ErrorCode::kInvalidArgument, "path",
        "expected a file that can be written, got " + path + " (" + std::strerror(errno) + ")");
  }
  FileSink sink(&file);
  Write(model, options, tokenizer, &sink);
  file.close();
  if (!file) {
    return Status(ErrorCode::kInvalidArgument, "path",
                  "expected a file that can be written, got " + path + " (writing failed)");
  }
  return Status::Ok();
}

}  // namespace model
}  // namespace attnkit
