// AdamW, the trainer and the weights file.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "attnkit/model.h"
#include "src/core/internal.h"
#include "src/core/validate.h"
#include "src/model/blocks.h"
#include "src/model/kernels.h"

namespace attnkit {
namespace model {
namespace {

bool Decays(const std::string& name) {
  return name.find(".W_") != std::string::npos || name == "unembedding";
}

bool FiniteIn(float v, float lo, float hi) { return std::isfinite(v) && v >= lo && v <= hi; }

}  // namespace

Status CheckAdamWConfig(const AdamWConfig& c) {
  if (!(std::isfinite(c.learning_rate) && c.learning_rate > 0)) {
    return Status(ErrorCode::kInvalidArgument, "learning_rate",
                  "expected a finite value > 0, got " + std::to_string(c.learning_rate));
  }
  if (!FiniteIn(c.beta1, 0, 1) || c.beta1 >= 1) {
    return Status(ErrorCode::kInvalidArgument, "beta1",
                  "expected 0 <= beta1 < 1, got " + std::to_string(c.beta1));
  }
  if (!FiniteIn(c.beta2, 0, 1) || c.beta2 >= 1) {
    return Status(ErrorCode::kInvalidArgument, "beta2",
                  "expected 0 <= beta2 < 1, got " + std::to_string(c.beta2));
  }
  if (!(std::isfinite(c.epsilon) && c.epsilon > 0)) {
    return Status(ErrorCode::kInvalidArgument, "epsilon",
                  "expected a finite value > 0, got " + std::to_string(c.epsilon));
  }
  if (!(std::isfinite(c.weight_decay) && c.weight_decay >= 0)) {
    return Status(ErrorCode::kInvalidArgument, "weight_decay",
                  "expected a finite value >= 0, got " + std::to_string(c.weight_decay));
  }
  if (c.decay_steps != 0 && c.decay_steps <= c.warmup_steps) {
    return Status(ErrorCode::kInvalidArgument, "decay_steps",
                  "expected 0 (no decay) or more than warmup_steps " +
                      std::to_string(c.warmup_steps) + ", got " + std::to_string(c.decay_steps));
  }
  if (!(std::isfinite(c.min_learning_rate) && c.min_learning_rate >= 0 &&
        c.min_learning_rate <= c.learning_rate)) {
    return Status(ErrorCode::kInvalidArgument, "min_learning_rate",
                  "expected 0 .. learning_rate " + std::to_string(c.learning_rate) + ", got " +
                      std::to_string(c.min_learning_rate));
  }
  if (!(std::isfinite(c.clip_norm) && c.clip_norm >= 0)) {
    return Status(ErrorCode::kInvalidArgument, "clip_norm",
                  "expected a finite value >= 0 (0 = off), got " + std::to_string(c.clip_norm));
  }
  return Status::Ok();
}

Status AdamW::Init(const AdamWConfig& config, const Parameters& like) {
  ATTNKIT_RETURN_IF_ERROR(CheckAdamWConfig(config));
  config_ = config;
  m_ = like;
  v_ = like;
  for (Matrix* t : m_.Tensors()) std::memset(t->data(), 0, t->size() * sizeof(float));
  for (Matrix* t : v_.Tensors()) std::memset(t->data(), 0, t->size() * sizeof(float));
  step_ = 0;
  beta1_power_ = beta2_power_ = 1;
  return Status::Ok();
}

float AdamW::LearningRate(size_t step) const {
  const AdamWConfig& c = config_;
  if (step < c.warmup_steps) {
    return float(double(c.learning_rate) * double(step) / double(c.warmup_steps));
  }
  if (c.decay_steps == 0) return c.learning_rate;
  // The cosine from learning_rate (at the end of warm-up) to min_learning_rate
  // (at decay_steps), then flat.
  const double progress =
      std::min(1.0, double(step - c.warmup_steps) / double(c.decay_steps - c.warmup_steps));
  const double cosine = 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));
  return float(double(c.min_learning_rate) +
               (double(c.learning_rate) - double(c.min_learning_rate)) * cosine);
}

Status AdamW::Step(const Parameters& grads, Parameters* params, ThreadPool* pool) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("params", params));
  std::vector<Matrix*> p = params->Tensors(), m = m_.Tensors(), v = v_.Tensors();
  std::vector<const Matrix*> g = grads.Tensors();
  const std::vector<std::string> names = params->Names();
  if (g.size() != p.size() || m.size() != p.size()) {
    return Status(ErrorCode::kShapeMismatch, "grads", "tensors differ from the parameters'");
  }
  for (size_t i = 0; i < p.size(); ++i) {
    if (g[i]->rows() != p[i]->rows() || g[i]->cols() != p[i]->cols() ||
        m[i]->size() != p[i]->size()) {
      return Status(ErrorCode::kShapeMismatch, "grads", names[i] + " has another shape");
    }
  }
  // The gradient's squared norm: each tensor's sum of squares (a task each),
  // added in the tensors' order.
  std::vector<double> squares(p.size());
  internal::ParallelFor(pool, p.size(), [&](size_t i, size_t) {
    squares[i] = kernels::SumOfSquares(g[i]->data(), g[i]->size());
  });
  double norm2 = 0;
  for (const double s : squares) norm2 += s;
  if (!std::isfinite(norm2)) {
    return Status(ErrorCode::kNonFinite, "grads", "the gradient is not finite");
  }
  double clip = 1;
  const double norm = std::sqrt(norm2);
  if (config_.clip_norm > 0 && norm > config_.clip_norm) clip = config_.clip_norm / norm;
  ++step_;
  beta1_power_ *= config_.beta1;
  beta2_power_ *= config_.beta2;
  const double lr = LearningRate(step_);
  kernels::AdamWStep update;
  update.clip = float(clip);
  update.beta1 = config_.beta1;
  update.beta2 = config_.beta2;
  update.c1 = float(1.0 / (1.0 - beta1_power_));
  update.c2 = float(1.0 / (1.0 - beta2_power_));
  update.lr = float(lr);
  update.epsilon = config_.epsilon;
  // The update goes element by element: pieces of the tensors, a few per
  // thread (one per tensor on one thread), give the same result.
  struct Piece {
    size_t tensor, begin, end;
  };
  const size_t threads = pool ? pool->num_threads() : 1;
  size_t total = 0;
  for (const Matrix* t : p) total += t->size();
  const size_t piece =
      threads > 1 ? std::max<size_t>(4096, total / (threads * internal::kTasksPerThread)) : total;
  std::vector<Piece> pieces;
  for (size_t i = 0; i < p.size(); ++i) {
    for (size_t b = 0; b < p[i]->size(); b += piece) {
      pieces.push_back({i, b, std::min(p[i]->size(), b + piece)});
    }
  }
  internal::ParallelFor(pool, pieces.size(), [&](size_t k, size_t) {
    const Piece& q = pieces[k];
    kernels::AdamWStep u = update;
    u.decay = Decays(names[q.tensor]) ? float(lr * config_.weight_decay) : 0.0f;
    kernels::AdamWUpdate(u, g[q.tensor]->data() + q.begin, p[q.tensor]->data() + q.begin,
                         m[q.tensor]->data() + q.begin, v[q.tensor]->data() + q.begin,
                         q.end - q.begin);
  });
  return Status::Ok();
}

Status Trainer::Init(const ModelConfig& config, uint64_t seed, const AdamWConfig& optimizer) {
  ATTNKIT_RETURN_IF_ERROR(CheckAdamWConfig(optimizer));
  ATTNKIT_RETURN_IF_ERROR(model_.Init(config, seed));
  ATTNKIT_RETURN_IF_ERROR(grads_.Allocate(model_.config()));
  return adam_.Init(optimizer, model_.params());
}

Status TrainStep(const Batch& batch, Model* model, Parameters* grads, AdamW* adam,
                 Metrics* metrics) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("model", model));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("grads", grads));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("adam", adam));
  ATTNKIT_RETURN_IF_ERROR(model->Forward(batch, metrics));
  ATTNKIT_RETURN_IF_ERROR(model->Backward(grads));
  ATTNKIT_RETURN_IF_ERROR(
      adam->Step(*grads, &model->params(),
                 RowsPool(model->config(), batch.batch * batch.seq_len, model->pool())));
  model->set_trained_steps(model->trained_steps() + 1);
  return Status::Ok();
}

Status Trainer::Step(const Batch& batch, Metrics* metrics) {
  return TrainStep(batch, &model_, &grads_, &adam_, metrics);
}

// ---- The weights file ----

namespace {

constexpr char kMagic[8] = {'A', 'T', 'K', 'M', 'O', 'D', 'E', 'L'};
// Version 1's config had no d_ff: the words of kConfigSizes but the last, then
// the flags; versions 2 and 3 had every size and the flags, no floats.
constexpr size_t kConfigWordsV1 = kConfigSizeWords;
constexpr size_t kConfigWordsV3 = kConfigSizeWords + 1;

uint32_t Fnv1a(const uint8_t* data, size_t size) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  return h;
}

// Writes v little-endian at *at and moves *at past it.
void PutU32(uint8_t** at, uint32_t v) {
  for (int i = 0; i < 4; ++i) *(*at)++ = uint8_t(v >> (8 * i));
}

uint32_t GetU32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

Status Bad(const std::string& detail) {
  return Status(ErrorCode::kInvalidArgument, "weights", detail);
}

}  // namespace

void ConfigToWords(const ModelConfig& c, uint32_t words[kConfigWords]) {
  size_t i = 0;
  for (size_t ModelConfig::*size : kConfigSizes) words[i++] = uint32_t(c.*size);
  uint32_t flags = 0;
  for (size_t f = 0; f < kConfigFlagCount; ++f) flags |= (c.*kConfigFlags[f] ? 1u : 0u) << f;
  words[i++] = flags;
  for (float ModelConfig::*value : kConfigFloats) std::memcpy(&words[i++], &(c.*value), 4);
}

Status ConfigFromWords(const uint32_t words[kConfigWords], ModelConfig* c) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("words", words));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("config", c));
  size_t i = 0;
  for (size_t ModelConfig::*size : kConfigSizes) c->*size = words[i++];
  const uint32_t flags = words[i++];
  const uint32_t all = (1u << kConfigFlagCount) - 1;
  if (flags & ~all) {
    return Status(ErrorCode::kInvalidArgument, "words",
                  "expected flags 0 .. " + std::to_string(all) + " in word " +
                      std::to_string(kConfigSizeWords) + ", got " + std::to_string(flags));
  }
  for (size_t f = 0; f < kConfigFlagCount; ++f) c->*kConfigFlags[f] = (flags >> f) & 1u;
  for (float ModelConfig::*value : kConfigFloats) std::memcpy(&(c->*value), &words[i++], 4);
  return Status::Ok();
}

Status ExportWeights(const Model& model, std::vector<uint8_t>* bytes) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("bytes", bytes));
  const ModelConfig& c = model.config();
  const Parameters& p = model.params();
  if (p.layers.empty()) return Status(ErrorCode::kInvalidArgument, "model", "not initialised");
  const std::vector<uint32_t>& vocabulary = model.vocabulary();
  const size_t count = p.Count();
  // The file's size is known up front: sized once, then written in place (a
  // vector grown byte by byte after clear() misleads g++'s bounds warnings).
  // Words: version, config, vocabulary size and entries, trained steps,
  // parameter count, parameters, hash.
  const size_t words_total = 1 + kConfigWords + 1 + vocabulary.size() + 1 + 1 + count + 1;
  bytes->assign(8 + 4 * words_total, 0);
  uint8_t* at = bytes->data();
  std::memcpy(at, kMagic, 8);
  at += 8;
  PutU32(&at, kWeightsVersion);
  uint32_t words[kConfigWords];
  ConfigToWords(c, words);
  for (uint32_t w : words) PutU32(&at, w);
  PutU32(&at, uint32_t(vocabulary.size()));
  for (uint32_t v : vocabulary) PutU32(&at, v);
  PutU32(&at, model.trained_steps());
  PutU32(&at, uint32_t(count));
  for (const Matrix* t : p.Tensors()) {
    for (size_t k = 0; k < t->size(); ++k) {
      uint32_t u;
      std::memcpy(&u, t->data() + k, 4);
      PutU32(&at, u);
    }
  }
  PutU32(&at, Fnv1a(bytes->data(), bytes->size() - 4));
  return Status::Ok();
}

Status ImportWeights(const uint8_t* data, size_t size, Model* model) {
  if (size != 0) ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("data", data));
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("model", model));
  // The shortest file: magic, version, a version 1 config, parameter count, hash.
  const size_t shortest = 8 + 4 * (1 + kConfigWordsV1 + 1 + 1);
  if (size < shortest) {
    return Bad("truncated: " + std::to_string(size) + " bytes, shorter than the " +
               std::to_string(shortest) + "-byte header and hash");
  }
  if (std::memcmp(data, kMagic, 8) != 0) return Bad("not a weights file (magic is not ATKMODEL)");
  const uint32_t version = GetU32(data + 8);
  if (version < 1 || version > kWeightsVersion) {
    return Bad("version " + std::to_string(version) + " is not supported (expected 1 .. " +
               std::to_string(kWeightsVersion) + ")");
  }
  // The reads below stay inside [data, data + size - 4), before the hash.
  const uint8_t* at = data + 12;
  const uint8_t* const end = data + size - 4;
  auto words_left = [&] { return size_t(end - at) / 4; };
  // Older files' configs: the words they lack are the defaults'.
  uint32_t words[kConfigWords];
  ConfigToWords(ModelConfig(), words);
  const size_t config_words = version == 1   ? kConfigWordsV1
                              : version <= 3 ? kConfigWordsV3
                                             : kConfigWords;
  if (words_left() < config_words + 1) return Bad("truncated: the config is cut short");
  for (size_t i = 0; i < config_words; ++i, at += 4) words[i] = GetU32(at);
  if (version == 1) {
    words[kConfigSizeWords] = words[kConfigWordsV1 - 1];  // the flags
    words[kConfigSizeWords - 1] = 0;                      // d_ff
  }
  ModelConfig c;
  const Status flags = ConfigFromWords(words, &c);
  if (!flags.ok()) return Bad(flags.detail());
  const Status config_status = CheckConfig(c, nullptr);
  if (!config_status.ok()) return Bad("bad config: " + config_status.message());
  if (c.num_kv_heads == 0 || c.d_k == 0) return Bad("bad config: num_kv_heads and d_k must be set");
  std::vector<uint32_t> vocabulary;
  if (version >= 2) {
    const uint32_t length = GetU32(at);
    at += 4;
    if (length != 0 && length != c.vocab_size) {
      return Bad("vocabulary length " + std::to_string(length) + " is neither 0 nor vocab_size " +
                 std::to_string(c.vocab_size));
    }
    if (words_left() < size_t(length) + 1) {
      return Bad("truncated: " + std::to_string(size) + " bytes, the vocabulary is cut short");
    }
    vocabulary.resize(length);
    for (uint32_t& v : vocabulary) {
      v = GetU32(at);
      at += 4;
    }
  }
  uint32_t trained_steps = 0;
  if (version >= 3) {
    if (words_left() < 2) return Bad("truncated: the trained steps are cut short");
    trained_steps = GetU32(at);
    at += 4;
  }
  const uint32_t stored_count = GetU32(at);
  at += 4;
  // Filled in place, moved into *model once every check has passed.
  Model loaded;
  ATTNKIT_RETURN_IF_ERROR(loaded.Allocate(c));
  Parameters& p = loaded.params();
  const size_t count = p.Count();
  if (stored_count != count) {
    return Bad("parameter count " + std::to_string(stored_count) + " does not match the config's " +
               std::to_string(count));
  }
  const size_t expected = size_t(at - data) + 4 * count + 4;
  if (size != expected) {
    return Bad((size < expected ? "truncated: " : "trailing bytes: ") + std::to_string(size) +
               " bytes, expected " + std::to_string(expected));
  }
  if (Fnv1a(data, size - 4) != GetU32(data + size - 4)) {
    return Bad("hash mismatch: the file is corrupted");
  }
  const std::vector<std::string> names = p.Names();
  const std::vector<Matrix*> tensors = p.Tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (size_t k = 0; k < tensors[i]->size(); ++k, at += 4) {
      const uint32_t u = GetU32(at);
      float v;
      std::memcpy(&v, &u, 4);
      if (!std::isfinite(v)) return Bad(names[i] + " holds a non-finite value");
      tensors[i]->data()[k] = v;
    }
  }
  loaded.set_vocabulary(std::move(vocabulary));
  loaded.set_trained_steps(trained_steps);
  loaded.set_pool(model->pool());
  *model = std::move(loaded);
  return Status::Ok();
}

}  // namespace model
}  // namespace attnkit
