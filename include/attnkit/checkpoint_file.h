// attnkit model: a Hugging Face GPT-2 checkpoint opened from its files
// (model.safetensors, and config.json where there is one) as a Model. The
// names and the tensors they fill are checkpoint.h's (CheckpointLoader); here
// are the files: the safetensors format, config.json and the reading of each
// tensor's bytes, one tensor at a time.
//
// A safetensors file: 8 bytes of little-endian header length N, N bytes of
// JSON ({name: {"dtype", "shape", "data_offsets": [begin, end]},
// "__metadata__": {...}}), then the data, offsets counted from its first
// byte. The header is checked as the format's own reader checks it: the
// tensors tile the data exactly, in order, each product(shape) x its dtype's
// bytes, the last ending the file.
//
// Errors about a file's contents name the file and, where one is at fault,
// the tensor: parameter() "/data/gpt2/model.safetensors tensor \"wte.weight\"",
// detail() "expected 154389504 bytes (shape [50257, 768] of F32), got
// data_offsets [0, 100]"; those of config.json name the file and the key
// ("/data/gpt2/config.json n_head"). Nothing is half-loaded: on error the
// output is left as it was.
#ifndef ATTNKIT_MODEL_CHECKPOINT_FILE_H_
#define ATTNKIT_MODEL_CHECKPOINT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "attnkit/checkpoint.h"
#include "attnkit/model.h"
#include "attnkit/status.h"

namespace attnkit {
namespace model {

// The format's own limit on a header's JSON, in bytes.
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100000000;
// The largest config.json read, in bytes (Hugging Face's are a few KB).
constexpr uint64_t kMaxConfigJsonBytes = 1 << 20;

// One tensor of a safetensors header.
struct SafetensorsTensor {
  std::string name;             // as the file names it ("transformer.h.0.ln_1.weight")
  std::string dtype;            // "F32", "F16" or "BF16"; a mask buffer may hold another
  std::vector<size_t> shape;    // [] for a scalar
  uint64_t begin = 0, end = 0;  // its bytes [begin, end), counted from the file's start
};

// A safetensors file, open: its header read and checked, its tensors' bytes
// read on demand. Move-only.
class SafetensorsFile {
 public:
  // Opens `path` and reads its header. Errors: a file that cannot be read
  // (the path and the system's reason), shorter than 8 bytes, a header
  // length < 2 or > kMaxSafetensorsHeaderBytes or beyond the file's end,
  // JSON that does not parse or is not an object, an entry without dtype,
  // shape or data_offsets [begin, end], a dtype other than F32/F16/BF16
  // (but in a mask buffer, IsMaskBuffer), offsets that disagree with shape x
  // dtype, overlap or leave a gap, and data that ends before or after the
  // file. On error the file is closed and tensors() is empty.
  Status Open(const std::string& path);
  const std::string& path() const { return path_; }
  uint64_t file_bytes() const { return file_bytes_; }
  // Every tensor of the header, in file order (by begin).
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  // Reads tensor's bytes into *bytes (resized to end - begin; its capacity
  // is kept, so that one buffer serves every tensor). `tensor` is one of
  // tensors(). Errors: a file that is not open, `bytes` null, a read that
  // comes short (the file changed since Open).
  Status Read(const SafetensorsTensor& tensor, std::vector<uint8_t>* bytes);
  // The same for `size` of its bytes from `offset` (counted from its begin),
  // which must lie within it.
  Status Read(const SafetensorsTensor& tensor, uint64_t offset, uint64_t size,
              std::vector<uint8_t>* bytes);

 private:
  void Close();

  std::string path_;
  std::ifstream file_;
  uint64_t file_bytes_ = 0;
  std::vector<SafetensorsTensor> tensors_;
};

// A GPT-2's ModelConfig from the text of its config.json (Hugging Face's
// GPT2Config): vocab_size, n_positions (or n_ctx), n_embd, n_layer, n_head
// (a divisor of n_embd), n_inner (absent or null: 4 n_embd),
// layer_norm_epsilon (default 1e-5), tie_word_embeddings (default true);
// model_type absent or "gpt2", activation_function absent, "gelu_new" or
// "gelu_pytorch_tanh" (the tanh GELU), scale_attn_weights absent or true,
// scale_attn_by_inverse_layer_idx and add_cross_attention absent or false.
// Always bias, LayerNorm and the 1/sqrt(d_k) scale. Errors name
// "config.json <key>" (a key that is missing, of the wrong type, or whose
// value the model cannot take: CheckConfig's limits, named by their key),
// or "config.json" for text that does not parse or is not an object.
Status ConfigFromJson(const std::string& json, ModelConfig* config);
// The same from the file at `path` (at most kMaxConfigJsonBytes); errors
// name the path in place of "config.json".
Status ReadConfigJson(const std::string& path, ModelConfig* config);

struct CheckpointOptions {
  // config.json's path; empty: the config.json beside the safetensors file
  // if there is one, else the tensors' shapes decide (ConfigFromShapes).
  std::string config_path;
  // The heads of a checkpoint without config.json (n_head is not in the
  // tensors' shapes); with config.json 0 or its n_head.
  size_t num_heads = 0;
};

// Opens a Hugging Face GPT-2 checkpoint as a Model: `path` is a directory
// holding model.safetensors (and config.json, optional) or the .safetensors
// file itself (config.json beside it, optional). Reads the header, the
// config, then each tensor the model takes, in file order and in parts of at
// most 4 MB, into one staging buffer and through CheckpointLoader::LoadPart,
// which widens F16 and BF16 to float into the model; the mask buffers and a
// tied lm_head are not read. Memory: the model's float32 weights plus that
// buffer. On
// success *out is the model (its thread pool kept); on error *out is left as
// it was. Errors: every error of SafetensorsFile::Open, ReadConfigJson,
// ConfigFromShapes ("options.num_heads") and CheckpointLoader (a tensor the
// model lacks or misses, a wrong shape: named "<file> tensor \"<name>\""),
// options.num_heads different from config.json's n_head, `out` null.
Status OpenCheckpoint(const std::string& path, const CheckpointOptions& options, Model* out);

}  // namespace model
}  // namespace attnkit

#endif  // ATTNKIT_MODEL_CHECKPOINT_FILE_H_
