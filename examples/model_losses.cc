// Trains the induction task with the settings of docs/model.md (model seed 1,
// data seed 1234, batches of 32) and prints the loss of each of the first N
// steps (argument 1, default 50), one per line. tests/js/model.test.js
// compares the npm package's loss curve with these native ones.
#include <cstdio>
#include <cstdlib>

#include "src/model/model.h"
#include "src/model/tasks.h"

int main(int argc, char** argv) {
  using namespace attnkit::model;
  const int steps = argc > 1 ? std::atoi(argv[1]) : 50;
  TaskConfig task;
  task.kind = TaskKind::kInduction;
  task.length = 8;
  task.padding = 8;
  task.vocab_size = 24;
  ModelConfig config;
  config.vocab_size = task.vocab_size;
  config.max_seq_len = TaskSeqLen(task);
  config.d_model = 32;
  config.num_layers = 2;
  config.num_heads = 2;
  AdamWConfig adam;
  adam.learning_rate = 1e-2f;
  adam.warmup_steps = 50;
  Trainer trainer;
  TaskGenerator generator;
  attnkit::Status s = CheckTask(task, &config);
  if (s.ok()) s = trainer.Init(config, /*seed=*/1, adam);
  if (s.ok()) s = generator.Init(task, /*seed=*/1234);
  Batch batch;
  Metrics metrics;
  for (int step = 0; s.ok() && step < steps; ++step) {
    s = generator.Next(32, &batch);
    if (s.ok()) s = trainer.Step(batch, &metrics);
    if (s.ok()) std::printf("%.9g\n", metrics.loss);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
