// attnkit model: a small transformer trained by the core's attention and its
// backward: attention-only (Elhage et al. 2021, "A Mathematical Framework for
// Transformer Circuits") with d_ff 0, a GPT (pre-LayerNorm blocks with an MLP,
// as GPT-2 and nanoGPT) with d_ff > 0. Above the core: it uses only the public
// headers of src/core, and the core knows nothing of it.
//
// Shapes (N = batch * seq_len rows, h = num_heads, g = num_kv_heads):
//   x_0 = token_embedding[token] + position_embedding[t]        [N, d_model]
//   per layer l = 1..num_layers:
//     a   = LayerNorm_l(x) (layer_norm on) or x                  [N, d_model]
//     Q = a W_Q [N, h d_k], K = a W_K [N, g d_k], V = a W_V [N, g d_k]
//           (+ b_Q, b_K, b_V with bias; every product below likewise adds
//           its bias row with bias on)
//     z   = causal multi-head attention(Q, K, V)                 [N, h d_k]
//           scale 1/sqrt(d_k) (scale_by_sqrt_dk) or 1
//     x   = x + z W_O                                            [N, d_model]
//     with d_ff > 0 (a GPT block) also the MLP:
//     b   = LayerNorm2_l(x)                                      [N, d_model]
//     u   = b W_1                                                [N, d_ff]
//     x   = x + GELU(u) W_2                                      [N, d_model]
//           GELU(u) = u/2 (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3))), the tanh
//           approximation of GPT-2 (PyTorch approximate='tanh'); biases in
//           the linear layers with bias (GPT-2's), none without (nanoGPT's
//           bias=False)
//   f      = LayerNorm_final(x) (layer_norm on) or x
//   logits = f unembedding                                       [N, vocab_size]
//            or f token_embedding^T with tied_unembedding (GPT-2's lm_head)
// Every LayerNorm: (x - mean) / sqrt(var + layer_norm_epsilon) gain + bias.
//   loss   = mean over the scored positions of -log softmax(logits)[target]
#ifndef ATTNKIT_MODEL_MODEL_H_
#define ATTNKIT_MODEL_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attnkit/matrix.h"
#include "attnkit/packed_weights.h"
#include "attnkit/status.h"
#include "attnkit/thread_pool.h"

namespace attnkit {
namespace model {

constexpr size_t kMaxLayers = 48;

struct ModelConfig {
  size_t vocab_size = 0;
  size_t max_seq_len = 0;  // rows of the position embedding
  size_t d_model = 0;
  size_t num_layers = 1;  // 1 .. kMaxLayers
  size_t num_heads = 1;
  size_t num_kv_heads = 0;        // 0 = num_heads; must divide num_heads
  size_t d_k = 0;                 // 0 = d_model / num_heads (which must divide); d_v = d_k
  size_t d_ff = 0;                // 0 = attention-only layers; > 0 = GPT blocks (needs layer_norm)
  bool layer_norm = false;        // pre-norm LayerNorm per layer and before the unembedding
  bool scale_by_sqrt_dk = true;   // false: scores are Q K^T unscaled (the scale experiment)
  bool bias = false;              // every linear layer adds a bias row (b_Q ... b_2; GPT-2's)
  bool tied_unembedding = false;  // logits = f token_embedding^T; no unembedding tensor
  bool gpt2_init = false;         // InitParameters draws GPT-2's scales, not the default ones
  float layer_norm_epsilon = 1e-5f;  // every LayerNorm's; > 0 and finite
};

// A ModelConfig as 32-bit words, the one layout of the weights file's header
// and of the JS bindings: each of kConfigSizes in order, then one word of
// kConfigFlags' bits (bit i = flag i), then each of kConfigFloats as its
// float's bits. A new field is one more entry of these lists (and of
// CONFIG_WORDS, CONFIG_FLAGS or CONFIG_FLOATS in src/js/model.js).
constexpr size_t ModelConfig::*kConfigSizes[] = {
    &ModelConfig::vocab_size, &ModelConfig::max_seq_len, &ModelConfig::d_model,
    &ModelConfig::num_layers, &ModelConfig::num_heads,   &ModelConfig::num_kv_heads,
    &ModelConfig::d_k,        &ModelConfig::d_ff,
};
constexpr bool ModelConfig::*kConfigFlags[] = {
    &ModelConfig::layer_norm,       &ModelConfig::scale_by_sqrt_dk, &ModelConfig::bias,
    &ModelConfig::tied_unembedding, &ModelConfig::gpt2_init,
};
constexpr float ModelConfig::*kConfigFloats[] = {&ModelConfig::layer_norm_epsilon};
constexpr size_t kConfigSizeWords = sizeof(kConfigSizes) / sizeof(kConfigSizes[0]);
constexpr size_t kConfigFloatWords = sizeof(kConfigFloats) / sizeof(kConfigFloats[0]);
constexpr size_t kConfigFlagCount = sizeof(kConfigFlags) / sizeof(kConfigFlags[0]);
constexpr size_t kConfigWords = kConfigSizeWords + 1 + kConfigFloatWords;
// `words` must not be null (no Status to report it).
void ConfigToWords(const ModelConfig& config, uint32_t words[kConfigWords]);
// Fails (naming "words") only on unknown flag bits; the sizes and floats are CheckConfig's.
Status ConfigFromWords(const uint32_t words[kConfigWords], ModelConfig* config);

// Checks every field (a Status naming it: "vocab_size", "d_model", ...) and
// fills in the derived num_kv_heads and d_k into *resolved (may be null).
Status CheckConfig(const ModelConfig& config, ModelConfig* resolved);

struct LayerParameters {
  Matrix ln_gain, ln_bias;    // [1, d_model] each; empty without layer_norm
  Matrix W_Q;                 // [d_model, h d_k]
  Matrix W_K;                 // [d_model, g d_k]
  Matrix W_V;                 // [d_model, g d_k]
  Matrix W_O;                 // [h d_k, d_model]
  Matrix ln2_gain, ln2_bias;  // [1, d_model] each; the MLP's LayerNorm; empty with d_ff 0
  Matrix W_1;                 // [d_model, d_ff]; empty with d_ff 0
  Matrix W_2;                 // [d_ff, d_model]; empty with d_ff 0
  // With bias, each product's bias row (else empty): b_Q [1, h d_k], b_K,
  // b_V [1, g d_k], b_O [1, d_model]; with d_ff > 0 b_1 [1, d_ff], b_2 [1, d_model].
  Matrix b_Q, b_K, b_V, b_O, b_1, b_2;
};

// Every parameter of the model; also the shape of its gradients.
struct Parameters {
  Matrix token_embedding;     // [vocab_size, d_model]
  Matrix position_embedding;  // [max_seq_len, d_model]
  std::vector<LayerParameters> layers;
  Matrix final_gain, final_bias;  // [1, d_model] each; empty without layer_norm
  Matrix unembedding;             // [d_model, vocab_size]; empty with tied_unembedding

  // Allocates every tensor of `config` (resolved), zero-filled; with
  // `zeroed` false their values are left unset, for a caller that writes
  // every one (a checkpoint's loader).
  Status Allocate(const ModelConfig& config, bool zeroed = true);
  // The tensors in their fixed order (that of the weights file): token
  // embedding, position embedding, then per layer [ln_gain, ln_bias,] W_Q,
  // [b_Q,] W_K, [b_K,] W_V, [b_V,] W_O, [b_O,] [ln2_gain, ln2_bias, W_1,
  // [b_1,] W_2, [b_2]], then [final_gain, final_bias,] [unembedding]. Names
  // as "layers.0.W_Q". Tensors that are empty (no layer_norm, d_ff 0, no
  // bias, a tied unembedding) are left out.
  std::vector<Matrix*> Tensors();
  std::vector<const Matrix*> Tensors() const;
  std::vector<std::string> Names() const;
  size_t Count() const;  // total floats
};

// The initialisation, from one seed (docs/model.md says why these scales,
// and the sweep that chose them):
//   token and position embeddings  N(0, 1); GPT models (d_ff > 0): N(0, 0.3^2)
//   every matrix [fan_in, fan_out]  N(0, 1 / fan_in): W_Q, W_K, W_V, W_1 and the
//                                  unembedding 1 / d_model, W_O 1 / (h d_k), W_2 1 / d_ff
//   biases                         0
// With gpt2_init, GPT-2's (and nanoGPT's):
//   every matrix and embedding     N(0, 0.02^2)
//   but W_O and W_2                N(0, (0.02 / sqrt(2 num_layers))^2)
// LayerNorm gains 1, biases 0.
// Each tensor draws from its own stream (seed and tensor index through
// splitmix64), so the weights do not depend on the order they are filled in.
Status InitParameters(const ModelConfig& config, uint64_t seed, Parameters* params);

// A batch of sequences of one length: tokens and targets [batch * seq_len],
// row (b * seq_len + t). targets[i] < 0: position i is not scored.
struct Batch {
  size_t batch = 0;
  size_t seq_len = 0;
  std::vector<int32_t> tokens;
  std::vector<int32_t> targets;
};

// Results of a forward pass over the scored positions.
struct Metrics {
  float loss = 0;                // mean cross-entropy
  size_t scored = 0;             // positions with a target
  size_t correct = 0;            // of which argmax(logits) == target
  size_t sequences = 0;          // sequences with at least one scored position
  size_t sequences_correct = 0;  // of which every scored position is correct
  float accuracy() const { return scored ? float(correct) / float(scored) : 0.0f; }
};

// One sequence through the model with every layer's attention laid open
// (Model::Inspect). T = the sequence's length, h = num_heads, g =
// num_kv_heads; per-head tensors are head-major: head i's [T, ...] block
// starts at row i * T.
struct LayerInspection {
  Matrix input;     // [T, d_model]  what the layer's attention reads (LayerNorm-ed with layer_norm)
  Matrix Q;         // [h T, d_k]
  Matrix K, V;      // [g T, d_k] each
  Matrix weights;   // [h T, T]  attention weights (causal: zero above the diagonal)
  Matrix d_scores;  // [h T, T]  d loss / d S, S = scale Q K^T before the softmax
                    //           (zero where masked); empty without targets
};
struct Inspection {
  Matrix logits;                     // [T, vocab_size]
  std::vector<int32_t> predictions;  // argmax of each row of logits (the lowest index on ties)
  bool has_targets = false;
  Metrics metrics;  // loss and accuracy over the scored positions (with targets)
  std::vector<LayerInspection> layers;
};

// The activations of one GPT block over N rows that its backward reads
// (the named steps of src/model/blocks.h fill and read them: Model keeps
// one per layer from its last Forward, Generator one per layer while
// decoding). h = num_heads, g = num_kv_heads.
struct LayerNormActivations {
  Matrix y;           // LayerNorm(x) [N, d_model]
  Matrix mean, rstd;  // its statistics [N, 1]
};
// A layer's W_Q | W_K | W_V side by side [d_model, (h + 2g) d_k] and, with
// bias, b_Q | b_K | b_V [1, (h + 2g) d_k] (else empty): Q | K | V in one
// product (FuseQKV, src/model/blocks.h).
struct FusedQKV {
  Matrix W, b;
};
// A layer's W_QKV (FusedQKV's W), W_O, W_1 and W_2 (the last two empty
// without an MLP) packed once in panels (PanelMatrix, packed_weights.h), as
// the products of many rows read them: Model::PackedLayerWeights.
struct PackedLayer {
  PanelMatrix W_QKV, W_O, W_1, W_2;
};
// Every layer's PackedLayer, pointing into `matrices` (four per layer).
struct PackedLayers {
  std::vector<PackedLayer> layers;
  PackedMatrices matrices;
};
struct BlockActivations {
  Matrix input;               // x before the block [N, d_model] (Model's; unused in generation)
  LayerNormActivations norm;  // a = LayerNorm(x); empty without layer_norm
  Matrix W_QKV;               // W_Q | W_K | W_V side by side [d_model, (h + 2g) d_k]
  Matrix b_QKV;               // b_Q | b_K | b_V side by side [1, (h + 2g) d_k]; with bias
  // The fused weights the attention block reads: W_QKV and b_QKV above, or
  // when set the layer's of those a model keeps (generation, Model::FusedWeights).
  const FusedQKV* kept = nullptr;
  const Matrix& QKVWeights() const { return kept ? kept->W : W_QKV; }
  const Matrix& QKVBias() const { return kept ? kept->b : b_QKV; }
  // When set, the products of more than one row read the layer's weights
  // from these panels (a long prefill, Model::PackedLayerWeights) instead of
  // packing them per call: the same sums.
  const PackedLayer* packed = nullptr;
  Matrix QKV;                      // a W_QKV (+ b_QKV): Q | K | V side by side [N, (h + 2g) d_k]
  size_t q_cols = 0, kv_cols = 0;  // h d_k, g d_k
  ConstMatrixView Q() const { return QKV.view().Block(0, QKV.rows(), 0, q_cols); }
  ConstMatrixView K() const { return QKV.view().Block(0, QKV.rows(), q_cols, kv_cols); }
  ConstMatrixView V() const { return QKV.view().Block(0, QKV.rows(), q_cols + kv_cols, kv_cols); }
  Matrix z, lse;               // attention output [N, h d_k], lse [B h T, 1] (training)
  Matrix mid;                  // x after the attention's residual [N, d_model] (d_ff > 0)
  LayerNormActivations norm2;  // LayerNorm2(mid), the MLP's
  Matrix u, act;               // the MLP's pre-activation and GELU(u) [N, d_ff]
};
// The backward's buffers, kept from step to step so that their memory is reused.
struct BlockBackwardScratch {
  Matrix df, dx, dz, dQKV, dW_QKV, da, dact, db;
};

class Model {
 public:
  // The config is checked (CheckConfig) and the weights initialised from
  // `seed` (InitParameters).
  Status Init(const ModelConfig& config, uint64_t seed);
  // The config is checked and every weight is zero, with no random draws:
  // for weights that are filled right after (a checkpoint, a weights file).
  // With `zeroed` false the weights are left unset: for a caller that writes
  // every one before the model is used (CheckpointLoader, which finishes only
  // once every tensor has come whole), so that the weights' memory becomes
  // resident as they arrive rather than all at once.
  Status Allocate(const ModelConfig& config, bool zeroed = true);
  const ModelConfig& config() const { return config_; }
  // For writing: the model then forgets its fused weights (FusedWeights).
  // Write through params() itself: a reference kept from an earlier call
  // does not tell the model that its weights change.
  Parameters& params() {
    fused_.reset();
    packed_.reset();
    return params_;
  }
  const Parameters& params() const { return params_; }
  // Every layer's W_Q | W_K | W_V and biases side by side (FusedQKV), made
  // on the first call after the weights last changed (params() for writing,
  // Init, Allocate, ImportWeights, a checkpoint) and kept with the model
  // until they change again: each Generator::Start shares them instead of
  // copying W_Q, W_K and W_V. Calls from several threads at once are safe
  // (each may make a copy; one is kept). Errors: kOverflow (memory).
  Status FusedWeights(std::shared_ptr<const std::vector<FusedQKV>>* out) const;
  // Every layer's W_QKV, W_O, W_1 and W_2 packed in panels (PackedLayers),
  // made on the first call after the weights last changed and kept as
  // FusedWeights are: a Generator's prefill of many tokens reads them instead
  // of packing each weight matrix per product. They cost as much memory as
  // those matrices (GPT-2 small: 340 MB). Errors: kOverflow (memory).
  Status PackedLayerWeights(std::shared_ptr<const PackedLayers>* out) const;
  // Threads for the model's passes (not owned; null = caller's thread): the
  // products, attention and row kernels of Forward and Backward, and
  // TrainStep's AdamW update, each where its size repays the threads.
  // Results are bit-identical with any pool.
  void set_pool(ThreadPool* pool) { pool_ = pool; }
  ThreadPool* pool() const { return pool_; }

  // Runs the model on the batch and keeps what Backward needs. metrics
  // (optional) receives its loss; logits (optional) receives [batch *
  // seq_len, vocab_size].
  Status Forward(const Batch& batch, Metrics* metrics, Matrix* logits = nullptr);
  // Gradients of the last Forward's mean loss for every parameter; grads is
  // allocated to the parameters' shapes and overwritten. d_attention
  // (optional) receives each layer's gradient of its attention output z,
  // [batch * seq_len, h d_k] (the dO of the multi-head backward).
  Status Backward(Parameters* grads, std::vector<Matrix>* d_attention = nullptr);
  // After Forward: the attention weights of `layer`, [batch * h * seq_len,
  // seq_len], block (b, head) at row (b * h + head) * seq_len (causal: zero
  // above the diagonal).
  Status AttentionWeights(size_t layer, Matrix* weights) const;
  // One sequence: tokens [T], 1 <= T <= max_seq_len, each < vocab_size. With
  // targets (T entries, -1 = not scored), also the loss and each head's
  // d_scores: the backward keeps every layer's dO = d loss / d z, and the
  // core's backward trace (TraceAttentionBackwardQKV) of each head on its Q,
  // K, V and dO gives dS. The weights do not change; the pass becomes the
  // last Forward (AttentionWeights reads it). Errors name "tokens" or
  // "targets".
  Status Inspect(const std::vector<int32_t>& tokens, const std::vector<int32_t>* targets,
                 Inspection* out);

  // An opaque vocabulary kept with the weights (the weights file carries it):
  // a character tokenizer's Unicode code points in token order, or empty (the
  // task models). When not empty its length is vocab_size.
  const std::vector<uint32_t>& vocabulary() const { return vocabulary_; }
  void set_vocabulary(std::vector<uint32_t> vocabulary) { vocabulary_ = std::move(vocabulary); }
  // The optimiser updates the weights have had (TrainStep counts them; the
  // weights file carries the count; Init sets 0).
  uint32_t trained_steps() const { return trained_steps_; }
  void set_trained_steps(uint32_t steps) { trained_steps_ = steps; }

 private:
  // Takes config c (checked, resolved) and its weights p; resets the rest.
  void Adopt(const ModelConfig& c, Parameters&& p);

  ModelConfig config_;
  Parameters params_;
  std::vector<uint32_t> vocabulary_;
  uint32_t trained_steps_ = 0;
  ThreadPool* pool_ = nullptr;
  // The last forward: each block's activations (blocks_[l].input is layer
  // l's input, the embeddings for layer 0), the final norm's input and
  // activations, the logits and d loss / d logits [N, vocab_size].
  Batch batch_;
  std::vector<BlockActivations> blocks_;
  Matrix final_input_;
  LayerNormActivations final_norm_;
  Matrix logits_, dlogits_;
  BlockBackwardScratch backward_scratch_;  // kept so that its memory is reused
  bool have_forward_ = false;
  // FusedWeights' copy, or null when not made since the weights last changed.
  mutable std::shared_ptr<const std::vector<FusedQKV>> fused_;
  // PackedLayerWeights', likewise.
  mutable std::shared_ptr<const PackedLayers> packed_;
};

// AdamW (Loshchilov and Hutter 2019) with a linear learning-rate warm-up and
// an optional cosine decay, at step t = 1, 2, ...:
//   t <= warmup_steps:  lr_t = learning_rate * t / warmup_steps
//   then, decay_steps 0: lr_t = learning_rate
//   else, with p = min(1, (t - warmup_steps) / (decay_steps - warmup_steps)):
//     lr_t = min_learning_rate + (learning_rate - min_learning_rate) (1 + cos(pi p)) / 2
//   (so lr reaches min_learning_rate at step decay_steps and stays there).
// Weight decay applies to the matrices (W_Q, W_K, W_V, W_O, W_1, W_2 and the
// unembedding), not to embeddings, biases or LayerNorm parameters.
struct AdamWConfig {
  float learning_rate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.98f;
  float epsilon = 1e-8f;
  float weight_decay = 0.01f;
  size_t warmup_steps = 0;
  size_t decay_steps = 0;       // 0 = constant after warm-up; else > warmup_steps
  float min_learning_rate = 0;  // the cosine's floor, 0 .. learning_rate
  float clip_norm = 1.0f;       // the gradient's global L2 norm is clipped to this (0 = off)
};
Status CheckAdamWConfig(const AdamWConfig& config);

class AdamW {
 public:
  Status Init(const AdamWConfig& config, const Parameters& like);
  // One update of params from grads (shaped alike), split over `pool`'s
  // threads if given (bit-identical with any pool or none).
  Status Step(const Parameters& grads, Parameters* params, ThreadPool* pool = nullptr);
  size_t steps() const { return step_; }
  float LearningRate(size_t step) const;  // the rate used at step (1-based)

 private:
  AdamWConfig config_;
  Parameters m_, v_;
  size_t step_ = 0;
  double beta1_power_ = 1, beta2_power_ = 1;
};

// One training step of `model` on `batch`: forward (its metrics, before the
// update), backward into *grads (shaped as the model's parameters) and one
// update by *adam (metrics optional). Trainer::Step, and the JS bindings'
// trainers, which hold the model apart from the optimiser.
Status TrainStep(const Batch& batch, Model* model, Parameters* grads, AdamW* adam,
                 Metrics* metrics);

// Model, gradients and optimiser together: one call per training step.
class Trainer {
 public:
  Status Init(const ModelConfig& config, uint64_t seed, const AdamWConfig& optimizer);
  Model& model() { return model_; }
  const Model& model() const { return model_; }
  // Forward, backward and one AdamW update; metrics (optional) of the
  // forward (before the update).
  Status Step(const Batch& batch, Metrics* metrics);

 private:
  Model model_;
  Parameters grads_;
  AdamW adam_;
};

// The weights file (docs/model.md), all integers little-endian:
//   bytes 0..7   magic "ATKMODEL"
//   u32          version (kWeightsVersion)
//   u32 x 10     the config (ConfigToWords: vocab_size, max_seq_len, d_model,
//                num_layers, num_heads, num_kv_heads, d_k, d_ff, flags,
//                layer_norm_epsilon as f32)
//   u32          vocabulary length (0 or vocab_size)
//   u32 x length the vocabulary (Model::vocabulary)
//   u32          trained steps (Model::trained_steps; from version 3)
//   u32          parameter count (floats)
//   f32 x count  the parameters in Parameters::Tensors() order, row-major
//   u32          FNV-1a hash of every byte before it
// Version 1 files (8 config words without d_ff, no vocabulary) still import,
// as d_ff 0 with an empty vocabulary; version 2 (no trained steps) as 0
// steps; versions 1 .. 3 (no epsilon word) with epsilon 1e-5.
constexpr uint32_t kWeightsVersion = 4;
Status ExportWeights(const Model& model, std::vector<uint8_t>* bytes);
// Checks magic, version, config (as CheckConfig), vocabulary length, size,
// hash and that every value is finite; on success replaces *model's config,
// weights and vocabulary. Errors name "weights" and say what is wrong.
Status ImportWeights(const uint8_t* data, size_t size, Model* model);

}  // namespace model
}  // namespace attnkit

#endif  // ATTNKIT_MODEL_MODEL_H_
