#include "attnkit/checkpoint_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "src/core/validate.h"

namespace attnkit {
namespace model {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// JSON's exact integers (JS's Number.MAX_SAFE_INTEGER): the largest size read.
constexpr uint64_t kMaxJsonInteger = (uint64_t{1} << 53) - 1;

Status Bad(const std::string& where, const std::string& expected, const std::string& given) {
  return Status(ErrorCode::kInvalidArgument, where, "expected " + expected + ", got " + given);
}

// "<file> tensor \"<name>\"": the parameter of an error in one tensor.
std::string TensorAt(const std::string& file, const std::string& name) {
  return file + " tensor \"" + name + "\"";
}

// Appends `value`'s JSON text to *out, its containers to `depth` levels
// ("[...]" below), stopping past 120 characters: never deeper than that,
// whatever a file nests.
void AppendJson(const Json& value, int depth, std::string* out) {
  if (!value.is_structured()) {
    *out += value.dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  const bool array = value.is_array();
  if (depth == 0) {
    *out += array ? "[...]" : "{...}";
    return;
  }
  *out += array ? '[' : '{';
  for (auto it = value.begin(); it != value.end() && out->size() <= 120; ++it) {
    if (it != value.begin()) *out += ',';
    if (!array) *out += Json(it.key()).dump(-1, ' ', false, Json::error_handler_t::replace) + ':';
    AppendJson(it.value(), depth - 1, out);
  }
  *out += array ? ']' : '}';
}

// A JSON value as an error message shows it: its text, cut at 120 characters.
std::string Describe(const Json& value) {
  std::string s;
  AppendJson(value, 3, &s);
  return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

std::string OffsetsText(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// The size of the regular file at `path`, or an error naming the path.
Status RegularFileSize(const std::string& path, uint64_t* size) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) {
    return Bad(path, "a readable file", ec ? "an error: " + ec.message() : "no such file");
  }
  if (!fs::is_regular_file(status)) {
    return Bad(path, "a regular file",
               fs::is_directory(status) ? "a directory" : "another kind of file");
  }
  *size = fs::file_size(path, ec);
  if (ec) return Bad(path, "a readable file", "an error: " + ec.message());
  return Status::Ok();
}

// Opens `path` for reading, or an error naming it and the system's reason.
Status OpenForReading(const std::string& path, std::ifstream* file) {
  errno = 0;
  file->open(path, std::ios::binary);
  if (!file->is_open()) {
    return Bad(path, "a readable file",
               "an error opening it" + (errno ? ": " + std::string(std::strerror(errno)) : ""));
  }
  return Status::Ok();
}

// Reads n bytes at `offset` into dst; the number of bytes read.
uint64_t ReadAt(std::ifstream* file, uint64_t offset, uint64_t n, void* dst) {
  file->clear();
  file->seekg(std::streamoff(offset));
  if (!*file) return 0;
  file->read(static_cast<char*>(dst), std::streamsize(n));
  return uint64_t(file->gcount());
}

// Parses `text`, `what` ("a Hugging Face config") of a JSON object, into
// *json, or an error naming `where` that quotes the parser.
Status ParseJson(const std::string& text, const std::string& where, const std::string& what,
                 Json* json) {
  try {
    *json = Json::parse(text);
  } catch (const Json::exception& e) {
    return Bad(where, what + " of JSON",
               std::string("text that does not parse (") + e.what() + ")");
  }
  if (!json->is_object()) {
    return Bad(where, what + ": a JSON object", std::string("a JSON ") + json->type_name());
  }
  return Status::Ok();
}

// An unsigned JSON integer <= kMaxJsonInteger.
bool IsCount(const Json& v) {
  return v.is_number_unsigned() && v.get<uint64_t>() <= kMaxJsonInteger;
}

// One entry of the header, checked alone: *tensor with offsets counted from
// the data's start.
Status ParseEntry(const std::string& file, const std::string& name, const Json& entry,
                  SafetensorsTensor* tensor) {
  const std::string at = TensorAt(file, name);
  const Json* dtype = nullptr;
  const Json* shape = nullptr;
  const Json* offsets = nullptr;
  if (entry.is_object()) {
    auto find = [&](const char* key) {
      auto it = entry.find(key);
      return it == entry.end() ? nullptr : &*it;
    };
    dtype = find("dtype");
    shape = find("shape");
    offsets = find("data_offsets");
  }
  const bool well_formed = dtype && dtype->is_string() && shape && shape->is_array() &&
                           std::all_of(shape->begin(), shape->end(), IsCount) && offsets &&
                           offsets->is_array() && offsets->size() == 2 &&
                           std::all_of(offsets->begin(), offsets->end(), IsCount);
  if (!well_formed) {
    return Bad(at, "{dtype, shape: [sizes], data_offsets: [begin, end]}", Describe(entry));
  }
  tensor->name = name;
  tensor->dtype = dtype->get<std::string>();
  tensor->shape.clear();
  for (const Json& s : *shape) tensor->shape.push_back(size_t(s.get<uint64_t>()));
  tensor->begin = (*offsets)[0].get<uint64_t>();
  tensor->end = (*offsets)[1].get<uint64_t>();
  if (tensor->end < tensor->begin) {
    return Bad(at, "data_offsets [begin, end] with begin <= end",
               OffsetsText(tensor->begin, tensor->end));
  }
  if (IsMaskBuffer(name)) return Status::Ok();  // skipped whatever it holds
  DType d;
  if (!DTypeFromName(tensor->dtype, &d)) {
    return Bad(at, "a dtype of F32, F16 or BF16 (widened to float32)", tensor->dtype);
  }
  // product(shape) x the dtype's bytes, in 64 bits.
  uint64_t bytes = DTypeBytes(d);
  bool overflow = false;
  for (size_t s : tensor->shape) {
    if (s != 0 && bytes > std::numeric_limits<uint64_t>::max() / s) overflow = true;
    bytes *= s;
  }
  if (overflow || tensor->end - tensor->begin != bytes) {
    const std::string size = overflow ? "more than 2^64 bytes" : std::to_string(bytes) + " bytes";
    return Bad(at, size + " (shape " + ShapeText(tensor->shape) + " of " + tensor->dtype + ")",
               "data_offsets " + OffsetsText(tensor->begin, tensor->end));
  }
  return Status::Ok();
}

// The header's JSON text of a file of `file_bytes` whose data start at
// `data_start`: its tensors in file order, offsets from the file's start.
Status ParseHeader(const std::string& file, const std::string& text, uint64_t data_start,
                   uint64_t file_bytes, std::vector<SafetensorsTensor>* tensors) {
  Json header;
  ATTNKIT_RETURN_IF_ERROR(ParseJson(text, file, "a safetensors header", &header));
  std::vector<SafetensorsTensor> out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    out.emplace_back();
    ATTNKIT_RETURN_IF_ERROR(ParseEntry(file, it.key(), it.value(), &out.back()));
  }
  std::sort(out.begin(), out.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // The tensors tile the data: each starts where the last ended, the last ends the file.
  uint64_t next = 0;
  for (const SafetensorsTensor& t : out) {
    if (t.begin != next) {
      return Bad(TensorAt(file, t.name),
                 "data_offsets starting at " + std::to_string(next) +
                     " (the tensors tile the data, in order)",
                 OffsetsText(t.begin, t.end) + ", which " +
                     (t.begin < next ? "overlaps the one before" : "leaves a gap before it"));
    }
    next = t.end;
  }
  const uint64_t data_bytes = file_bytes - data_start;
  if (next != data_bytes) {
    return Bad(file, std::to_string(next) + " bytes of data after the header (as its offsets say)",
               std::to_string(data_bytes) + (next > data_bytes
                                                 ? " (a truncated file, or a header that lies)"
                                                 : " (bytes after the last tensor)"));
  }
  for (SafetensorsTensor& t : out) {
    t.begin += data_start;
    t.end += data_start;
  }
  *tensors = std::move(out);
  return Status::Ok();
}

// config.json's integer `key` (>= 1), or an error naming "<where> <key>".
Status Count(const Json& json, const std::string& where, const char* key, size_t* value) {
  auto it = json.find(key);
  if (it == json.end() || !IsCount(*it) || it->get<uint64_t>() < 1) {
    return Bad(where + " " + key, "an integer >= 1",
               it == json.end() ? std::string("no such key") : Describe(*it));
  }
  *value = size_t(it->get<uint64_t>());
  return Status::Ok();
}

// config.json's value of `key`, or null where it is absent.
const Json* Find(const Json& json, const char* key) {
  auto it = json.find(key);
  return it == json.end() ? nullptr : &*it;
}

// ConfigFromJson's rules; errors name "<where> <key>".
Status ConfigFromJsonAt(const std::string& text, const std::string& where, ModelConfig* config) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("config", config));
  Json json;
  ATTNKIT_RETURN_IF_ERROR(ParseJson(text, where, "a Hugging Face config", &json));
  const auto key = [&](const char* k) { return where + " " + k; };
  if (const Json* v = Find(json, "model_type"); v && *v != "gpt2") {
    return Bad(key("model_type"), "\"gpt2\" (GPT2LMHeadModel: gpt2, distilgpt2, gpt2-medium ...)",
               Describe(*v));
  }
  if (const Json* v = Find(json, "activation_function");
      v && !v->is_null() && *v != "gelu_new" && *v != "gelu_pytorch_tanh") {
    return Bad(key("activation_function"),
               "\"gelu_new\" or \"gelu_pytorch_tanh\" (GPT-2's tanh GELU)", Describe(*v));
  }
  const std::pair<const char*, bool> attention[] = {{"scale_attn_weights", true},
                                                    {"scale_attn_by_inverse_layer_idx", false},
                                                    {"add_cross_attention", false}};
  for (const auto& [k, want] : attention) {
    if (const Json* v = Find(json, k); v && *v != want) {
      return Bad(key(k), std::string(want ? "true" : "false") + " (GPT-2's attention)",
                 Describe(*v));
    }
  }
  ModelConfig c;
  const char* positions = Find(json, "n_positions") ? "n_positions" : "n_ctx";
  ATTNKIT_RETURN_IF_ERROR(Count(json, where, "vocab_size", &c.vocab_size));
  ATTNKIT_RETURN_IF_ERROR(Count(json, where, positions, &c.max_seq_len));
  ATTNKIT_RETURN_IF_ERROR(Count(json, where, "n_embd", &c.d_model));
  ATTNKIT_RETURN_IF_ERROR(Count(json, where, "n_layer", &c.num_layers));
  ATTNKIT_RETURN_IF_ERROR(Count(json, where, "n_head", &c.num_heads));
  if (c.d_model % c.num_heads != 0) {
    return Bad(key("n_head"), "a divisor of n_embd " + std::to_string(c.d_model),
               std::to_string(c.num_heads));
  }
  const Json* inner = Find(json, "n_inner");
  if (inner && !inner->is_null()) {
    ATTNKIT_RETURN_IF_ERROR(Count(json, where, "n_inner", &c.d_ff));
  } else {
    c.d_ff = 4 * c.d_model;
  }
  const Json* eps = Find(json, "layer_norm_epsilon");
  if (eps && !eps->is_null()) {
    if (!eps->is_number() || !(eps->get<double>() > 0) ||
        !(eps->get<double>() <= std::numeric_limits<float>::max())) {
      return Bad(key("layer_norm_epsilon"), "a finite number > 0", Describe(*eps));
    }
    c.layer_norm_epsilon = float(eps->get<double>());
  }
  const Json* tied = Find(json, "tie_word_embeddings");
  if (tied && !tied->is_null() && !tied->is_boolean()) {
    return Bad(key("tie_word_embeddings"), "a boolean", Describe(*tied));
  }
  c.tied_unembedding = !tied || tied->is_null() || tied->get<bool>();
  c.layer_norm = true;
  c.scale_by_sqrt_dk = true;
  c.bias = true;
  // CheckConfig's limits, named by the key that gave the field.
  const Status s = CheckConfig(c, nullptr);
  if (!s.ok()) {
    const std::pair<const char*, const char*> keys[] = {
        {"vocab_size", "vocab_size"}, {"max_seq_len", positions},
        {"d_model", "n_embd"},        {"num_layers", "n_layer"},
        {"num_heads", "n_head"},      {"d_k", "n_head"},
        {"d_ff", "n_inner"},          {"layer_norm_epsilon", "layer_norm_epsilon"}};
    for (const auto& [field, k] : keys) {
      if (s.parameter() == field) return Status(s.code(), key(k), s.detail());
    }
    return Status(s.code(), where, s.message());
  }
  *config = c;
  return Status::Ok();
}

}  // namespace

void SafetensorsFile::Close() {
  if (file_.is_open()) file_.close();
  file_.clear();
  file_bytes_ = 0;
  tensors_.clear();
}

Status SafetensorsFile::Open(const std::string& path) {
  Close();
  path_ = path;
  uint64_t size = 0;
  Status s = RegularFileSize(path, &size);
  if (s.ok()) s = OpenForReading(path, &file_);
  if (!s.ok()) {
    Close();
    return s;
  }
  // 8 bytes of header length, the header, the data.
  uint8_t first[8] = {};
  if (size < 8 || ReadAt(&file_, 0, 8, first) != 8) {
    Close();
    return Bad(path, "a safetensors file (8 bytes of header length, a JSON header, the tensors)",
               std::to_string(size) + " bytes");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | first[i];
  if (n < 2 || n > kMaxSafetensorsHeaderBytes) {
    Close();
    return Bad(path,
               "a safetensors header length of 2 .. " + std::to_string(kMaxSafetensorsHeaderBytes) +
                   " bytes (is it a safetensors file?)",
               std::to_string(n));
  }
  if (n > size - 8) {
    Close();
    return Bad(path,
               "a header of at most " + std::to_string(size - 8) + " bytes (the file holds " +
                   std::to_string(size) + ")",
               "a header length of " + std::to_string(n) +
                   " (a truncated file, or not a safetensors file)");
  }
  std::string text(n, '\0');
  if (ReadAt(&file_, 8, n, &text[0]) != n) {
    Close();
    return Bad(path, std::to_string(n) + " bytes of header", "a read that came short");
  }
  s = ParseHeader(path, text, 8 + n, size, &tensors_);
  if (!s.ok()) {
    Close();
    return s;
  }
  file_bytes_ = size;
  return Status::Ok();
}

Status SafetensorsFile::Read(const SafetensorsTensor& tensor, std::vector<uint8_t>* bytes) {
  return Read(tensor, 0, tensor.end >= tensor.begin ? tensor.end - tensor.begin : 0, bytes);
}

Status SafetensorsFile::Read(const SafetensorsTensor& tensor, uint64_t offset, uint64_t size,
                             std::vector<uint8_t>* bytes) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("bytes", bytes));
  if (!file_.is_open()) {
    return Status(ErrorCode::kInvalidArgument, "file",
                  "expected a file opened by Open, got none open");
  }
  const std::string at = TensorAt(path_, tensor.name);
  if (tensor.end < tensor.begin || tensor.end > file_bytes_) {
    return Bad(at, "bytes within the file's " + std::to_string(file_bytes_),
               "bytes " + OffsetsText(tensor.begin, tensor.end));
  }
  const uint64_t n = tensor.end - tensor.begin;
  if (offset > n || size > n - offset) {
    return Bad(at, "a part within its " + std::to_string(n) + " bytes",
               std::to_string(size) + " bytes from byte " + std::to_string(offset));
  }
  bytes->resize(size_t(size));
  const uint64_t from = tensor.begin + offset;
  const uint64_t got = size ? ReadAt(&file_, from, size, bytes->data()) : 0;
  if (got != size) {
    return Bad(at, std::to_string(size) + " bytes at offset " + std::to_string(from),
               std::to_string(got) + " (the file changed since it was opened?)");
  }
  return Status::Ok();
}

Status ConfigFromJson(const std::string& json, ModelConfig* config) {
  return ConfigFromJsonAt(json, "config.json", config);
}

Status ReadConfigJson(const std::string& path, ModelConfig* config) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("config", config));
  uint64_t size = 0;
  ATTNKIT_RETURN_IF_ERROR(RegularFileSize(path, &size));
  if (size > kMaxConfigJsonBytes) {
    return Bad(path, "a config.json of at most " + std::to_string(kMaxConfigJsonBytes) + " bytes",
               std::to_string(size) + " bytes");
  }
  std::ifstream file;
  ATTNKIT_RETURN_IF_ERROR(OpenForReading(path, &file));
  std::string text(size_t(size), '\0');
  if (size && ReadAt(&file, 0, size, &text[0]) != size) {
    return Bad(path, std::to_string(size) + " bytes", "a read that came short");
  }
  return ConfigFromJsonAt(text, path, config);
}

Status OpenCheckpoint(const std::string& path, const CheckpointOptions& options, Model* out) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("out", out));
  std::error_code ec;
  const std::string file =
      fs::is_directory(path, ec) ? (fs::path(path) / "model.safetensors").string() : path;
  std::string config_path = options.config_path;
  if (config_path.empty()) {
    const fs::path beside = fs::path(file).parent_path() / "config.json";
    if (fs::exists(beside, ec)) config_path = beside.string();
  }
  SafetensorsFile st;
  ATTNKIT_RETURN_IF_ERROR(st.Open(file));
  ModelConfig config;
  if (!config_path.empty()) {
    ATTNKIT_RETURN_IF_ERROR(ReadConfigJson(config_path, &config));
    if (options.num_heads != 0 && options.num_heads != config.num_heads) {
      return Status(ErrorCode::kInvalidArgument, "options.num_heads",
                    "expected 0 or n_head " + std::to_string(config.num_heads) + " of " +
                        config_path + ", got " + std::to_string(options.num_heads));
    }
  } else {
    std::map<std::string, std::vector<size_t>> shapes;
    for (const SafetensorsTensor& t : st.tensors()) shapes[t.name] = t.shape;
    const Status s = ConfigFromShapes(shapes, options.num_heads, &config);
    if (!s.ok()) {
      // "num_heads" is the caller's option; a tensor (a name with a dot) or
      // a config field read off the shapes is the file's.
      if (s.parameter() == "num_heads") return Status(s.code(), "options.num_heads", s.detail());
      const bool tensor = s.parameter().find('.') != std::string::npos;
      return Status(s.code(), tensor ? TensorAt(file, s.parameter()) : file + " " + s.parameter(),
                    s.detail());
    }
  }
  CheckpointLoader loader;
  ATTNKIT_RETURN_IF_ERROR(loader.Init(config));
  // One staging buffer of at most kPartBytes: each tensor in parts of whole values.
  constexpr uint64_t kPartBytes = uint64_t(4) << 20;
  std::vector<uint8_t> bytes;
  for (const SafetensorsTensor& t : st.tensors()) {
    if (!loader.Reads(t.name)) continue;
    DType dtype = DType::kF32;
    DTypeFromName(t.dtype, &dtype);  // Open refused any other dtype outside the mask buffers
    const uint64_t value = DTypeBytes(dtype), part = kPartBytes / value * value;
    const uint64_t size = t.end - t.begin;  // Open checked the offsets
    uint64_t at = 0;
    do {
      const uint64_t n = std::min(part, size - at);
      ATTNKIT_RETURN_IF_ERROR(st.Read(t, at, n, &bytes));
      const Status s = loader.LoadPart(t.name, dtype, t.shape, size_t(at / value),
                                       size_t(n / value), bytes.data());
      if (!s.ok()) return Status(s.code(), TensorAt(file, s.parameter()), s.detail());
      at += n;
    } while (at < size);
  }
  const Status s = loader.Finish(out);
  if (!s.ok()) return Status(s.code(), TensorAt(file, s.parameter()), s.detail());
  return Status::Ok();
}

}  // namespace model
}  // namespace attnkit
