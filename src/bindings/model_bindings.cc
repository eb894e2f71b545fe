// attnkit: Embind bindings of the model layer (src/model), apart from the
// attention bindings. JS holds the addresses of heap-allocated models,
// optimisers and task generators; every call returns a status code (0 = ok)
// or a handle (0 on error) and the JS layer (src/js/model.js) reads the failed
// Status through bindings.cc's lastError*(). Nothing here throws.
#include <emscripten/bind.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "attnkit/checkpoint.h"
#include "attnkit/model.h"
#include "attnkit/tasks.h"
#include "attnkit/text.h"
#include "attnkit/thread_pool.h"
#include "functions.h"
#include "options.h"

namespace attnkit {
namespace bindings {

// The pool that setThreads made (bindings.cc): read at every call, since
// setThreads may replace it between calls.
ThreadPool* CurrentPool();
// Records a call's Status for lastError*() (bindings.cc); returns its code.
int Report(const Status& s);

namespace {

using model::AdamW;
using model::AdamWConfig;
using model::Batch;
using model::Inspection;
using model::Metrics;
using model::Model;
using model::ModelConfig;
using model::Parameters;
using model::TaskConfig;
using model::TaskGenerator;
using model::TaskKind;

uint32_t* Words(uintptr_t address) { return reinterpret_cast<uint32_t*>(address); }
uint64_t Seed(uint32_t lo, uint32_t hi) { return uint64_t(hi) << 32 | lo; }

struct ModelHandle {
  Model model;
  Matrix weights;             // the last attentionWeights
  std::vector<uint8_t> file;  // the last exportWeights
  Inspection inspection;      // the last inspect (until modelInspectClear)
};
struct TrainerHandle {
  AdamW adam;
  Parameters grads;
};
struct GeneratorHandle {
  TaskGenerator generator;
  Batch batch;
};

struct CheckpointHandle {
  model::CheckpointLoader loader;
  std::unique_ptr<uint8_t[]> staging;  // one tensor's bytes, reused and grown
  size_t capacity = 0;
  size_t staged = 0;  // the last staging()'s byte length
};

ModelHandle* AsModel(uintptr_t h) { return reinterpret_cast<ModelHandle*>(h); }
TrainerHandle* AsTrainer(uintptr_t h) { return reinterpret_cast<TrainerHandle*>(h); }
GeneratorHandle* AsGenerator(uintptr_t h) { return reinterpret_cast<GeneratorHandle*>(h); }
CheckpointHandle* AsCheckpoint(uintptr_t h) { return reinterpret_cast<CheckpointHandle*>(h); }

// [kind, length, vocab_size, padding]
TaskConfig ReadTask(const uint32_t* w) {
  TaskConfig t;
  t.kind = static_cast<TaskKind>(w[0]);
  t.length = w[1];
  t.vocab_size = w[2];
  t.padding = w[3];
  return t;
}

// [config (model::kConfigWords), seed lo, seed hi, has task, task (4 words)];
// 0 on error.
uintptr_t ModelCreate(uintptr_t args) {
  const uint32_t* w = Words(args);
  ModelConfig c;
  if (Report(model::ConfigFromWords(w, &c)) != 0) return 0;
  if (Report(model::CheckConfig(c, nullptr)) != 0) return 0;
  w += model::kConfigWords;
  if (w[2]) {
    // Named as the JS caller's task fields ("task.vocab_size"); the model's
    // positions stay "max_seq_len".
    Status s = model::CheckTask(ReadTask(w + 3), &c);
    if (!s.ok() && s.parameter() != "max_seq_len")
      s = Status(s.code(), "task." + s.parameter(), s.detail());
    if (Report(s) != 0) return 0;
  }
  auto h = std::make_unique<ModelHandle>();
  if (Report(h->model.Init(c, Seed(w[0], w[1]))) != 0) return 0;
  return reinterpret_cast<uintptr_t>(h.release());
}
// The weights file at [data, data + size); 0 on error.
// A vocabulary, when the file has one, must be a tokenizer's (text.h).
uintptr_t ModelImport(uintptr_t data, uint32_t size) {
  auto h = std::make_unique<ModelHandle>();
  if (Report(model::ImportWeights(reinterpret_cast<const uint8_t*>(data), size, &h->model)) != 0)
    return 0;
  if (!h->model.vocabulary().empty()) {
    model::Tokenizer tokenizer;
    if (Report(tokenizer.FromVocabulary(h->model.vocabulary(), "weights")) != 0) return 0;
  }
  return reinterpret_cast<uintptr_t>(h.release());
}
// Gives the model a tokenizer's vocabulary ([address, count] code points),
// count == vocab_size.
int ModelSetVocabulary(uintptr_t h, uintptr_t data, uint32_t count) {
  Model& m = AsModel(h)->model;
  const uint32_t* p = reinterpret_cast<const uint32_t*>(data);
  std::vector<uint32_t> vocabulary(p, p + count);
  model::Tokenizer tokenizer;
  if (Report(tokenizer.FromVocabulary(vocabulary)) != 0) return 1;
  if (count != m.config().vocab_size) {
    return Report(Status(ErrorCode::kShapeMismatch, "vocabulary",
                         "expected " + std::to_string(m.config().vocab_size) +
                             " characters (config.vocabSize), got " + std::to_string(count)));
  }
  m.set_vocabulary(std::move(vocabulary));
  return 0;
}
// Writes [address, count] of the model's vocabulary (count 0: none).
void ModelVocabulary(uintptr_t h, uintptr_t out) {
  const std::vector<uint32_t>& v = AsModel(h)->model.vocabulary();
  Words(out)[0] = reinterpret_cast<uintptr_t>(v.data());
  Words(out)[1] = v.size();
}
void ModelFree(uintptr_t h) { delete AsModel(h); }
uint32_t ModelTrainedSteps(uintptr_t h) { return AsModel(h)->model.trained_steps(); }
// Writes the resolved config (model::ConfigToWords) and the parameter count.
void ModelInfo(uintptr_t h, uintptr_t out) {
  const Model& m = AsModel(h)->model;
  const ModelConfig& c = m.config();
  uint32_t* o = Words(out);
  model::ConfigToWords(c, o);
  o[model::kConfigWords] = m.params().Count();
}
// Writes [address, size] of the exported file (held until the next export).
int ModelExport(uintptr_t h, uintptr_t out) {
  ModelHandle* m = AsModel(h);
  if (Report(model::ExportWeights(m->model, &m->file)) != 0) return 1;
  Words(out)[0] = reinterpret_cast<uintptr_t>(m->file.data());
  Words(out)[1] = m->file.size();
  return 0;
}

// ---- Checkpoints: a model filled tensor by tensor (model::CheckpointLoader) ----

// [config (model::kConfigWords)]; 0 on error.
uintptr_t CheckpointCreate(uintptr_t args) {
  ModelConfig c;
  if (Report(model::ConfigFromWords(Words(args), &c)) != 0) return 0;
  auto h = std::make_unique<CheckpointHandle>();
  if (Report(h->loader.Init(c)) != 0) return 0;
  return reinterpret_cast<uintptr_t>(h.release());
}
// The address of `bytes` bytes for one tensor (held until the next call);
// 0 on error. Grown without copying: the old bytes are not kept.
uintptr_t CheckpointStaging(uintptr_t h, uint32_t bytes) {
  CheckpointHandle* c = AsCheckpoint(h);
  if (bytes > c->capacity || !c->staging) {
    c->staging.reset();
    c->capacity = 0;
    c->staging.reset(new (std::nothrow) uint8_t[bytes ? bytes : 1]);
    if (!c->staging) {
      Report(Status(
          ErrorCode::kOverflow, "byteLength",
          "expected a size that fits in wasm memory, got " + std::to_string(bytes) + " bytes"));
      return 0;
    }
    c->capacity = bytes;
  }
  c->staged = bytes;
  return reinterpret_cast<uintptr_t>(c->staging.get());
}
// [dtype (model::DType), staged byte length, first value, ndim, dims...]:
// the staged bytes as values first, first + 1, ... of tensor `name`
// (CheckpointLoader::LoadPart), which they must fill with whole values.
int CheckpointLoad(uintptr_t h, std::string name, uintptr_t args) {
  CheckpointHandle* c = AsCheckpoint(h);
  const uint32_t* w = Words(args);
  const model::DType dtype = static_cast<model::DType>(w[0]);
  const std::vector<size_t> shape(w + 4, w + 4 + w[3]);
  const size_t bytes = model::DTypeBytes(dtype);
  if (!c->staging || w[1] != c->staged || c->staged % bytes != 0) {
    return Report(Status(ErrorCode::kShapeMismatch, name,
                         std::string("expected staged bytes holding whole values (") +
                             std::to_string(bytes) + " bytes each, " + model::DTypeName(dtype) +
                             "), got " + std::to_string(c->staging ? w[1] : 0) + " staged"));
  }
  return Report(c->loader.LoadPart(name, dtype, shape, w[2], c->staged / bytes, c->staging.get()));
}
// The filled model's handle (as ModelCreate's); 0 on error. The loader is
// freed by CheckpointFree either way.
uintptr_t CheckpointFinish(uintptr_t h) {
  auto m = std::make_unique<ModelHandle>();
  if (Report(AsCheckpoint(h)->loader.Finish(&m->model)) != 0) return 0;
  return reinterpret_cast<uintptr_t>(m.release());
}
void CheckpointFree(uintptr_t h) { delete AsCheckpoint(h); }

// [batch, seq_len, tokens address, count, targets address, count] (int32);
// Forward checks the counts against batch * seq_len.
constexpr size_t kBatchWords = 6;
Batch ReadBatch(const uint32_t* w) {
  Batch b;
  b.batch = w[0];
  b.seq_len = w[1];
  const int32_t* tokens = reinterpret_cast<const int32_t*>(w[2]);
  const int32_t* targets = reinterpret_cast<const int32_t*>(w[4]);
  b.tokens.assign(tokens, tokens + w[3]);
  b.targets.assign(targets, targets + w[5]);
  return b;
}
// [loss (f32), scored, correct, sequences, sequences_correct]
void WriteMetrics(const Metrics& m, uint32_t* o) {
  std::memcpy(o, &m.loss, sizeof(float));
  o[1] = m.scored;
  o[2] = m.correct;
  o[3] = m.sequences;
  o[4] = m.sequences_correct;
}
// batch (kBatchWords), metrics out (5 words)
int ModelForward(uintptr_t h, uintptr_t args) {
  const uint32_t* w = Words(args);
  Model& m = AsModel(h)->model;
  m.set_pool(CurrentPool());
  Metrics metrics;
  if (Report(m.Forward(ReadBatch(w), &metrics)) != 0) return 1;
  WriteMetrics(metrics, Words(args) + kBatchWords);
  return 0;
}
// Writes [address, rows, cols] of the layer's attention weights (held until
// the next call).
int ModelAttention(uintptr_t h, uint32_t layer, uintptr_t out) {
  ModelHandle* m = AsModel(h);
  if (Report(m->model.AttentionWeights(layer, &m->weights)) != 0) return 1;
  uint32_t* o = Words(out);
  o[0] = reinterpret_cast<uintptr_t>(m->weights.data());
  o[1] = m->weights.rows();
  o[2] = m->weights.cols();
  return 0;
}

// [address, rows, cols] of m (address 0 if empty).
void WriteMatrix(const Matrix& m, uint32_t* o) {
  o[0] = m.size() ? reinterpret_cast<uintptr_t>(m.data()) : 0;
  o[1] = m.rows();
  o[2] = m.cols();
}

// The parameter tensors' names in Parameters::Tensors() order, comma-separated
// ("token_embedding,position_embedding,layers.0.W_Q,...").
std::string ModelTensorNames(uintptr_t h) {
  std::string out;
  for (const std::string& name : AsModel(h)->model.params().Names()) {
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}
// Writes [address, rows, cols] of tensor `index` (Tensors() order).
void ModelTensor(uintptr_t h, uint32_t index, uintptr_t out) {
  WriteMatrix(*AsModel(h)->model.params().Tensors()[index], Words(out));
}

// [T, tokens address, targets address (0 = none)] (int32) -> status; writes
// after them [logits address, rows, cols, predictions address, loss (f32),
// scored, correct]. The results are held until modelInspectClear.
int ModelInspect(uintptr_t h, uintptr_t args) {
  ModelHandle* m = AsModel(h);
  uint32_t* w = Words(args);
  const int32_t* tokens = reinterpret_cast<const int32_t*>(w[1]);
  const int32_t* targets = reinterpret_cast<const int32_t*>(w[2]);
  const std::vector<int32_t> token_list(tokens, tokens + w[0]);
  std::vector<int32_t> target_list;
  if (targets) target_list.assign(targets, targets + w[0]);
  m->model.set_pool(CurrentPool());
  if (Report(m->model.Inspect(token_list, targets ? &target_list : nullptr, &m->inspection)) != 0)
    return 1;
  const Inspection& in = m->inspection;
  uint32_t* o = w + 3;
  WriteMatrix(in.logits, o);
  o[3] = reinterpret_cast<uintptr_t>(in.predictions.data());
  std::memcpy(o + 4, &in.metrics.loss, sizeof(float));
  o[5] = in.metrics.scored;
  o[6] = in.metrics.correct;
  return 0;
}
// Writes [address, rows, cols] of layer `layer`'s input, Q, K, V, weights and
// d_scores (18 words) from the last inspect.
void ModelInspectLayer(uintptr_t h, uint32_t layer, uintptr_t out) {
  const model::LayerInspection& l = AsModel(h)->inspection.layers[layer];
  uint32_t* o = Words(out);
  for (const Matrix* m : {&l.input, &l.Q, &l.K, &l.V, &l.weights, &l.d_scores}) {
    WriteMatrix(*m, o);
    o += 3;
  }
}
void ModelInspectClear(uintptr_t h) { AsModel(h)->inspection = Inspection(); }

// The trainer's options, one word each, in the order of TRAINER_OPTIONS in
// src/js/options.js (tests/js/option-layout.test.js compares them).
constexpr WordOption<AdamWConfig> kTrainerOptions[] = {
    {"learning_rate", &AdamWConfig::learning_rate, nullptr},
    {"beta1", &AdamWConfig::beta1, nullptr},
    {"beta2", &AdamWConfig::beta2, nullptr},
    {"epsilon", &AdamWConfig::epsilon, nullptr},
    {"weight_decay", &AdamWConfig::weight_decay, nullptr},
    {"warmup_steps", nullptr, &AdamWConfig::warmup_steps},
    {"clip_norm", &AdamWConfig::clip_norm, nullptr},
    {"decay_steps", nullptr, &AdamWConfig::decay_steps},
    {"min_learning_rate", &AdamWConfig::min_learning_rate, nullptr},
};

// The options (kTrainerOptions); 0 on error.
uintptr_t TrainerCreate(uintptr_t model, uintptr_t args) {
  const AdamWConfig c = ReadWordOptions(kTrainerOptions, Words(args));
  auto t = std::make_unique<TrainerHandle>();
  if (Report(t->adam.Init(c, AsModel(model)->model.params())) != 0) return 0;
  return reinterpret_cast<uintptr_t>(t.release());
}
void TrainerFree(uintptr_t h) { delete AsTrainer(h); }
uint32_t TrainerSteps(uintptr_t h) { return AsTrainer(h)->adam.steps(); }
float TrainerLearningRate(uintptr_t h, uint32_t step) {
  return AsTrainer(h)->adam.LearningRate(step);
}
// model::TrainStep: forward, backward, one AdamW update.
// batch (kBatchWords), metrics out (5 words)
int TrainerStep(uintptr_t h, uintptr_t model, uintptr_t args) {
  TrainerHandle* t = AsTrainer(h);
  Model& m = AsModel(model)->model;
  m.set_pool(CurrentPool());
  Metrics metrics;
  const int code =
      Report(model::TrainStep(ReadBatch(Words(args)), &m, &t->grads, &t->adam, &metrics));
  if (code == 0) WriteMetrics(metrics, Words(args) + kBatchWords);
  return code;
}

// task (4 words), seed lo, seed hi; 0 on error.
uintptr_t GeneratorCreate(uintptr_t args) {
  const uint32_t* w = Words(args);
  auto g = std::make_unique<GeneratorHandle>();
  if (Report(g->generator.Init(ReadTask(w), Seed(w[4], w[5]))) != 0) return 0;
  return reinterpret_cast<uintptr_t>(g.release());
}
void GeneratorFree(uintptr_t h) { delete AsGenerator(h); }
// Writes [tokens address, targets address, seq_len] of the next batch (held
// until the next call).
int GeneratorNext(uintptr_t h, uint32_t batch, uintptr_t out) {
  GeneratorHandle* g = AsGenerator(h);
  if (Report(g->generator.Next(batch, &g->batch)) != 0) return 1;
  uint32_t* o = Words(out);
  o[0] = reinterpret_cast<uintptr_t>(g->batch.tokens.data());
  o[1] = reinterpret_cast<uintptr_t>(g->batch.targets.data());
  o[2] = g->batch.seq_len;
  return 0;
}
// task (4 words) -> status; writes [seq_len, min_vocab] after the task.
int TaskInfo(uintptr_t args) {
  uint32_t* w = Words(args);
  TaskConfig t = ReadTask(w);
  // The sizes alone: the vocabulary is checked against the result.
  const size_t vocab = t.vocab_size;
  t.vocab_size = 1u << 24;
  if (Report(model::CheckTask(t, nullptr)) != 0) return 1;
  t.vocab_size = vocab;
  w[4] = model::TaskSeqLen(t);
  w[5] = model::TaskMinVocab(t);
  return 0;
}

}  // namespace

model::Model* ModelOf(uintptr_t handle) { return &AsModel(handle)->model; }

void RegisterTrainerOptions() {
  RegisterOptions("trainer", WordOptionNames(kTrainerOptions), WordOptionDefaults(kTrainerOptions));
}

}  // namespace bindings
}  // namespace attnkit

EMSCRIPTEN_BINDINGS(attnkit_model) {
  using namespace attnkit::bindings;
  ATTNKIT_FUNCTIONS(
      ModelCreate, ModelImport, ModelFree, ModelSetVocabulary, ModelVocabulary, ModelInfo,
      ModelTrainedSteps, ModelExport, ModelForward, ModelAttention, ModelTensorNames, ModelTensor,
      ModelInspect, ModelInspectLayer, ModelInspectClear, TrainerCreate, TrainerFree, TrainerSteps,
      TrainerLearningRate, TrainerStep, GeneratorCreate, GeneratorFree, GeneratorNext, TaskInfo,
      CheckpointCreate, CheckpointStaging, CheckpointLoad, CheckpointFinish, CheckpointFree);
  RegisterTrainerOptions();
}
