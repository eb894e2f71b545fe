// attnkit model: a Model as an ONNX file (a ModelProto, docs/onnx.md), native
// builds with ONNX only (the attnkit::onnx library; ATTNKIT_HAS_ONNX is then
// defined for its users). The graph is docs/model.md's forward, node for
// node, and the same as the npm package's model.exportOnnx() writes
// (src/js/onnx.js): for the same weights and options the bytes are equal
// (tests/js/onnx-native.test.js compares them).
//
//   input  input_ids [batch, sequence] int64
//   output logits [batch, sequence, vocab_size] float
//   with options.cache, per layer l also the KV cache (g = num_kv_heads):
//   input  past_key_values.l.key, past_key_values.l.value [batch, g, past_sequence, d_k]
//   output present.l.key, present.l.value [batch, g, total_sequence, d_k]
//
// The weights are initializers, written straight from the model's memory;
// the metadata (metadata_props) holds producer, config (the JS config's
// JSON), trained_steps and, with a tokenizer, tokenizer and (characters)
// vocabulary (the characters' JSON array).
#ifndef ATTNKIT_MODEL_ONNX_H_
#define ATTNKIT_MODEL_ONNX_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "attnkit/model.h"
#include "attnkit/status.h"

namespace attnkit {
namespace model {

// The opsets written: 17 (LayerNormalization) up to 24. From 20 GELU is one
// Gelu node, from 23 attention one Attention node (below: MatMul, Where and
// Softmax; GELU's tanh formula).
constexpr int kOnnxMinOpset = 17;
constexpr int kOnnxMaxOpset = 24;
constexpr int kOnnxDefaultOpset = 23;
constexpr int kOnnxGeluOpset = 20;
constexpr int kOnnxAttentionOpset = 23;
// One protobuf message holds at most 2^31 - 1 bytes; the graph's nodes, names
// and metadata take less than kOnnxGraphBytes besides the weights.
constexpr uint64_t kOnnxMaxMessageBytes = (uint64_t{1} << 31) - 1;
constexpr uint64_t kOnnxGraphBytes = uint64_t{1} << 20;

struct OnnxOptions {
  int opset = kOnnxDefaultOpset;  // kOnnxMinOpset .. kOnnxMaxOpset
  bool cache = false;             // the KV cache as inputs and outputs
  // The tokenizer the metadata names: "characters" (the model's vocabulary()
  // goes in the metadata; it must not be empty), "gpt2" (GPT-2's BPE: a
  // checkpoint's), "none", or "" (the default): "characters" when the model
  // has a vocabulary, else none.
  std::string tokenizer;
};

// Refuses a model whose weights do not fit one protobuf message with its
// graph: 4 * parameter_count + kOnnxGraphBytes > kOnnxMaxMessageBytes is an
// error naming "model".
Status CheckOnnxSize(size_t parameter_count);

// The ONNX file of `model` into *bytes (replaced; reserved at the file's size
// once). Errors name "options.opset" (outside kOnnxMinOpset ..
// kOnnxMaxOpset), "options.tokenizer" (another name, or "characters" for a
// model without a vocabulary), "model" (no weights: neither Init, Allocate
// nor a checkpoint; or too large, CheckOnnxSize) or "bytes" (null).
Status ExportOnnx(const Model& model, const OnnxOptions& options, std::string* bytes);
// The same written to the file at `path` (created or replaced), the weights
// streamed from the model's memory: no copy of the file in memory. Errors:
// those above, and a file that cannot be written (named "path", with the
// system's reason).
Status ExportOnnxFile(const Model& model, const OnnxOptions& options, const std::string& path);

}  // namespace model
}  // namespace attnkit

#endif  // ATTNKIT_MODEL_ONNX_H_
