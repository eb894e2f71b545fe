// Prints the loss of each of the first N training steps (argument 1, default
// 50), one per line, for tests/js/model.test.js and tests/js/language.test.js
// to compare the npm package's loss curves with these native ones:
//   model_losses [N]             induction with the settings of docs/model.md
//                                (model seed 1, data seed 1234, batches of 32)
//   model_losses N --text FILE   a small GPT on the characters of FILE (the
//                                settings of tests/js/language.test.js's
//                                native comparison: 2 layers, 4 heads,
//                                d_model 32, d_ff 64, context 32, batches of
//                                8, model seed 1, data seed 7)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "attnkit/model.h"
#include "attnkit/tasks.h"
#include "attnkit/text.h"

namespace {

int Fail(const attnkit::Status& s) {
  std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attnkit::model;
  const int steps = argc > 1 ? std::atoi(argv[1]) : 50;
  const char* text_file = argc > 3 && std::strcmp(argv[2], "--text") == 0 ? argv[3] : nullptr;
  ModelConfig config;
  AdamWConfig adam;
  Trainer trainer;
  TaskGenerator generator;
  TextDataset dataset;
  size_t batch_size = 32;
  attnkit::Status s;
  if (text_file) {
    std::ifstream in(text_file, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Tokenizer tokenizer;
    s = tokenizer.Build(text);
    TextDataConfig data;
    data.seq_len = 32;
    data.seed = 7;
    if (s.ok()) s = dataset.Init(tokenizer, text, data);
    config.vocab_size = tokenizer.vocab_size();
    config.max_seq_len = 32;
    config.d_model = 32;
    config.num_layers = 2;
    config.num_heads = 4;
    config.d_ff = 64;
    config.layer_norm = true;
    adam.learning_rate = 3e-3f;
    adam.warmup_steps = 10;
    batch_size = 8;
  } else {
    TaskConfig task;
    task.kind = TaskKind::kInduction;
    task.length = 8;
    task.padding = 8;
    task.vocab_size = 24;
    config.vocab_size = task.vocab_size;
    config.max_seq_len = TaskSeqLen(task);
    config.d_model = 32;
    config.num_layers = 2;
    config.num_heads = 2;
    adam.learning_rate = 1e-2f;
    adam.warmup_steps = 50;
    s = CheckTask(task, &config);
    if (s.ok()) s = generator.Init(task, /*seed=*/1234);
  }
  if (s.ok()) s = trainer.Init(config, /*seed=*/1, adam);
  Batch batch;
  Metrics metrics;
  for (int step = 0; s.ok() && step < steps; ++step) {
    s = text_file ? dataset.Next(batch_size, &batch) : generator.Next(batch_size, &batch);
    if (s.ok()) s = trainer.Step(batch, &metrics);
    if (s.ok()) std::printf("%.9g\n", metrics.loss);
  }
  return s.ok() ? 0 : Fail(s);
}
