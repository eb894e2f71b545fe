// hello: causal attention over three tokens, a small transformer's loss and
// an error, from attnkit's core and model libraries.
#include <cstdio>

#include "attnkit/attnkit.h"
#include "attnkit/model.h"
#include "attnkit/version.h"

int main() {
  attnkit::Matrix Q = {{1, 0}, {0, 1}, {1, 1}};           // [T=3, d_k=2]; K = Q here
  attnkit::Matrix V = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};  // [T=3, d_v=3]
  attnkit::Matrix out(3, 3);                              // [T=3, d_v=3]
  attnkit::AttentionOptions options;
  options.causal = true;  // token i sees tokens 0..i
  attnkit::Status status = attnkit::Attention(Q, Q, V, options, out);

  attnkit::model::ModelConfig config;  // one attention layer
  config.vocab_size = 4;               // token ids 0..3
  config.max_seq_len = 3;
  config.d_model = 8;
  attnkit::model::Batch batch;  // one sequence: 0 1 2, each to predict the next id
  batch.batch = 1;
  batch.seq_len = 3;
  batch.tokens = {0, 1, 2};
  batch.targets = {1, 2, 3};
  attnkit::model::Model model;
  attnkit::model::Metrics metrics;
  if (status.ok()) status = model.Init(config, /*seed=*/1);
  if (status.ok()) status = model.Forward(batch, &metrics);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("attnkit %s on %s\n", ATTNKIT_VERSION_STRING,
              attnkit::targets::Name(attnkit::targets::Current()));
  std::printf("out[2] = %.3f %.3f %.3f, model loss %.3f\n", out(2, 0), out(2, 1), out(2, 2),
              metrics.loss);

  // Bad input is a Status naming the parameter, never a crash.
  status = attnkit::Attention(Q, Q, attnkit::Matrix(2, 3), options, out);
  std::printf("%s\n", status.ToString().c_str());
}
