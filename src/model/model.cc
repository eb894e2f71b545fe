#include "attnkit/model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "attnkit/attention.h"
#include "attnkit/backward.h"
#include "attnkit/backward_trace.h"
#include "attnkit/multihead.h"
#include "attnkit/ops.h"
#include "attnkit/random.h"
#include "src/core/validate.h"
#include "src/model/blocks.h"

namespace attnkit {
namespace model {
namespace {

constexpr size_t kMaxSize = 1u << 16;

Status CheckSize(const char* name, size_t value, size_t min, size_t max) {
  if (value < min || value > max) {
    return Status(ErrorCode::kInvalidArgument, name,
                  "expected " + std::to_string(min) + " .. " + std::to_string(max) + ", got " +
                      std::to_string(value));
  }
  return Status::Ok();
}

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

Status CheckConfig(const ModelConfig& config, ModelConfig* resolved) {
  ModelConfig c = config;
  ATTNKIT_RETURN_IF_ERROR(CheckSize("vocab_size", c.vocab_size, 2, 1u << 24));
  ATTNKIT_RETURN_IF_ERROR(CheckSize("max_seq_len", c.max_seq_len, 1, kMaxSize));
  ATTNKIT_RETURN_IF_ERROR(CheckSize("d_model", c.d_model, 1, kMaxSize));
  ATTNKIT_RETURN_IF_ERROR(CheckSize("num_layers", c.num_layers, 1, kMaxLayers));
  ATTNKIT_RETURN_IF_ERROR(CheckSize("num_heads", c.num_heads, 1, 1024));
  if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
  if (c.num_kv_heads > c.num_heads || c.num_heads % c.num_kv_heads != 0) {
    return Status(ErrorCode::kInvalidArgument, "num_kv_heads",
                  "must divide num_heads " + std::to_string(c.num_heads) + ", got " +
                      std::to_string(c.num_kv_heads));
  }
  if (c.d_k == 0) {
    if (c.d_model % c.num_heads != 0) {
      return Status(ErrorCode::kInvalidArgument, "d_k",
                    "0 derives d_model / num_heads, but num_heads " + std::to_string(c.num_heads) +
                        " does not divide d_model " + std::to_string(c.d_model));
    }
    c.d_k = c.d_model / c.num_heads;
  }
  ATTNKIT_RETURN_IF_ERROR(CheckSize("d_k", c.d_k, 1, kMaxSize));
  ATTNKIT_RETURN_IF_ERROR(CheckSize("d_ff", c.d_ff, 0, kMaxSize));
  if (!(std::isfinite(c.layer_norm_epsilon) && c.layer_norm_epsilon > 0)) {
    return Status(
        ErrorCode::kInvalidArgument, "layer_norm_epsilon",
        "expected a finite value > 0, got " + internal::FloatString(c.layer_norm_epsilon));
  }
  if (c.d_ff > 0 && !c.layer_norm) {
    return Status(ErrorCode::kInvalidArgument, "d_ff",
                  "GPT blocks (d_ff " + std::to_string(c.d_ff) +
                      " > 0) are pre-LayerNorm: expected layer_norm on, got off");
  }
  // Every tensor's size must fit comfortably in 32 bits (the weights file).
  const double floats =
      double(c.vocab_size) * c.d_model * (c.tied_unembedding ? 1 : 2) +
      double(c.max_seq_len) * c.d_model +
      double(c.num_layers) * c.d_model * c.d_k * (2 * c.num_heads + 2 * c.num_kv_heads) +
      double(c.num_layers) * c.d_model * c.d_ff * 2;
  if (floats > double(1u << 30)) {
    return Status(
        ErrorCode::kOverflow, "d_model",
        "the model would have " + std::to_string(size_t(floats)) + " parameters, more than 2^30");
  }
  if (resolved) *resolved = c;
  return Status::Ok();
}

Status Parameters::Allocate(const ModelConfig& config, bool zeroed) {
  ModelConfig c;
  ATTNKIT_RETURN_IF_ERROR(CheckConfig(config, &c));
  const size_t d = c.d_model, hd = c.num_heads * c.d_k, gd = c.num_kv_heads * c.d_k;
  ATTNKIT_RETURN_IF_ERROR(Alloc(&token_embedding, c.vocab_size, d, zeroed));
  ATTNKIT_RETURN_IF_ERROR(Alloc(&position_embedding, c.max_seq_len, d, zeroed));
  layers.assign(c.num_layers, LayerParameters());
  // Each tensor [rows, cols], allocated when `on`.
  auto alloc_if = [zeroed](bool on, Matrix* m, size_t rows, size_t cols) {
    return on ? Alloc(m, rows, cols, zeroed) : Status::Ok();
  };
  const bool mlp = c.d_ff > 0;
  for (LayerParameters& l : layers) {
    ATTNKIT_RETURN_IF_ERROR(alloc_if(c.layer_norm, &l.ln_gain, 1, d));
    ATTNKIT_RETURN_IF_ERROR(alloc_if(c.layer_norm, &l.ln_bias, 1, d));
    ATTNKIT_RETURN_IF_ERROR(Alloc(&l.W_Q, d, hd, zeroed));
    ATTNKIT_RETURN_IF_ERROR(Alloc(&l.W_K, d, gd, zeroed));
    ATTNKIT_RETURN_IF_ERROR(Alloc(&l.W_V, d, gd, zeroed));
    ATTNKIT_RETURN_IF_ERROR(Alloc(&l.W_O, hd, d, zeroed));
    ATTNKIT_RETURN_IF_ERROR(alloc_if(c.bias, &l.b_Q, 1, hd));
    ATTNKIT_RETURN_IF_ERROR(alloc_if(c.bias, &l.b_K, 1, gd));
    ATTNKIT_RETURN_IF_ERROR(alloc_if(c.bias, &l.b_V, 1, gd));
    ATTNKIT_RETURN_IF_ERROR(alloc_if(c.bias, &l.b_O, 1, d));
    ATTNKIT_RETURN_IF_ERROR(alloc_if(mlp, &l.ln2_gain, 1, d));
    ATTNKIT_RETURN_IF_ERROR(alloc_if(mlp, &l.ln2_bias, 1, d));
    ATTNKIT_RETURN_IF_ERROR(alloc_if(mlp, &l.W_1, d, c.d_ff));
    ATTNKIT_RETURN_IF_ERROR(alloc_if(mlp, &l.W_2, c.d_ff, d));
    ATTNKIT_RETURN_IF_ERROR(alloc_if(mlp && c.bias, &l.b_1, 1, c.d_ff));
    ATTNKIT_RETURN_IF_ERROR(alloc_if(mlp && c.bias, &l.b_2, 1, d));
  }
  final_gain = Matrix();
  final_bias = Matrix();
  unembedding = Matrix();
  ATTNKIT_RETURN_IF_ERROR(alloc_if(c.layer_norm, &final_gain, 1, d));
  ATTNKIT_RETURN_IF_ERROR(alloc_if(c.layer_norm, &final_bias, 1, d));
  return alloc_if(!c.tied_unembedding, &unembedding, d, c.vocab_size);
}

namespace {

// A layer's tensors in the weights file's order, by name.
struct LayerTensor {
  const char* name;
  Matrix LayerParameters::*tensor;
};
constexpr LayerTensor kLayerTensors[] = {
    {"ln_gain", &LayerParameters::ln_gain},   {"ln_bias", &LayerParameters::ln_bias},
    {"W_Q", &LayerParameters::W_Q},           {"b_Q", &LayerParameters::b_Q},
    {"W_K", &LayerParameters::W_K},           {"b_K", &LayerParameters::b_K},
    {"W_V", &LayerParameters::W_V},           {"b_V", &LayerParameters::b_V},
    {"W_O", &LayerParameters::W_O},           {"b_O", &LayerParameters::b_O},
    {"ln2_gain", &LayerParameters::ln2_gain}, {"ln2_bias", &LayerParameters::ln2_bias},
    {"W_1", &LayerParameters::W_1},           {"b_1", &LayerParameters::b_1},
    {"W_2", &LayerParameters::W_2},           {"b_2", &LayerParameters::b_2},
};

// Calls f(layer, name, tensor) for every tensor of p that is not empty, in
// the weights file's order (Parameters::Tensors); layer is -1 outside the
// layers (the tensor's name is then `name` alone).
template <typename P, typename F>
void ForEachTensor(P& p, F f) {
  auto visit = [&f](int layer, const char* name, auto& m) {
    if (m.size()) f(layer, name, m);
  };
  visit(-1, "token_embedding", p.token_embedding);
  visit(-1, "position_embedding", p.position_embedding);
  for (size_t i = 0; i < p.layers.size(); ++i) {
    for (const LayerTensor& t : kLayerTensors) visit(int(i), t.name, p.layers[i].*t.tensor);
  }
  visit(-1, "final_gain", p.final_gain);
  visit(-1, "final_bias", p.final_bias);
  visit(-1, "unembedding", p.unembedding);
}

}  // namespace

std::vector<Matrix*> Parameters::Tensors() {
  std::vector<Matrix*> out;
  ForEachTensor(*this, [&out](int, const char*, Matrix& m) { out.push_back(&m); });
  return out;
}

std::vector<const Matrix*> Parameters::Tensors() const {
  std::vector<const Matrix*> out;
  ForEachTensor(*this, [&out](int, const char*, const Matrix& m) { out.push_back(&m); });
  return out;
}

std::vector<std::string> Parameters::Names() const {
  std::vector<std::string> out;
  ForEachTensor(*this, [&out](int layer, const char* name, const Matrix&) {
    out.push_back(layer < 0 ? name : "layers." + std::to_string(layer) + "." + name);
  });
  return out;
}

size_t Parameters::Count() const {
  size_t n = 0;
  for (const Matrix* m : Tensors()) n += m->size();
  return n;
}

namespace {

// GPT models' (d_ff > 0) token and position embeddings: N(0, kGptEmbeddingStd^2)
// (docs/model.md, "Initialisation": the sweep that chose it).
constexpr double kGptEmbeddingStd = 0.3;

// The standard deviation of the normal that tensor `name` ([fan_in, fan_out]
// for a matrix: x W) starts from; the LayerNorm gains and every bias are not drawn.
double InitStd(const ModelConfig& c, const std::string& name, const Matrix& m) {
  if (c.gpt2_init) {
    // GPT-2: N(0, 0.02); the projections into the residual stream (W_O,
    // W_2) scaled by 1 / sqrt(2 num_layers), as 2 num_layers of them add up.
    const bool residual = EndsWith(name, ".W_O") || EndsWith(name, ".W_2");
    return residual ? 0.02 / std::sqrt(2.0 * double(c.num_layers)) : 0.02;
  }
  if (EndsWith(name, "_embedding")) return c.d_ff > 0 ? kGptEmbeddingStd : 1.0;
  // Every matrix by its fan-in (LeCun): each output keeps its input's variance.
  return 1.0 / std::sqrt(double(m.rows()));
}

}  // namespace

Status InitParameters(const ModelConfig& config, uint64_t seed, Parameters* params) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("params", params));
  ModelConfig c;
  ATTNKIT_RETURN_IF_ERROR(CheckConfig(config, &c));
  ATTNKIT_RETURN_IF_ERROR(params->Allocate(c));
  const std::vector<Matrix*> tensors = params->Tensors();
  const std::vector<std::string> names = params->Names();
  uint64_t stream = seed;
  for (size_t i = 0; i < tensors.size(); ++i) {
    Rng rng(SplitMix64(&stream));
    const std::string& name = names[i];
    Matrix& m = *tensors[i];
    if (EndsWith(name, "_gain")) {
      for (size_t k = 0; k < m.size(); ++k) m.data()[k] = 1.0f;
      continue;
    }
    if (EndsWith(name, "_bias") || name.find(".b_") != std::string::npos) continue;
    const double std_dev = InitStd(c, name, m);
    for (size_t k = 0; k < m.size(); ++k) m.data()[k] = float(rng.Normal() * std_dev);
  }
  return Status::Ok();
}

Status Model::Init(const ModelConfig& config, uint64_t seed) {
  ModelConfig c;
  ATTNKIT_RETURN_IF_ERROR(CheckConfig(config, &c));
  Parameters p;
  ATTNKIT_RETURN_IF_ERROR(InitParameters(c, seed, &p));
  Adopt(c, std::move(p));
  return Status::Ok();
}

Status Model::Allocate(const ModelConfig& config, bool zeroed) {
  ModelConfig c;
  ATTNKIT_RETURN_IF_ERROR(CheckConfig(config, &c));
  Parameters p;
  ATTNKIT_RETURN_IF_ERROR(p.Allocate(c, zeroed));
  Adopt(c, std::move(p));
  return Status::Ok();
}

void Model::Adopt(const ModelConfig& c, Parameters&& p) {
  config_ = c;
  params_ = std::move(p);
  vocabulary_.clear();
  trained_steps_ = 0;
  have_forward_ = false;
  fused_.reset();
  packed_.reset();
}

namespace {

// The batch's shape and entries against the model's config c.
Status CheckBatch(const ModelConfig& c, const Batch& batch) {
  if (batch.batch == 0) return Status(ErrorCode::kInvalidArgument, "batch", "must be >= 1, got 0");
  ATTNKIT_RETURN_IF_ERROR(CheckSize("seq_len", batch.seq_len, 1, c.max_seq_len));
  const size_t N = batch.batch * batch.seq_len;
  if (batch.tokens.size() != N || batch.targets.size() != N) {
    return Status(
        ErrorCode::kShapeMismatch, batch.tokens.size() != N ? "tokens" : "targets",
        "expected batch * seq_len = " + std::to_string(N) + " entries, got " +
            std::to_string(batch.tokens.size() != N ? batch.tokens.size() : batch.targets.size()));
  }
  for (size_t i = 0; i < N; ++i) {
    if (batch.tokens[i] < 0 || size_t(batch.tokens[i]) >= c.vocab_size) {
      return Status(ErrorCode::kInvalidArgument, "tokens",
                    "entry " + std::to_string(i) + " is " + std::to_string(batch.tokens[i]) +
                        ", expected 0 .. " + std::to_string(c.vocab_size - 1));
    }
    if (batch.targets[i] < -1 || batch.targets[i] >= int64_t(c.vocab_size)) {
      return Status(ErrorCode::kInvalidArgument, "targets",
                    "entry " + std::to_string(i) + " is " + std::to_string(batch.targets[i]) +
                        ", expected -1 (not scored) .. " + std::to_string(c.vocab_size - 1));
    }
  }
  return Status::Ok();
}

}  // namespace

Status Model::Forward(const Batch& batch, Metrics* metrics, Matrix* logits_out) {
  const ModelConfig& c = config_;
  if (params_.layers.empty())
    return Status(ErrorCode::kInvalidArgument, "model", "not initialised");
  ATTNKIT_RETURN_IF_ERROR(CheckBatch(c, batch));
  const size_t T = batch.seq_len, B = batch.batch, N = B * T, d = c.d_model;
  have_forward_ = false;
  batch_ = batch;
  const AttentionOptions options = CausalOptions(c, pool_);
  ThreadPool* const rows_pool = RowsPool(c, N, pool_);

  // The residual stream: block l reads blocks_[l].input and writes the next
  // block's input, the last final_input_ (a GPT block's attention half
  // writes its mid). Each sum is written where it is kept: a branch's
  // product goes straight into the next buffer, which then adds the stream
  // it came from (no copies of the stream).
  blocks_.resize(c.num_layers);
  ATTNKIT_RETURN_IF_ERROR(Shape(&blocks_[0].input, N, d));
  Embed(params_, batch.tokens.data(), T, 0, blocks_[0].input, rows_pool);
  for (size_t l = 0; l < c.num_layers; ++l) {
    const LayerParameters& p = params_.layers[l];
    BlockActivations& a = blocks_[l];
    Matrix& next = l + 1 < c.num_layers ? blocks_[l + 1].input : final_input_;
    ATTNKIT_RETURN_IF_ERROR(FuseQKV(p, &a));
    ATTNKIT_RETURN_IF_ERROR(
        AttentionBlock(c, p, a.input, B, options, nullptr, &a, c.d_ff > 0 ? &a.mid : &next));
    if (c.d_ff > 0) ATTNKIT_RETURN_IF_ERROR(MlpBlock(c, p, a.mid, &a, &next, pool_));
  }
  ATTNKIT_RETURN_IF_ERROR(FinalNorm(c, params_, final_input_, &final_norm_, pool_));
  ATTNKIT_RETURN_IF_ERROR(
      Unembed(c, params_, Normed(c, final_input_, final_norm_), &logits_, pool_));
  Metrics m;
  ATTNKIT_RETURN_IF_ERROR(Loss(batch, logits_, &m, &dlogits_, rows_pool));
  if (metrics) *metrics = m;
  // The caller's matrix is taken in exchange: a caller that passes the same
  // one every step reuses its memory, as training reuses logits_.
  if (logits_out) std::swap(*logits_out, logits_);
  have_forward_ = true;
  return Status::Ok();
}

namespace {

// *grads shaped as params (of config c), reallocated (zero) only when the
// shapes differ: every step of training passes the same gradients. Backward
// overwrites the weight matrices' gradients whole, as products; only those
// it adds into are zeroed here: the embeddings' and the LayerNorms'.
Status ZeroGradients(const ModelConfig& c, const Parameters& params, Parameters* grads) {
  const std::vector<const Matrix*> p = params.Tensors();
  const std::vector<Matrix*> g = grads->Tensors();
  bool same = grads->layers.size() == params.layers.size() && g.size() == p.size();
  for (size_t i = 0; same && i < p.size(); ++i) {
    same = g[i]->rows() == p[i]->rows() && g[i]->cols() == p[i]->cols();
  }
  if (!same) return grads->Allocate(c);
  std::vector<Matrix*> added = {&grads->token_embedding, &grads->position_embedding,
                                &grads->final_gain, &grads->final_bias};
  for (LayerParameters& l : grads->layers) {
    for (Matrix* t : {&l.ln_gain, &l.ln_bias, &l.ln2_gain, &l.ln2_bias}) added.push_back(t);
  }
  for (Matrix* t : added) std::fill(t->data(), t->data() + t->size(), 0.0f);
  return Status::Ok();
}

}  // namespace

Status Model::Backward(Parameters* grads, std::vector<Matrix>* d_attention) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("grads", grads));
  if (!have_forward_)
    return Status(ErrorCode::kInvalidArgument, "model", "Backward needs a Forward first");
  const ModelConfig& c = config_;
  ATTNKIT_RETURN_IF_ERROR(ZeroGradients(c, params_, grads));
  const AttentionOptions options = CausalOptions(c, pool_);
  BlockBackwardScratch& s = backward_scratch_;
  // The steps of Forward in reverse; dlogits_ is Loss's gradient.
  // First: with a tied unembedding it writes token_embedding's gradient,
  // which EmbedBackward then adds to.
  ATTNKIT_RETURN_IF_ERROR(UnembedBackward(c, params_, Normed(c, final_input_, final_norm_),
                                          dlogits_, grads, &s.df, pool_));
  ATTNKIT_RETURN_IF_ERROR(
      FinalNormBackward(c, params_, final_input_, final_norm_, &s.df, grads, &s.dx, pool_));
  if (d_attention) d_attention->assign(c.num_layers, Matrix());
  for (size_t l = c.num_layers; l-- > 0;) {
    const LayerParameters& p = params_.layers[l];
    LayerParameters& g = grads->layers[l];
    const BlockActivations& a = blocks_[l];
    if (c.d_ff > 0) {
      ATTNKIT_RETURN_IF_ERROR(MlpBlockBackward(c, p, a.mid, a, &g, &s, &s.dx, pool_));
    }
    ATTNKIT_RETURN_IF_ERROR(AttentionBlockBackward(c, p, a.input, a, batch_.batch, options, &g, &s,
                                                   &s.dx,
                                                   d_attention ? &(*d_attention)[l] : nullptr));
  }
  EmbedBackward(batch_.tokens.data(), batch_.seq_len, s.dx, grads, RowsPool(c, s.dx.rows(), pool_));
  return Status::Ok();
}

Status Model::AttentionWeights(size_t layer, Matrix* weights) const {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("weights", weights));
  if (!have_forward_) {
    return Status(ErrorCode::kInvalidArgument, "model", "AttentionWeights needs a Forward first");
  }
  if (layer >= config_.num_layers) {
    return Status(ErrorCode::kInvalidArgument, "layer",
                  "expected 0 .. " + std::to_string(config_.num_layers - 1) + ", got " +
                      std::to_string(layer));
  }
  const BlockActivations& a = blocks_[layer];
  ATTNKIT_RETURN_IF_ERROR(
      Alloc(weights, batch_.batch * config_.num_heads * batch_.seq_len, batch_.seq_len));
  return AttentionWeightsOf(a.Q(), a.K(), a.V(), batch_.batch, Heads(config_),
                            CausalOptions(config_, pool_), *weights);
}

namespace {

// Columns [head * d, (head + 1) * d) of m [T, heads * d], stacked head-major
// into out [heads * T, d].
Status SplitColumns(ConstMatrixView m, size_t heads, size_t d, Matrix* out) {
  const size_t T = m.rows;
  ATTNKIT_RETURN_IF_ERROR(Alloc(out, heads * T, d));
  for (size_t hh = 0; hh < heads; ++hh) {
    for (size_t t = 0; t < T; ++t) {
      for (size_t k = 0; k < d; ++k) (*out)(hh * T + t, k) = m(t, hh * d + k);
    }
  }
  return Status::Ok();
}

}  // namespace

Status Model::Inspect(const std::vector<int32_t>& tokens, const std::vector<int32_t>* targets,
                      Inspection* out) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("out", out));
  const ModelConfig& c = config_;
  const size_t T = tokens.size();
  if (T == 0 || T > c.max_seq_len) {
    return Status(ErrorCode::kInvalidArgument, "tokens",
                  "expected 1 .. " + std::to_string(c.max_seq_len) +
                      " tokens (one per position of the model), got " + std::to_string(T));
  }
  if (targets && targets->size() != T) {
    return Status(ErrorCode::kShapeMismatch, "targets",
                  "expected " + std::to_string(T) + " entries (one per token), got " +
                      std::to_string(targets->size()));
  }
  Batch batch;
  batch.batch = 1;
  batch.seq_len = T;
  batch.tokens = tokens;
  batch.targets = targets ? *targets : std::vector<int32_t>(T, -1);
  Inspection r;
  r.has_targets = targets != nullptr;
  ATTNKIT_RETURN_IF_ERROR(Forward(batch, &r.metrics, &r.logits));
  const size_t V = c.vocab_size, h = c.num_heads, g = c.num_kv_heads, dk = c.d_k;
  r.predictions.resize(T);
  for (size_t t = 0; t < T; ++t) {
    r.predictions[t] = int32_t(Argmax(r.logits.data() + t * V, V));
  }
  std::vector<Matrix> dz;
  if (targets) {
    Parameters grads;
    ATTNKIT_RETURN_IF_ERROR(Backward(&grads, &dz));
  }
  const AttentionOptions options = CausalOptions(c, pool_);
  r.layers.resize(c.num_layers);
  for (size_t l = 0; l < c.num_layers; ++l) {
    const BlockActivations& lc = blocks_[l];
    LayerInspection& li = r.layers[l];
    li.input = Normed(c, lc.input, lc.norm);
    ATTNKIT_RETURN_IF_ERROR(SplitColumns(lc.Q(), h, dk, &li.Q));
    ATTNKIT_RETURN_IF_ERROR(SplitColumns(lc.K(), g, dk, &li.K));
    ATTNKIT_RETURN_IF_ERROR(SplitColumns(lc.V(), g, dk, &li.V));
    ATTNKIT_RETURN_IF_ERROR(AttentionWeights(l, &li.weights));
    if (!targets) continue;
    Matrix dO;
    ATTNKIT_RETURN_IF_ERROR(SplitColumns(dz[l], h, dk, &dO));
    ATTNKIT_RETURN_IF_ERROR(Alloc(&li.d_scores, h * T, T));
    for (size_t hh = 0; hh < h; ++hh) {
      // Query head hh reads K/V head hh / (h / g), as the multi-head forward.
      const size_t kv = hh / (h / g);
      AttentionBackwardTrace trace;
      ATTNKIT_RETURN_IF_ERROR(TraceAttentionBackwardQKV(
          li.Q.view().Block(hh * T, T, 0, dk), li.K.view().Block(kv * T, T, 0, dk),
          li.V.view().Block(kv * T, T, 0, dk), dO.view().Block(hh * T, T, 0, dk), options, &trace));
      for (size_t t = 0; t < T; ++t) {
        std::copy(trace.d_scores.data() + t * T, trace.d_scores.data() + (t + 1) * T,
                  li.d_scores.data() + (hh * T + t) * T);
      }
    }
  }
  *out = std::move(r);
  return Status::Ok();
}

}  // namespace model
}  // namespace attnkit
