// attnkit model: GPT-2's checkpoint layout. A Hugging Face GPT2LMHeadModel
// (model.safetensors) names its tensors after PyTorch modules; this is the one
// place that maps those names onto a model's Parameters, tensor by tensor, in
// any order. Reading the file (its header, its byte ranges) is
// checkpoint_file.h's natively; the JS package hands the bytes of each tensor
// over as it fetches them.
//
// The names, with or without the "transformer." prefix (d = d_model, V =
// vocab_size, P = max_seq_len, i = 0 .. num_layers - 1):
//   wte.weight [V, d]                 token_embedding
//   wpe.weight [P, d]                 position_embedding
//   h.i.ln_1.{weight, bias} [d]       ln_gain, ln_bias
//   h.i.attn.c_attn.weight [d, h d_k + 2 g d_k]
//                                     W_Q | W_K | W_V (Conv1D stores [in, out]:
//                                     attnkit's x W layout, split by columns)
//   h.i.attn.c_attn.bias [h d_k + 2 g d_k]   b_Q | b_K | b_V
//   h.i.attn.c_proj.{weight [h d_k, d], bias [d]}   W_O, b_O
//   h.i.ln_2.{weight, bias} [d]       ln2_gain, ln2_bias
//   h.i.mlp.c_fc.{weight [d, d_ff], bias [d_ff]}    W_1, b_1
//   h.i.mlp.c_proj.{weight [d_ff, d], bias [d]}     W_2, b_2
//   ln_f.{weight, bias} [d]           final_gain, final_bias
//   lm_head.weight [V, d]             unembedding transposed (nn.Linear
//                                     stores [out, in]); skipped with
//                                     tied_unembedding, as Hugging Face ties it
//   h.i.attn.bias, h.i.attn.masked_bias   the causal-mask buffers: skipped
#ifndef ATTNKIT_MODEL_CHECKPOINT_H_
#define ATTNKIT_MODEL_CHECKPOINT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "attnkit/model.h"
#include "attnkit/status.h"

namespace attnkit {
namespace model {

// A checkpoint tensor's element type (safetensors' "F32", "F16", "BF16").
enum class DType { kF32, kF16, kBF16 };
size_t DTypeBytes(DType dtype);
const char* DTypeName(DType dtype);  // "F32", "F16", "BF16"
// A tensor's shape as errors show it: "[768, 2304]", "[]" for a scalar.
std::string ShapeText(const std::vector<size_t>& shape);
// The dtype named `name` ("F32", "F16", "BF16"); false for any other name
// (and for a null dtype).
bool DTypeFromName(const std::string& name, DType* dtype);

// IEEE 754 binary16 to float, exactly: subnormals, infinities and NaN too.
float HalfToFloat(uint16_t bits);
// bfloat16 (a float's top 16 bits) to float, exactly.
float BFloat16ToFloat(uint16_t bits);
// out[k] = value k of the n values of `dtype` at data (little-endian, any
// alignment), widened to float.
void WidenToFloat(DType dtype, const void* data, size_t n, float* out);

// Whether `name` is a causal-mask buffer (h.{i}.attn.bias or
// h.{i}.attn.masked_bias, with or without "transformer."): not a parameter,
// skipped by CheckpointLoader::Load whatever its dtype and shape.
bool IsMaskBuffer(const std::string& name);

// The config of a GPT-2 checkpoint without config.json, read off the shapes
// of its tensors (name -> shape, names with or without "transformer."):
// wte.weight [vocab_size, d_model], wpe.weight [max_seq_len, d_model],
// h.0.mlp.c_fc.weight [d_model, d_ff], num_layers = the highest h.{i} + 1,
// tied_unembedding unless lm_head.weight is there; GPT-2's bias, LayerNorm
// (epsilon 1e-5) and 1/sqrt(d_k) scale. The heads are not in the shapes:
// num_heads gives them (a divisor of d_model). Errors name the tensor that
// is missing or of the wrong rank, "num_heads", or CheckConfig's field.
Status ConfigFromShapes(const std::map<std::string, std::vector<size_t>>& shapes, size_t num_heads,
                        ModelConfig* config);

// Fills a model of the GPT-2 family from a checkpoint, tensor by tensor, in
// any order; Finish hands the model over once every tensor has arrived.
class CheckpointLoader {
 public:
  // Checks the config (CheckConfig) and allocates the model, every weight
  // zero (Model::Allocate). Starts over if called again.
  Status Init(const ModelConfig& config);
  // One tensor by its Hugging Face name (the table above): prod(shape)
  // values of dtype, row-major, at data. Errors name the tensor: an unknown
  // name (or a layer index >= num_layers), a tensor the config leaves out
  // (bias, layer_norm or d_ff off), one loaded twice, a wrong shape (both
  // shapes), a value that is not finite. A failed Load leaves the tensor
  // not loaded (it may be loaded again).
  Status Load(const std::string& name, DType dtype, const std::vector<size_t>& shape,
              const void* data);
  // Part of one tensor, so that a reader needs no room for a whole tensor:
  // values [first, first + count) of its prod(shape) values (row-major, as
  // Load reads them) at data. A tensor's parts come in order, one after
  // another: first = the values of it loaded so far, or 0 to start it over;
  // a part of another tensor in between is refused. Each part checks what
  // Load checks, the later ones also the first one's dtype; the last one
  // marks the tensor loaded. A failed part leaves its tensor (and one whose
  // parts were arriving) not loaded, to be loaded again from value 0. Load
  // is the one part of all the values.
  Status LoadPart(const std::string& name, DType dtype, const std::vector<size_t>& shape,
                  size_t first, size_t count, const void* data);
  // Whether Load reads the data of `name`: false for the mask buffers and,
  // with tied_unembedding, lm_head.weight (which Load skips), so that a
  // reader need not fetch their bytes; true for any other name (Load then
  // checks it).
  bool Reads(const std::string& name) const;
  // Every tensor the config needs arrived exactly once (else the first
  // missing one is named): moves the model into *out; the loader then needs
  // Init again.
  Status Finish(Model* out);

 private:
  Model model_;
  std::vector<uint8_t> loaded_;  // per (table entry, layer): 1 once loaded
  // The tensor whose parts are arriving (its index in loaded_, its dtype)
  // and how many of its values have; part_next_ 0: none.
  size_t part_index_ = 0;
  DType part_dtype_ = DType::kF32;
  size_t part_next_ = 0;
  bool ready_ = false;
};

}  // namespace model
}  // namespace attnkit

#endif  // ATTNKIT_MODEL_CHECKPOINT_H_
