// attnkit_gpt2_bench: GPT-2 through attnkit's C++ API, the native side of the
// GPT-2 benchmark (npm run bench -- --only gpt2). bench/wasm/gpt2.mjs opens the
// benchmark's checkpoint with the package (openCheckpoint), writes the model
// as attnkit's weights file (exportWeights: the same weights, bit for bit) and
// drives this program as a child process, one command per line on stdin, one
// JSON line back, as bench/gpt2_torch.py answers:
//   (start)             {"engine", "target", "threads", "loadMs"}
//   prefill REPS IDS    REPS prefills of the prompt IDS (comma-separated token
//                       ids): Generator::Start, every layer's KV cache and the
//                       last position's logits; each one's CPU ms (this
//                       process, every thread) and wall ms
//   generate N REPS IDS REPS times: Start on IDS (untimed), then N greedy
//                       tokens (Generator::Next, temperature 0; each computes
//                       the following token's logits through the caches):
//                       CPU and wall ms of the N steps; the last tokens
//   check N FILE IDS    the logits after the prefill and after N greedy tokens
//                       written to FILE as float32 [2, V]; the tokens
//   quit
// One thread: the Generator runs its attention without a pool.
// Usage: attnkit_gpt2_bench --weights FILE
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "attnkit/generate.h"
#include "attnkit/model.h"
#include "attnkit/ops.h"
#include "bench/native/harness.h"
#include "bench/native/serve.h"

namespace {

using namespace attnkit::model;

using serve::Check;
using serve::Fail;

std::vector<int32_t> Ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  for (std::string word; std::getline(in, word, ',');) ids.push_back(std::stoi(word));
  return ids;
}

std::string Join(const std::vector<double>& xs) {
  std::string out;
  for (double x : xs) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

struct Times {
  std::vector<double> cpu_ms, wall_ms;
  void Add(double cpu0, double wall0) {
    cpu_ms.push_back(harness::CpuMs() - cpu0);
    wall_ms.push_back(1e3 * harness::WallSeconds() - wall0);
  }
  std::string Json() const {
    return "\"cpuMs\": [" + Join(cpu_ms) + "], \"wallMs\": [" + Join(wall_ms) + "]";
  }
};

// Start on `ids`, then n greedy tokens; their logits (the first Next's are the
// prefill's) into *first and *last when not null. Adds the n steps' times.
std::vector<int32_t> Generate(const Model& model, const std::vector<int32_t>& ids, size_t n,
                              Times* times, std::vector<float>* first, std::vector<float>* last) {
  Generator g;
  Check(g.Start(model, ids, 0), "generate");
  SampleOptions greedy;
  greedy.temperature = 0;
  GeneratedToken token;
  std::vector<int32_t> tokens;
  const double c0 = harness::CpuMs(), w0 = 1e3 * harness::WallSeconds();
  for (size_t i = 0; i < n; ++i) {
    Check(g.Next(greedy, &token), "generate");
    if (i == 0 && first) *first = token.logits;
    tokens.push_back(token.token);
  }
  if (times) times->Add(c0, w0);
  if (last) {
    // The logits after the n-th token: those the next token would be sampled from.
    Check(g.Next(greedy, &token), "generate");
    *last = token.logits;
  }
  return tokens;
}

std::string TokensJson(const std::vector<int32_t>& tokens) {
  std::string out;
  for (int32_t t : tokens) out += (out.empty() ? "" : ", ") + std::to_string(t);
  return "\"tokens\": [" + out + "]";
}

void Serve(const Model& model) {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string command;
    in >> command;
    if (command == "quit" || command.empty()) break;
    if (command == "prefill") {
      size_t reps;
      std::string ids;
      in >> reps >> ids;
      const std::vector<int32_t> prompt = Ids(ids);
      Times times;
      for (size_t r = 0; r < reps; ++r) {
        Generator g;
        const double c0 = harness::CpuMs(), w0 = 1e3 * harness::WallSeconds();
        Check(g.Start(model, prompt, 0), "prefill");
        times.Add(c0, w0);
      }
      std::printf("{%s}\n", times.Json().c_str());
    } else if (command == "generate") {
      size_t n, reps;
      std::string ids;
      in >> n >> reps >> ids;
      const std::vector<int32_t> prompt = Ids(ids);
      Times times;
      std::vector<int32_t> tokens;
      for (size_t r = 0; r < reps; ++r)
        tokens = Generate(model, prompt, n, &times, nullptr, nullptr);
      std::printf("{%s, %s}\n", times.Json().c_str(), TokensJson(tokens).c_str());
    } else if (command == "check") {
      size_t n;
      std::string file, ids;
      in >> n >> file >> ids;
      std::vector<float> first, last;
      const std::vector<int32_t> tokens = Generate(model, Ids(ids), n, nullptr, &first, &last);
      std::ofstream out(file, std::ios::binary);
      out.write(reinterpret_cast<const char*>(first.data()), std::streamsize(4 * first.size()));
      out.write(reinterpret_cast<const char*>(last.data()), std::streamsize(4 * last.size()));
      if (!out) Fail("cannot write " + file);
      std::printf("{%s}\n", TokensJson(tokens).c_str());
    } else {
      Fail("unknown command " + command);
    }
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string weights;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--weights" && i + 1 < argc) {
      weights = argv[++i];
    } else {
      Fail("unknown argument " + a);
    }
  }
  if (weights.empty()) Fail("--weights FILE is required");
  const double w0 = harness::WallSeconds();
  std::ifstream f(weights, std::ios::binary | std::ios::ate);
  std::vector<uint8_t> bytes(f ? size_t(f.tellg()) : 0);
  f.seekg(0);
  if (!f.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()))) {
    Fail("cannot read " + weights);
  }
  Model model;
  Check(ImportWeights(bytes.data(), bytes.size(), &model), "weights");
  std::vector<uint8_t>().swap(bytes);
  std::printf(
      "{\"engine\": \"attnkit (native)\", \"target\": \"%s\", \"threads\": 1, \"loadMs\": %.1f}\n",
      attnkit::targets::Name(attnkit::targets::Current()), 1e3 * (harness::WallSeconds() - w0));
  std::fflush(stdout);
  Serve(model);
  return 0;
}
