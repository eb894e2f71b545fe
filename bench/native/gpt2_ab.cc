// One round of GPT-2's A/B (bench/ab/ab.sh gpt2 REV --native): GPT-2 small's
// shapes (12 layers, 12 heads, d_model 768, vocabulary 50,257, context 1024)
// with weights from a seed (Model::Init), timed through the public Generator
// as the GPT-2 benchmark times it (bench/native/gpt2.cc): the prefill of 16
// and 128 tokens (Generator::Start) and the greedy tokens after 16 and after
// 128 (Generator::Next, per token). Prints "name us_per_call", CPU time of
// this process (one thread), and "logits_hash_* H": a hash of the logits'
// bits after the prefill and after the tokens, equal on both sides (a ratio of
// exactly 1) when the two builds compute the same bits.
// Usage: attnkit_ab_gpt2 (with GPT2_AB_PREFILL_ONLY set: only 20 prefills of
// 128 tokens, for a profiler)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attnkit/generate.h"
#include "attnkit/model.h"
#include "bench/native/harness.h"

namespace {

using namespace attnkit::model;

// FNV-1a over the floats' bits, folded to 48 bits (exact as a double).
double Hash(const std::vector<float>& xs) {
  uint64_t h = 1469598103934665603ull;
  for (float x : xs) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    for (int b = 0; b < 4; ++b) h = (h ^ ((u >> (8 * b)) & 0xff)) * 1099511628211ull;
  }
  return double(h >> 16);
}

bool Ok(const attnkit::Status& s, const char* what) {
  if (!s.ok()) std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  return s.ok();
}

}  // namespace

int main() {
  ModelConfig c;
  c.vocab_size = 50257;
  c.max_seq_len = 1024;
  c.d_model = 768;
  c.num_layers = 12;
  c.num_heads = 12;
  c.d_ff = 3072;
  c.layer_norm = true;
  c.bias = true;
  c.tied_unembedding = true;
  Model model;
  if (!Ok(model.Init(c, 44), "init")) return 1;
  // A prompt of token ids spread over the vocabulary.
  std::vector<int32_t> prompt(128);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 7919 + 13) % c.vocab_size);
  const std::vector<int32_t> p16(prompt.begin(), prompt.begin() + 16);
  SampleOptions greedy;
  greedy.temperature = 0;
  if (std::getenv("GPT2_AB_PREFILL_ONLY")) {
    for (int r = 0; r < 20; ++r) {
      Generator g;
      g.Start(model, prompt, 0);
    }
    return 0;
  }
  const std::vector<const std::vector<int32_t>*> prompts = {&p16, &prompt};
  for (const std::vector<int32_t>* p : prompts) {
    const std::string T = std::to_string(p->size());
    harness::PrintTime("prefill_" + T, 1.0, [&]() -> bool {
      Generator g;
      return g.Start(model, *p, 0).ok();
    });
    // The tokens after the prompt, per token (a Start untimed before them).
    const size_t n = 16;
    std::vector<double> times;
    GeneratedToken first, last;
    for (int round = 0; round < 3; ++round) {
      Generator g;
      if (!Ok(g.Start(model, *p, 0), "start")) return 1;
      const double t0 = harness::CpuSeconds();
      for (size_t i = 0; i < n; ++i) {
        if (!Ok(g.Next(greedy, i == 0 ? &first : &last), "next")) return 1;
      }
      times.push_back((harness::CpuSeconds() - t0) / double(n) * 1e6);
    }
    std::printf("next_after_%s %.3f\n", T.c_str(), harness::Median(times));
    std::printf("logits_hash_prefill_%s %.0f\n", T.c_str(), Hash(first.logits));
    std::printf("logits_hash_next_after_%s %.0f\n", T.c_str(), Hash(last.logits));
  }
  return 0;
}
