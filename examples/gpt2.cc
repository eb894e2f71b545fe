// gpt2: the next token of a Hugging Face GPT-2 checkpoint after a list of
// token ids, through the C++ API (attnkit/checkpoint_file.h).
//   gpt2 PATH TOKEN... [--num-heads N]
// PATH is a folder holding model.safetensors (and config.json, optional) or
// the .safetensors file itself; --num-heads gives the heads of a checkpoint
// without config.json. Prints the model's size on stderr, then the 5
// likeliest next tokens on stdout, one per line: the id and its
// probability. GPT-2's ids of "Hello world" are 15496 995:
//   gpt2 ~/gpt2 15496 995
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "attnkit/checkpoint_file.h"
#include "attnkit/model.h"

namespace {

int Fail(const attnkit::Status& s) {
  std::fprintf(stderr, "gpt2: %s\n", s.ToString().c_str());
  return 1;
}

int Usage(const char* why) {
  std::fprintf(stderr, "gpt2: %s\nusage: gpt2 PATH TOKEN... [--num-heads N]\n", why);
  return 2;
}

// `text` as a count (digits only); false for anything else.
bool ParseCount(const char* text, long* value) {
  if (*text < '0' || *text > '9') return false;
  errno = 0;
  char* end = nullptr;
  *value = std::strtol(text, &end, 10);
  return errno == 0 && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attnkit::model;
  if (argc < 3) return Usage("expected a checkpoint and at least one token id");
  CheckpointOptions options;
  Batch batch;
  batch.batch = 1;
  for (int i = 2; i < argc; ++i) {
    long v = 0;
    if (std::strcmp(argv[i], "--num-heads") == 0 && i + 1 < argc && ParseCount(argv[i + 1], &v)) {
      options.num_heads = size_t(v);
      ++i;
    } else if (ParseCount(argv[i], &v) && v <= 0x7fffffff) {
      batch.tokens.push_back(int32_t(v));
    } else {
      return Usage((std::string("expected a token id, got ") + argv[i]).c_str());
    }
  }
  if (batch.tokens.empty()) return Usage("expected at least one token id");
  batch.seq_len = batch.tokens.size();
  batch.targets.assign(batch.seq_len, -1);  // nothing scored: the logits only

  Model model;
  attnkit::Status s = OpenCheckpoint(argv[1], options, &model);
  if (!s.ok()) return Fail(s);
  const ModelConfig& c = model.config();
  std::fprintf(stderr, "gpt2: %zu layers, %zu heads, d_model %zu, %zu tokens, context %zu\n",
               c.num_layers, c.num_heads, c.d_model, c.vocab_size, c.max_seq_len);

  attnkit::Matrix logits;  // [T, vocab_size]
  s = model.Forward(batch, nullptr, &logits);
  if (!s.ok()) return Fail(s);
  // softmax of the last row, then its 5 largest.
  const float* last = logits.data() + (batch.seq_len - 1) * c.vocab_size;
  const double top = *std::max_element(last, last + c.vocab_size);
  double sum = 0;
  for (size_t v = 0; v < c.vocab_size; ++v) sum += std::exp(double(last[v]) - top);
  std::vector<size_t> ids(c.vocab_size);
  std::iota(ids.begin(), ids.end(), size_t{0});
  const size_t k = std::min<size_t>(5, c.vocab_size);
  std::partial_sort(ids.begin(), ids.begin() + long(k), ids.end(), [&](size_t a, size_t b) {
    return last[a] > last[b] || (last[a] == last[b] && a < b);
  });
  for (size_t i = 0; i < k; ++i) {
    std::printf("%zu %.6f\n", ids[i], std::exp(double(last[ids[i]]) - top) / sum);
  }
  return 0;
}
