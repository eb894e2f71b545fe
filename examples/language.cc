// A small GPT trained on a text through the C++ API (docs/language.md), then
// sampled through the KV cache with each head's attention for the new
// character. The text here is a few lines written into the program, so that
// CTest runs it natively and in WebAssembly; examples/language.mjs trains on
// Moby-Dick. Exits 1 if the validation loss does not fall.
#include <cstdio>
#include <string>
#include <vector>

#include "attnkit/generate.h"
#include "attnkit/model.h"
#include "attnkit/text.h"

int main() {
  using namespace attnkit::model;
  std::string text;
  for (int i = 0; i < 40; ++i) {
    text += "the train left the station on time. the whale swam past the ship. ";
  }
  // The tokenizer (token 0 is the unknown character) and the dataset's windows.
  Tokenizer tokenizer;
  TextDataset data;
  TextDataConfig data_config;
  data_config.seq_len = 32;
  data_config.seed = 1;
  attnkit::Status s = tokenizer.Build(text);
  if (s.ok()) s = data.Init(tokenizer, text, data_config);
  // Two GPT blocks: pre-LayerNorm attention and a GELU MLP of width 4 d_model.
  ModelConfig config;
  config.vocab_size = tokenizer.vocab_size();
  config.max_seq_len = 32;
  config.d_model = 32;
  config.num_layers = 2;
  config.num_heads = 4;
  config.d_ff = 128;
  config.layer_norm = true;
  AdamWConfig adam;
  adam.learning_rate = 3e-3f;
  adam.warmup_steps = 20;
  adam.decay_steps = 200;
  adam.min_learning_rate = 3e-4f;
  Trainer trainer;
  if (s.ok()) s = trainer.Init(config, /*seed=*/1, adam);
  if (s.ok()) trainer.model().set_vocabulary(tokenizer.vocabulary());
  float before = 0, after = 0;
  if (s.ok()) s = data.ValidationLoss(&trainer.model(), 16, &before);
  Batch batch;
  Metrics metrics;
  for (int step = 0; s.ok() && step < 200; ++step) {
    s = data.Next(8, &batch);
    if (s.ok()) s = trainer.Step(batch, &metrics);
  }
  if (s.ok()) s = data.ValidationLoss(&trainer.model(), 16, &after);
  if (s.ok()) std::printf("validation loss %.3f -> %.3f nats/char in 200 steps\n", before, after);
  // Sampling: the prompt's keys and values fill each layer's cache once; each
  // new character adds a row.
  std::vector<int32_t> prompt;
  if (s.ok()) s = tokenizer.Encode("the train ", &prompt);
  Generator generator;
  if (s.ok()) s = generator.Start(trainer.model(), prompt, /*seed=*/7);
  std::vector<int32_t> sampled;
  GeneratedToken token;
  SampleOptions options;
  options.temperature = 0.5f;
  for (int i = 0; s.ok() && i < 40; ++i) {
    s = generator.Next(options, &token);
    sampled.push_back(token.token);
  }
  std::string sample;
  if (s.ok()) s = tokenizer.Decode(sampled.data(), sampled.size(), &sample);
  if (s.ok()) {
    std::printf("sample: the train %s\n", sample.c_str());
    // The last character's attention: layer 1, head 0, over the cache.
    const attnkit::Matrix& w = token.weights[1];
    size_t best = 0;
    for (size_t j = 1; j < w.cols(); ++j) best = w(0, j) > w(0, best) ? j : best;
    std::printf("last character, layer 2 head 0: most weight %zu back\n", w.cols() - best);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return after < before - 1.0f ? 0 : 1;
}
