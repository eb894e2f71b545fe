#include "attnkit/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "src/core/validate.h"

namespace attnkit {
namespace model {

size_t DTypeBytes(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
  }
  return "?";
}

std::string ShapeText(const std::vector<size_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool DTypeFromName(const std::string& name, DType* dtype) {
  if (dtype == nullptr) return false;
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) {
    if (name == DTypeName(d)) {
      *dtype = d;
      return true;
    }
  }
  return false;
}

float HalfToFloat(uint16_t bits) {
  const uint32_t sign = uint32_t(bits >> 15) << 31;
  const uint32_t exponent = (bits >> 10) & 0x1f;
  const uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0) {
    // Zero or subnormal: mantissa 2^-24, exact in a float.
    const float magnitude = std::ldexp(float(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  // Infinity and NaN keep an all-ones exponent; normals rebias 15 -> 127.
  const uint32_t e = exponent == 0x1f ? 0xff : exponent - 15 + 127;
  const uint32_t u = sign | e << 23 | mantissa << 13;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float BFloat16ToFloat(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void WidenToFloat(DType dtype, const void* data, size_t n, float* out) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  if (dtype == DType::kF32) {
    std::memcpy(out, p, 4 * n);
    return;
  }
  for (size_t k = 0; k < n; ++k) {
    const uint16_t h = uint16_t(p[2 * k] | p[2 * k + 1] << 8);
    out[k] = dtype == DType::kF16 ? HalfToFloat(h) : BFloat16ToFloat(h);
  }
}

namespace {

// How a checkpoint tensor lies against its attnkit tensor(s).
enum class Layout {
  kMatrix,      // [rows, cols] as attnkit's; column blocks side by side
  kVector,      // [cols]: a row [1, cols]; column blocks side by side
  kTransposed,  // [cols, rows]: attnkit's transposed
  kBuffer,      // not a parameter (the attention mask): skipped
};

// One Hugging Face name (after "h.{i}." for a layer's) and the attnkit
// tensor(s) it fills: a Parameters member, or up to three LayerParameters
// members side by side (c_attn's W_Q | W_K | W_V). `needs` says which config
// has them.
struct HfTensor {
  const char* name;
  bool per_layer;
  Layout layout;
  Matrix Parameters::*global;
  Matrix LayerParameters::*parts[3];
  const char* needs;
};

using L = LayerParameters;
constexpr HfTensor kGpt2Tensors[] = {
    {"wte.weight", false, Layout::kMatrix, &Parameters::token_embedding, {}, ""},
    {"wpe.weight", false, Layout::kMatrix, &Parameters::position_embedding, {}, ""},
    {"h.ln_1.weight", true, Layout::kVector, nullptr, {&L::ln_gain}, "layer_norm on"},
    {"h.ln_1.bias", true, Layout::kVector, nullptr, {&L::ln_bias}, "layer_norm on"},
    {"h.attn.c_attn.weight", true, Layout::kMatrix, nullptr, {&L::W_Q, &L::W_K, &L::W_V}, ""},
    {"h.attn.c_attn.bias", true, Layout::kVector, nullptr, {&L::b_Q, &L::b_K, &L::b_V}, "bias on"},
    {"h.attn.c_proj.weight", true, Layout::kMatrix, nullptr, {&L::W_O}, ""},
    {"h.attn.c_proj.bias", true, Layout::kVector, nullptr, {&L::b_O}, "bias on"},
    {"h.ln_2.weight", true, Layout::kVector, nullptr, {&L::ln2_gain}, "d_ff > 0"},
    {"h.ln_2.bias", true, Layout::kVector, nullptr, {&L::ln2_bias}, "d_ff > 0"},
    {"h.mlp.c_fc.weight", true, Layout::kMatrix, nullptr, {&L::W_1}, "d_ff > 0"},
    {"h.mlp.c_fc.bias", true, Layout::kVector, nullptr, {&L::b_1}, "d_ff > 0 and bias on"},
    {"h.mlp.c_proj.weight", true, Layout::kMatrix, nullptr, {&L::W_2}, "d_ff > 0"},
    {"h.mlp.c_proj.bias", true, Layout::kVector, nullptr, {&L::b_2}, "d_ff > 0 and bias on"},
    {"h.attn.bias", true, Layout::kBuffer, nullptr, {}, ""},
    {"h.attn.masked_bias", true, Layout::kBuffer, nullptr, {}, ""},
    {"ln_f.weight", false, Layout::kVector, &Parameters::final_gain, {}, "layer_norm on"},
    {"ln_f.bias", false, Layout::kVector, &Parameters::final_bias, {}, "layer_norm on"},
    {"lm_head.weight",
     false,
     Layout::kTransposed,
     &Parameters::unembedding,
     {},
     "tied_unembedding off"},
};
constexpr size_t kNumGpt2Tensors = sizeof(kGpt2Tensors) / sizeof(kGpt2Tensors[0]);

// An entry's name for layer `layer` ("h.3.attn.c_attn.weight").
std::string FullName(const HfTensor& t, size_t layer) {
  if (!t.per_layer) return t.name;
  return "h." + std::to_string(layer) + (t.name + 1);
}

// The entry and layer of `name`; false if it names no GPT-2 tensor.
bool Resolve(const std::string& name, const HfTensor** entry, size_t* layer) {
  std::string n = name.compare(0, 12, "transformer.") == 0 ? name.substr(12) : name;
  *layer = 0;
  std::string key = n;
  if (n.compare(0, 2, "h.") == 0) {
    size_t end = 2;
    size_t value = 0;
    while (end < n.size() && end < 2 + 6 && n[end] >= '0' && n[end] <= '9') {
      value = value * 10 + size_t(n[end] - '0');
      ++end;
    }
    if (end == 2 || end >= n.size() || n[end] != '.') return false;
    *layer = value;
    key = "h" + n.substr(end);  // "h.attn.c_attn.weight"
  }
  for (const HfTensor& t : kGpt2Tensors) {
    if (key == t.name) {
      *entry = &t;
      return true;
    }
  }
  return false;
}

// The attnkit tensors `t` fills in layer `layer` (empty ones included).
std::vector<Matrix*> Targets(const HfTensor& t, size_t layer, Parameters* p) {
  std::vector<Matrix*> out;
  if (!t.per_layer) {
    out.push_back(&(p->*t.global));
    return out;
  }
  for (Matrix LayerParameters::*part : t.parts) {
    if (part) out.push_back(&(p->layers[layer].*part));
  }
  return out;
}

// The checkpoint's shape of the tensor whose attnkit tensors are `targets`.
std::vector<size_t> ExpectedShape(Layout layout, const std::vector<Matrix*>& targets) {
  size_t cols = 0;
  for (const Matrix* m : targets) cols += m->cols();
  const size_t rows = targets[0]->rows();
  if (layout == Layout::kVector) return {cols};
  if (layout == Layout::kTransposed) return {cols, rows};
  return {rows, cols};
}

// The first value of out [n] that is not finite, as a Status naming `name`.
Status CheckFinite(const std::string& name, const float* out, size_t n, size_t first_index) {
  for (size_t k = 0; k < n; ++k) {
    if (!std::isfinite(out[k])) {
      return Status(ErrorCode::kInvalidArgument, name,
                    "expected finite values, got " + internal::FloatString(out[k]) +
                        " at element " + std::to_string(first_index + k));
    }
  }
  return Status::Ok();
}

// Values [first, first + count) of a tensor laid out as `layout` over
// `targets` (row-major in the file: see ExpectedShape), `dtype` at data,
// widened into the targets. Errors name the tensor and the first value that
// is not finite (its index in the whole tensor).
Status WriteValues(const std::string& name, Layout layout, const std::vector<Matrix*>& targets,
                   DType dtype, size_t first, size_t count, const void* data) {
  const uint8_t* src = static_cast<const uint8_t*>(data);
  const size_t bytes = DTypeBytes(dtype), end = first + count;
  if (layout == Layout::kTransposed) {
    // Source row j [rows] is column j of the target [rows, cols].
    Matrix& m = *targets[0];
    const size_t rows = m.rows();
    std::vector<float> run(std::min(count, rows));
    for (size_t k = first; k < end;) {
      const size_t j = k / rows, r = k % rows, n = std::min(rows - r, end - k);
      WidenToFloat(dtype, src + (k - first) * bytes, n, run.data());
      ATTNKIT_RETURN_IF_ERROR(CheckFinite(name, run.data(), n, k));
      for (size_t i = 0; i < n; ++i) m(r + i, j) = run[i];
      k += n;
    }
    return Status::Ok();
  }
  // Each source row holds the targets' rows side by side.
  size_t cols = 0;
  for (const Matrix* m : targets) cols += m->cols();
  for (size_t k = first; k < end;) {
    const size_t r = k / cols;
    size_t c = k % cols, i = 0;
    for (; c >= targets[i]->cols(); ++i) c -= targets[i]->cols();
    Matrix& m = *targets[i];
    const size_t n = std::min(m.cols() - c, end - k);
    float* out = m.data() + r * m.cols() + c;
    WidenToFloat(dtype, src + (k - first) * bytes, n, out);
    ATTNKIT_RETURN_IF_ERROR(CheckFinite(name, out, n, k));
    k += n;
  }
  return Status::Ok();
}

}  // namespace

bool IsMaskBuffer(const std::string& name) {
  const HfTensor* t = nullptr;
  size_t layer = 0;
  return Resolve(name, &t, &layer) && t->layout == Layout::kBuffer;
}

Status ConfigFromShapes(const std::map<std::string, std::vector<size_t>>& shapes, size_t num_heads,
                        ModelConfig* config) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("config", config));
  size_t num_layers = 0;
  bool head = false;
  for (const auto& entry : shapes) {
    const HfTensor* t = nullptr;
    size_t layer = 0;
    if (!Resolve(entry.first, &t, &layer)) continue;
    if (t->per_layer) num_layers = std::max(num_layers, layer + 1);
    if (t->global == &Parameters::unembedding) head = true;
  }
  // The [rows, cols] of the tensor `key` (with or without the prefix).
  auto matrix = [&](const std::string& key, size_t* rows, size_t* cols) {
    auto it = shapes.find(key);
    if (it == shapes.end()) it = shapes.find("transformer." + key);
    if (it == shapes.end()) {
      std::string some;  // the first four names
      size_t listed = 0;
      for (auto n = shapes.begin(); n != shapes.end() && listed < 4; ++n, ++listed)
        some += (listed ? ", " : "") + n->first;
      return Status(ErrorCode::kInvalidArgument, key,
                    "expected this tensor (with or without \"transformer.\") in a GPT-2 "
                    "checkpoint without config.json, got none among " +
                        std::to_string(shapes.size()) + " tensors" +
                        (some.empty() ? std::string() : " (" + some + " ...)"));
    }
    if (it->second.size() != 2) {
      return Status(ErrorCode::kShapeMismatch, it->first,
                    "expected a matrix [rows, cols], got shape " + ShapeText(it->second));
    }
    *rows = it->second[0];
    *cols = it->second[1];
    return Status::Ok();
  };
  ModelConfig c;
  size_t d = 0;
  ATTNKIT_RETURN_IF_ERROR(matrix("wte.weight", &c.vocab_size, &c.d_model));
  ATTNKIT_RETURN_IF_ERROR(matrix("wpe.weight", &c.max_seq_len, &d));
  ATTNKIT_RETURN_IF_ERROR(matrix("h.0.mlp.c_fc.weight", &d, &c.d_ff));
  if (num_heads == 0) {
    return Status(ErrorCode::kInvalidArgument, "num_heads",
                  "expected the number of heads (without config.json, n_head is not in the "
                  "tensors' shapes), got 0");
  }
  if (c.d_model % num_heads != 0) {
    return Status(ErrorCode::kInvalidArgument, "num_heads",
                  "expected a divisor of d_model " + std::to_string(c.d_model) +
                      " (wte.weight's "
                      "columns), got " +
                      std::to_string(num_heads));
  }
  c.num_layers = num_layers;
  c.num_heads = num_heads;
  c.layer_norm = true;
  c.scale_by_sqrt_dk = true;
  c.bias = true;
  c.tied_unembedding = !head;
  c.layer_norm_epsilon = 1e-5f;
  ATTNKIT_RETURN_IF_ERROR(CheckConfig(c, nullptr));
  *config = c;
  return Status::Ok();
}

Status CheckpointLoader::Init(const ModelConfig& config) {
  ready_ = false;
  // Unset, not zeroed: Finish refuses the model until every tensor has come
  // whole, and the weights' memory then becomes resident as they arrive.
  ATTNKIT_RETURN_IF_ERROR(model_.Allocate(config, /*zeroed=*/false));
  loaded_.assign(kNumGpt2Tensors * model_.config().num_layers, 0);
  part_next_ = 0;
  ready_ = true;
  return Status::Ok();
}

Status CheckpointLoader::Load(const std::string& name, DType dtype,
                              const std::vector<size_t>& shape, const void* data) {
  // A shape that overflows the count cannot be the expected one: LoadPart
  // refuses it before it reads the count.
  size_t count = 1;
  for (size_t n : shape) count *= n;
  return LoadPart(name, dtype, shape, 0, count, data);
}

Status CheckpointLoader::LoadPart(const std::string& name, DType dtype,
                                  const std::vector<size_t>& shape, size_t first, size_t count,
                                  const void* data) {
  const size_t next_before = part_next_;
  const size_t pending = next_before ? part_index_ : SIZE_MAX;
  part_next_ = 0;  // until this part has arrived whole: a failed part starts its tensor over
  if (!ready_) {
    return Status(ErrorCode::kInvalidArgument, "loader",
                  "expected Init before Load, got a loader with no model");
  }
  const ModelConfig& c = model_.config();
  const HfTensor* t = nullptr;
  size_t layer = 0;
  if (!Resolve(name, &t, &layer)) {
    return Status(ErrorCode::kInvalidArgument, name,
                  "expected a GPT-2 tensor name (wte.weight, wpe.weight, h.{i}.attn.c_attn.weight, "
                  "ln_f.weight, lm_head.weight, ...), got an unknown name");
  }
  if (layer >= c.num_layers) {
    return Status(ErrorCode::kInvalidArgument, name,
                  "expected layer 0 .. " + std::to_string(c.num_layers - 1) +
                      " (num_layers - 1), got layer " + std::to_string(layer));
  }
  if (t->layout == Layout::kBuffer ||
      (t->global == &Parameters::unembedding && c.tied_unembedding)) {
    part_next_ = next_before;  // skipped: a tensor whose parts are arriving goes on
    return Status::Ok();
  }
  const std::vector<Matrix*> targets = Targets(*t, layer, &model_.params());
  if (targets[0]->size() == 0) {
    return Status(ErrorCode::kInvalidArgument, name,
                  std::string("expected a config with ") + t->needs +
                      ", got one without: no tensor of the model takes it");
  }
  const size_t index = size_t(t - kGpt2Tensors) * c.num_layers + layer;
  if (pending != SIZE_MAX && pending != index) {
    const HfTensor& other = kGpt2Tensors[pending / c.num_layers];
    return Status(ErrorCode::kInvalidArgument, name,
                  "expected the rest of " + FullName(other, pending % c.num_layers) +
                      " first (a tensor's parts one after another), got a part of this one");
  }
  uint8_t& loaded = loaded_[index];
  if (loaded) {
    return Status(ErrorCode::kInvalidArgument, name,
                  "expected each tensor once, got this one a second time");
  }
  const std::vector<size_t> expected = ExpectedShape(t->layout, targets);
  if (shape != expected) {
    return Status(ErrorCode::kShapeMismatch, name,
                  "expected shape " + ShapeText(expected) + ", got " + ShapeText(shape));
  }
  // The next part, or the tensor over again from value 0.
  const size_t next = pending == index ? next_before : 0;
  if (first != next && first != 0) {
    return Status(ErrorCode::kInvalidArgument, name,
                  "expected a part from value " +
                      (next ? std::to_string(next) + " (the values of it loaded so far) or 0"
                            : std::string("0")) +
                      ", got one from value " + std::to_string(first));
  }
  if (first > 0 && dtype != part_dtype_) {
    return Status(ErrorCode::kInvalidArgument, name,
                  std::string("expected the dtype of its first part, ") + DTypeName(part_dtype_) +
                      ", got " + DTypeName(dtype));
  }
  const size_t total = expected[0] * (expected.size() > 1 ? expected[1] : 1);
  if (count > total - first) {
    return Status(ErrorCode::kShapeMismatch, name,
                  "expected values up to " + std::to_string(total) + " (the shape's), got " +
                      std::to_string(count) + " from value " + std::to_string(first));
  }
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("data", data));
  ATTNKIT_RETURN_IF_ERROR(WriteValues(name, t->layout, targets, dtype, first, count, data));
  if (first + count == total) {
    loaded = 1;
  } else {
    part_index_ = index;
    part_dtype_ = dtype;
    part_next_ = first + count;
  }
  return Status::Ok();
}

bool CheckpointLoader::Reads(const std::string& name) const {
  const HfTensor* t = nullptr;
  size_t layer = 0;
  if (!Resolve(name, &t, &layer)) return true;
  if (t->layout == Layout::kBuffer) return false;
  return !(ready_ && t->global == &Parameters::unembedding && model_.config().tied_unembedding);
}

Status CheckpointLoader::Finish(Model* out) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("out", out));
  if (!ready_) {
    return Status(ErrorCode::kInvalidArgument, "loader",
                  "expected Init before Finish, got a loader with no model");
  }
  const ModelConfig& c = model_.config();
  for (size_t i = 0; i < kNumGpt2Tensors; ++i) {
    const HfTensor& t = kGpt2Tensors[i];
    if (t.layout == Layout::kBuffer) continue;
    for (size_t layer = 0; layer < (t.per_layer ? c.num_layers : 1); ++layer) {
      if (Targets(t, layer, &model_.params())[0]->size() == 0) break;  // not in this config
      if (!loaded_[i * c.num_layers + layer]) {
        return Status(ErrorCode::kInvalidArgument, FullName(t, layer),
                      "expected every tensor of the config loaded, got none for this one");
      }
    }
  }
  model_.set_pool(out->pool());
  *out = std::move(model_);
  model_ = Model();
  loaded_.clear();
  part_next_ = 0;
  ready_ = false;
  return Status::Ok();
}

}  // namespace model
}  // namespace attnkit
