// The multi-head layer's A/B and time split (scripts/bench.sh --ab REV --only layer): B = 1,
// d_model = 512, 8 heads of 64, W_Q, W_K, W_V and W_O, one thread. Times each
// part once and prints "name us_per_call" (CPU time of this process), so that
// bench/ab/pair.mjs can alternate two builds round by round:
//   layer_T=N           the layer as a model runs it: weights packed once
//                       (PackMultiHeadWeights)
//   layer_per_call_T=N  the layer with its weights passed in plain to every call
//   matmul_x4_T=N       its four projections alone, four MatMul [N, 512] x [512, 512]
//                       (each packs its W first from 128 rows on, as the layer does)
//   attention_T=N       its attention alone, MultiHeadAttentionQKV on Q, K, V [N, 512]
//   pack_weights        PackMultiHeadWeights itself
// Built against each build's libattnkit_core.a; only the public API.
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "attnkit/attnkit.h"
#include "bench/native/harness.h"

namespace {

using harness::Random;

const auto& Time = harness::PrintTime;

}  // namespace

int main() {
  constexpr size_t kModel = 512, kHeads = 8;
  const double budget = 0.25;
  // Weights in +-1/sqrt(512), so that the projections keep the scale of X.
  const float w_scale = 1.0f / 22.627417f;
  const auto wq = Random(kModel * kModel, 5, w_scale), wk = Random(kModel * kModel, 6, w_scale),
             wv = Random(kModel * kModel, 7, w_scale), wo = Random(kModel * kModel, 8, w_scale);
  const auto W = [&](const std::vector<float>& w) {
    return attnkit::ConstMatrixView(w.data(), kModel, kModel);
  };
  const attnkit::MultiHeadWeights weights{W(wq), W(wk), W(wv), W(wo)};
  const attnkit::HeadConfig config{kHeads, kHeads, 0, 0};
  const attnkit::AttentionOptions options;
  attnkit::PackedMultiHeadWeights packed;
  Time("pack_weights", budget,
       [&] { return attnkit::PackMultiHeadWeights(weights, config, &packed).ok(); });
  for (const size_t T : {size_t{32}, size_t{512}}) {
    const std::string t = "_T=" + std::to_string(T);
    const auto X = Random(T * kModel, 4);
    std::vector<float> out(T * kModel), q(T * kModel);
    const auto k = Random(T * kModel, 9), v = Random(T * kModel, 10);
    const attnkit::ConstMatrixView x(X.data(), T, kModel);
    const attnkit::MatrixView o(out.data(), T, kModel);
    const auto per_call = [&] {
      return attnkit::MultiHeadAttention(x, 1, weights, config, options, o).ok();
    };
    Time("layer" + t, budget,
         [&] { return attnkit::MultiHeadAttention(x, 1, packed, config, options, o).ok(); });
    Time("layer_per_call" + t, budget, per_call);
    Time("matmul_x4" + t, budget, [&] {
      bool ok = true;
      for (const std::vector<float>* w : {&wq, &wk, &wv, &wo}) {
        ok &= attnkit::MatMul(x, W(*w), attnkit::MatrixView(q.data(), T, kModel)).ok();
      }
      return ok;
    });
    const attnkit::ConstMatrixView Q(q.data(), T, kModel), K(k.data(), T, kModel),
        V(v.data(), T, kModel);
    Time("attention" + t, budget,
         [&] { return attnkit::MultiHeadAttentionQKV(Q, K, V, 1, config, options, o).ok(); });
  }
  return 0;
}
