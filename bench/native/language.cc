// attnkit_language_bench: the language model's benchmark, native side (npm run
// bench -- --only language). attnkit's GPT trained by the C++ API on a text
// (Moby-Dick, written by bench/wasm/language.mjs --write-text), one thread.
// bench/language_torch.py drives it as a child process (--serve) so that it
// and PyTorch step in turns, one JSON line per command on stdin:
//   (start)  the settings, the FMA peak, and two files in --out: the initial
//            weights (ExportWeights, docs/model.md) and the validation windows
//            (u32 count, u32 seq_len + 1, then the windows' tokens as i32)
//   step     one training step on the dataset's next batch: its loss, the
//            learning rate it used, the process's CPU ms and the wall ms of
//            the step, and the batch as windows of seq_len + 1 tokens (the
//            peer trains on exactly these)
//   valid    the mean loss over the validation windows (not timed)
//   peak     the FMA peak again (GFLOP/s, one core)
//   generate N  N characters sampled after a prompt through the KV cache
//            (Generator, temperature 0.8): tokens per CPU second
//   quit
// Without --serve it trains alone to 2.0 nats/char or the step cap and prints
// the same per-step figures as one JSON object; with --steps N it trains exactly
// N steps (the validation curve past 2.0). --init NAME --seed N start it from
// one of kInits' initialisations and another model seed (the initialisation
// sweep: bench/wasm/language-sweep.mjs --init-sweep).
// Usage: attnkit_language_bench --text FILE [--serve] [--out DIR] [--preset nanogpt|default]
//          [--quick] [--init NAME] [--seed N] [--steps N] [--set KEY=VALUE]...
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "attnkit/generate.h"
#include "attnkit/model.h"
#include "attnkit/ops.h"
#include "attnkit/random.h"
#include "attnkit/text.h"
#include "bench/native/harness.h"
#include "bench/native/serve.h"

namespace attnkit_bench {
double FmaPeakGflops(size_t iterations);
}  // namespace attnkit_bench

namespace {

using namespace attnkit::model;
using attnkit::Matrix;

// The training settings, one per preset; bench/wasm/language.mjs holds the same.
struct Preset {
  const char* name;
  size_t seq_len, batch, d_model, num_layers, num_heads, d_ff;
  AdamWConfig adam;
  size_t max_steps, quick_steps, eval_every, quick_eval_every;
  bool tied_unembedding = false;
};

// nanoGPT's CPU recipe (config/train_shakespeare_char.py with its CPU
// overrides): 4 layers, 4 heads, d_model 128, context 64, batch 12, lr 1e-3
// with 100 warm-up steps and a cosine to 1e-4 at 2000 steps, beta2 0.99,
// weight decay 0.1, clip 1.
Preset NanoGpt() {
  Preset p{"nanogpt", 64, 12, 128, 4, 4, 512, {}, 2000, 100, 100, 50};
  p.adam.learning_rate = 1e-3f;
  p.adam.beta1 = 0.9f;
  p.adam.beta2 = 0.99f;
  p.adam.epsilon = 1e-8f;
  p.adam.weight_decay = 0.1f;
  p.adam.warmup_steps = 100;
  p.adam.decay_steps = 2000;
  p.adam.min_learning_rate = 1e-4f;
  p.adam.clip_norm = 1.0f;
  return p;
}

// The default preset (docs/language.md "The default configuration", chosen by
// bench/wasm/language-sweep.mjs: the least CPU time to 2.0 with a context of 64,
// then the fewest steps to 2.0 by its optimiser sweep): nanoGPT's recipe with 3
// layers, d_model 96, d_ff 288, a learning rate of 5e-3, cosine to 5e-4 at step
// 1500, and beta1 0.7; validation every 50 steps as the sweep measured it.
Preset Default() {
  Preset p = NanoGpt();
  p.name = "default";
  p.num_layers = 3;
  p.d_model = 96;
  p.d_ff = 288;
  p.eval_every = 50;
  p.adam.learning_rate = 5e-3f;
  p.adam.beta1 = 0.7f;
  p.adam.decay_steps = 1500;
  p.adam.min_learning_rate = 5e-4f;
  return p;
}

constexpr uint64_t kModelSeed = 1, kDataSeed = 1234;

constexpr size_t kValidationWindows = 128, kValidationChunk = 32, kMinSteps = 20;
constexpr float kStopLoss = 2.0f;

// An initialisation the sweep compares: every matrix (W_Q, W_K, W_V, W_O, W_1,
// W_2, the unembedding; stored [fan_in, fan_out]) N(0, matrix_std^2), or by its
// fan-in with matrix_std 0: N(0, 1 / fan_in), or PyTorch's nn.Linear with
// `uniform`: U(-1 / sqrt(fan_in), 1 / sqrt(fan_in)); W_O and W_2 then divided
// by sqrt(2 num_layers) with residual_scaled; the token and position
// embeddings N(0, embedding_std^2); LayerNorm gains 1, biases 0. "library" is
// Model::Init's own (InitParameters; "gpt2" draws what its gpt2_init draws).
struct InitScheme {
  const char* name;
  double matrix_std;
  bool uniform;
  bool residual_scaled;
  double embedding_std;
  // Multipliers on the drawn unembedding and on W_O and W_2 (--set
  // unembedding_scale=, residual_scale=; 0 starts them at zero).
  double unembedding_scale = 1;
  double residual_scale = 1;
};
constexpr InitScheme kInits[] = {
    {"library", 0, false, false, 0},
    {"gpt2", 0.02, false, true, 0.02},  // GPT-2's and nanoGPT's
    {"normal-0.02", 0.02, false, false, 0.02},
    {"torch", 0, true, false, 1},  // PyTorch's defaults (nn.Linear, nn.Embedding N(0, 1))
    {"torch-emb-0.02", 0, true, false, 0.02},
    {"fan-in", 0, false, false, 1},
    {"fan-in-res", 0, false, true, 1},
    {"fan-in-emb-0.3", 0, false, false, 0.3},
    {"fan-in-emb-0.1", 0, false, false, 0.1},
    {"fan-in-emb-0.02", 0, false, false, 0.02},
    {"fan-in-res-emb-0.02", 0, false, true, 0.02},
};

const InitScheme* FindInit(const std::string& name) {
  for (const InitScheme& i : kInits) {
    if (name == i.name) return &i;
  }
  return nullptr;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Draws `init` into the model's parameters from `seed`, each tensor from its
// own stream as InitParameters draws them (the seed stepped through splitmix64
// once per tensor, in the weights file's order).
void Draw(const InitScheme& init, uint64_t seed, Model* model) {
  Parameters& p = model->params();
  const std::vector<Matrix*> tensors = p.Tensors();
  const std::vector<std::string> names = p.Names();
  const double residual = 1 / std::sqrt(2.0 * double(model->config().num_layers));
  uint64_t stream = seed;
  for (size_t i = 0; i < tensors.size(); ++i) {
    Rng rng(SplitMix64(&stream));
    Matrix& m = *tensors[i];
    const std::string& name = names[i];
    if (EndsWith(name, "_gain") || EndsWith(name, "_bias")) {
      std::fill(m.data(), m.data() + m.size(), EndsWith(name, "_gain") ? 1.0f : 0.0f);
      continue;
    }
    const bool embedding = EndsWith(name, "_embedding");
    double scale = embedding             ? init.embedding_std
                   : init.matrix_std > 0 ? init.matrix_std
                                         : 1 / std::sqrt(double(m.rows()));
    if (init.residual_scaled && (EndsWith(name, ".W_O") || EndsWith(name, ".W_2"))) {
      scale *= residual;
    }
    const bool uniform = init.uniform && !embedding;
    for (size_t k = 0; k < m.size(); ++k) {
      m.data()[k] = float(uniform ? (2 * rng.Uniform() - 1) * scale : rng.Normal() * scale);
    }
  }
}

// --set KEY=VALUE: one of the preset's training settings changed (the
// schedule and optimiser sweep): batch, heads, tied, lr, warmup, decay, min_lr, beta1,
// beta2, weight_decay, clip; or the initialisation's unembedding_scale,
// residual_scale (InitScheme).
void Set(const std::string& assignment, Preset* p, InitScheme* init) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos) serve::Fail("--set expects KEY=VALUE, got " + assignment);
  const std::string key = assignment.substr(0, eq);
  const double v = std::strtod(assignment.c_str() + eq + 1, nullptr);
  AdamWConfig& a = p->adam;
  if (key == "batch") {
    p->batch = size_t(v);
  } else if (key == "heads") {
    p->num_heads = size_t(v);
  } else if (key == "tied") {
    p->tied_unembedding = v != 0;
  } else if (key == "lr") {
    a.learning_rate = float(v);
  } else if (key == "warmup") {
    a.warmup_steps = size_t(v);
  } else if (key == "decay") {
    a.decay_steps = size_t(v);
  } else if (key == "min_lr") {
    a.min_learning_rate = float(v);
  } else if (key == "beta1") {
    a.beta1 = float(v);
  } else if (key == "beta2") {
    a.beta2 = float(v);
  } else if (key == "weight_decay") {
    a.weight_decay = float(v);
  } else if (key == "clip") {
    a.clip_norm = float(v);
  } else if (key == "unembedding_scale") {
    init->unembedding_scale = v;
  } else if (key == "residual_scale") {
    init->residual_scale = v;
  } else {
    serve::Fail("--set: unknown key " + key);
  }
}

// The scheme's multipliers on the drawn weights.
void Scale(const InitScheme& init, Model* model) {
  Parameters& p = model->params();
  const std::vector<Matrix*> tensors = p.Tensors();
  const std::vector<std::string> names = p.Names();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string& name = names[i];
    const double f = name == "unembedding"                              ? init.unembedding_scale
                     : EndsWith(name, ".W_O") || EndsWith(name, ".W_2") ? init.residual_scale
                                                                        : 1;
    if (f == 1) continue;
    Matrix& m = *tensors[i];
    for (size_t k = 0; k < m.size(); ++k) m.data()[k] = float(m.data()[k] * f);
  }
}

using harness::CpuMs;

// The FMA peak per CPU second (the engines' times are CPU times too): the
// loop's GFLOP/s per wall second scaled by its wall / CPU time, so that turns
// other processes take on a shared core do not lower it. The best of three.
double PeakGflops() {
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = CpuMs();
    const double gflops = attnkit_bench::FmaPeakGflops(20000000);
    const double cpu = CpuMs() - c0;
    const double wall =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, gflops * wall / cpu);
  }
  return best;
}

using serve::Check;
using serve::Fail;

struct Bench {
  Preset preset;
  bool quick = false;
  const InitScheme* init = &kInits[0];
  InitScheme scaled;  // *init with --set's scales
  uint64_t seed = kModelSeed;
  size_t steps = 0;  // > 0: exactly this many steps (Alone), past 2.0
  Tokenizer tokenizer;
  TextDataset data;
  Model model;
  Parameters grads;
  AdamW adam;
  Batch batch;

  void Init(const std::string& text) {
    Check(tokenizer.Build(text), "tokenizer");
    TextDataConfig dc;
    dc.seq_len = preset.seq_len;
    dc.seed = kDataSeed;
    dc.validation_windows = kValidationWindows;
    Check(data.Init(tokenizer, text, dc), "dataset");
    ModelConfig c;
    c.vocab_size = tokenizer.vocab_size();
    c.max_seq_len = preset.seq_len;
    c.d_model = preset.d_model;
    c.num_layers = preset.num_layers;
    c.num_heads = preset.num_heads;
    c.d_ff = preset.d_ff;
    c.layer_norm = true;
    c.tied_unembedding = preset.tied_unembedding;
    Check(model.Init(c, seed), "model");
    if (std::string(init->name) != "library") Draw(*init, seed, &model);
    Scale(*init, &model);
    model.set_vocabulary(tokenizer.vocabulary());
    Check(adam.Init(preset.adam, model.params()), "adamw");
  }
  size_t max_steps() const {
    return steps > 0 ? steps : quick ? preset.quick_steps : preset.max_steps;
  }
  size_t eval_every() const { return quick ? preset.quick_eval_every : preset.eval_every; }

  // One step on the next batch: loss, learning rate, CPU and wall ms.
  void Step(float* loss, float* lr, double* cpu_ms, double* wall_ms) {
    Check(data.Next(preset.batch, &batch), "batch");
    Metrics m;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = CpuMs();
    Check(TrainStep(batch, &model, &grads, &adam, &m), "step");
    *cpu_ms = CpuMs() - c0;
    *wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    *loss = m.loss;
    *lr = adam.LearningRate(adam.steps());
  }
  // Tokens per CPU second of sampling `count` characters after a prompt.
  double Generate(size_t count) {
    std::vector<int32_t> prompt;
    Check(tokenizer.Encode("Call me Ishmael. ", &prompt), "prompt");
    Generator g;
    GeneratedToken token;
    SampleOptions options;
    options.temperature = 0.8f;
    const double c0 = CpuMs();
    Check(g.Start(model, prompt, 7), "generate");
    for (size_t i = 0; i < count; ++i) Check(g.Next(options, &token), "generate");
    return count / ((CpuMs() - c0) / 1e3);
  }
  float Valid() {
    float loss = 0;
    Check(data.ValidationLoss(&model, kValidationChunk, &loss), "validation");
    return loss;
  }
  // The batch as windows of seq_len + 1 tokens: row b's inputs, then its last target.
  std::string Windows() const {
    const size_t T = batch.seq_len;
    std::string out;
    out.reserve(batch.batch * (T + 1) * 4);
    for (size_t b = 0; b < batch.batch; ++b) {
      const int32_t* x = &batch.tokens[b * T];
      const int32_t* y = &batch.targets[b * T];
      for (size_t t = 0; t + 1 < T; ++t) {
        if (y[t] != x[t + 1]) Fail("a batch's targets are not its inputs shifted by one");
      }
      for (size_t t = 0; t < T; ++t) out += std::to_string(x[t]) + ",";
      out += std::to_string(y[T - 1]);
      if (b + 1 < batch.batch) out += ",";
    }
    return out;
  }
};

void WriteFile(const std::string& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), std::streamsize(size));
  if (!f) Fail("cannot write " + path);
}

void PrintSettings(const Bench& b, double peak, const std::string& weights,
                   const std::string& valid) {
  const AdamWConfig& a = b.preset.adam;
  const ModelConfig& c = b.model.config();
  std::printf(
      "{\"preset\": \"%s\", \"seqLen\": %zu, \"batch\": %zu, \"maxSteps\": %zu, \"minSteps\": %zu, "
      "\"evalEvery\": %zu, \"stopLoss\": %g, \"modelSeed\": %llu, \"dataSeed\": %llu, "
      "\"config\": {\"vocabSize\": %zu, \"maxSeqLen\": %zu, \"dModel\": %zu, \"numLayers\": %zu, "
      "\"numHeads\": %zu, \"dFF\": %zu}, \"parameters\": %zu, "
      "\"adam\": {\"learningRate\": %g, \"beta1\": %g, \"beta2\": %g, \"epsilon\": %g, "
      "\"weightDecay\": %g, \"warmupSteps\": %zu, \"decaySteps\": %zu, \"minLearningRate\": %g, "
      "\"clipNorm\": %g}, \"trainTokens\": %zu, \"validationTokens\": %zu, "
      "\"validationWindows\": %zu, \"target\": \"%s\", \"fmaPeakGflops\": %.6g, "
      "\"weightsFile\": \"%s\", \"validFile\": \"%s\"}\n",
      b.preset.name, b.preset.seq_len, b.preset.batch, b.max_steps(), kMinSteps, b.eval_every(),
      kStopLoss, static_cast<unsigned long long>(kModelSeed),
      static_cast<unsigned long long>(kDataSeed), c.vocab_size, c.max_seq_len, c.d_model,
      c.num_layers, c.num_heads, c.d_ff, b.model.params().Count(), a.learning_rate, a.beta1,
      a.beta2, a.epsilon, a.weight_decay, a.warmup_steps, a.decay_steps, a.min_learning_rate,
      a.clip_norm, b.data.train_tokens(), b.data.validation_tokens(),
      b.data.validation_window_count(), attnkit::targets::Name(attnkit::targets::Current()), peak,
      weights.c_str(), valid.c_str());
  std::fflush(stdout);
}

// The files the peer reads: the initial weights and the validation windows.
void WritePeerFiles(Bench& b, const std::string& dir, std::string* weights, std::string* valid) {
  *weights = dir + "/language-" + b.preset.name + ".weights";
  *valid = dir + "/language-" + b.preset.name + ".valid";
  std::vector<uint8_t> bytes;
  Check(ExportWeights(b.model, &bytes), "export");
  WriteFile(*weights, bytes.data(), bytes.size());
  Batch v;
  const size_t n = b.data.validation_window_count(), T = b.preset.seq_len;
  Check(b.data.ValidationBatch(0, n, &v), "validation windows");
  std::vector<int32_t> words = {int32_t(n), int32_t(T + 1)};
  for (size_t i = 0; i < n; ++i) {
    words.insert(words.end(), v.tokens.begin() + i * T, v.tokens.begin() + (i + 1) * T);
    words.push_back(v.targets[i * T + T - 1]);
  }
  WriteFile(*valid, words.data(), words.size() * sizeof(int32_t));
}

int Serve(Bench& b, const std::string& dir) {
  std::string weights, valid;
  WritePeerFiles(b, dir, &weights, &valid);
  PrintSettings(b, PeakGflops(), weights, valid);
  std::string command;
  while (std::getline(std::cin, command)) {
    if (command == "step") {
      float loss, lr;
      double cpu, wall;
      b.Step(&loss, &lr, &cpu, &wall);
      std::printf(
          "{\"loss\": %.9g, \"lr\": %.9g, \"cpuMs\": %.6g, \"wallMs\": %.6g, "
          "\"windows\": [%s]}\n",
          loss, lr, cpu, wall, b.Windows().c_str());
    } else if (command == "valid") {
      std::printf("{\"loss\": %.9g}\n", b.Valid());
    } else if (command.rfind("generate ", 0) == 0) {
      const size_t n = std::strtoul(command.c_str() + 9, nullptr, 10);
      std::printf("{\"tokens\": %zu, \"tokensPerSecond\": %.6g}\n", n, b.Generate(n));
    } else if (command == "peak") {
      std::printf("{\"gflops\": %.6g}\n", PeakGflops());
    } else if (command == "quit") {
      return 0;
    } else {
      Fail("unknown command " + command);
    }
    std::fflush(stdout);
  }
  return 0;
}

// Alone: to kStopLoss (after kMinSteps) or the step cap.
int Alone(Bench& b) {
  const double peak = PeakGflops();
  const float initial = b.Valid();
  std::vector<double> cpu_ms, wall_ms;
  std::vector<float> losses;
  std::string valid;
  size_t to_22 = 0, to_20 = 0;
  for (size_t step = 1; step <= b.max_steps(); ++step) {
    float loss, lr;
    double cpu, wall;
    b.Step(&loss, &lr, &cpu, &wall);
    losses.push_back(loss);
    cpu_ms.push_back(cpu);
    wall_ms.push_back(wall);
    if (step % b.eval_every() == 0) {
      const float v = b.Valid();
      valid += (valid.empty() ? "" : ", ") + std::string("[") + std::to_string(step) + ", " +
               std::to_string(v) + "]";
      std::fprintf(stderr, "native language step %zu: validation %.4f\n", step, v);
      if (!to_22 && v <= 2.2f) to_22 = step;
      if (!to_20 && v <= kStopLoss) to_20 = step;
      if (to_20 && step >= kMinSteps && b.steps == 0) break;
    }
  }
  const double ms =
      harness::Median({cpu_ms.begin() + std::min<size_t>(20, cpu_ms.size() - 1), cpu_ms.end()});
  double s22 = 0, s20 = 0;
  for (size_t i = 0; i < cpu_ms.size(); ++i) {
    if (i < to_22) s22 += cpu_ms[i] / 1e3;
    if (i < to_20) s20 += cpu_ms[i] / 1e3;
  }
  std::printf(
      "{\"preset\": \"%s\", \"init\": \"%s\", \"seed\": %llu, \"dataSeed\": %llu, "
      "\"trainTokens\": %zu, \"validationTokens\": %zu, \"initialValidation\": %.9g, "
      "\"target\": \"%s\", \"fmaPeakGflops\": %.6g, \"steps\": %zu, "
      "\"cpuMsPerStep\": %.6g, \"tokensPerSecond\": %.6g, \"firstLoss\": %.9g, "
      "\"stepsTo2.2\": %zu, \"secondsTo2.2\": %.6g, \"stepsTo2.0\": %zu, \"secondsTo2.0\": %.6g, "
      "\"validation\": [%s]}\n",
      b.preset.name, b.init->name, static_cast<unsigned long long>(b.seed),
      static_cast<unsigned long long>(kDataSeed), b.data.train_tokens(), b.data.validation_tokens(),
      initial, attnkit::targets::Name(attnkit::targets::Current()), peak, losses.size(), ms,
      b.preset.batch * b.preset.seq_len / ms * 1e3, losses[0], to_22, s22, to_20, s20,
      valid.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string text_path, out = ".", preset_name = "nanogpt", init = "library", seed, steps;
  std::vector<std::string> sets;
  bool serve = false, quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--serve") {
      serve = true;
    } else if (a == "--quick") {
      quick = true;
    } else if ((a == "--text" || a == "--out" || a == "--preset") && i + 1 < argc) {
      (a == "--text" ? text_path : a == "--out" ? out : preset_name) = argv[++i];
    } else if ((a == "--init" || a == "--seed" || a == "--steps") && i + 1 < argc) {
      (a == "--init" ? init : a == "--seed" ? seed : steps) = argv[++i];
    } else if (a == "--set" && i + 1 < argc) {
      sets.push_back(argv[++i]);
    } else {
      Fail("unknown argument " + a);
    }
  }
  if (text_path.empty()) Fail("--text FILE is required");
  std::ifstream f(text_path, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) Fail("cannot read " + text_path);
  Bench b;
  if (preset_name == "nanogpt") {
    b.preset = NanoGpt();
  } else if (preset_name == "default") {
    b.preset = Default();
  } else {
    Fail("unknown preset " + preset_name);
  }
  b.quick = quick;
  b.init = FindInit(init);
  if (!b.init) Fail("unknown --init " + init);
  if (!sets.empty()) {
    b.scaled = *b.init;
    for (const std::string& s : sets) Set(s, &b.preset, &b.scaled);
    b.init = &b.scaled;
  }
  if (!seed.empty()) b.seed = std::strtoull(seed.c_str(), nullptr, 10);
  if (!steps.empty()) b.steps = std::strtoul(steps.c_str(), nullptr, 10);
  b.Init(text.str());
  return serve ? Serve(b, out) : Alone(b);
}
