// One round of the small calls' A/B (scripts/bench.sh --ab REV --only small): times Attention,
// AttentionForTraining and AttentionBackward (with the forward's O and lse)
// through the C++ API, and the plain C++ loop doing the same (PlainHead, the
// baseline of issue #35: the same code in A and B, so its ratio shows the
// noise), at d = 8 and 64, T = T_q = T_k = 1..64, once each, and prints
// "name us_per_call" (CPU time of this process, one thread), so that
// bench/ab/pair.mjs can alternate two builds round by round. Built against
// each build's libattnkit_core.a; only the public API, which both share.
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "attnkit/attnkit.h"
#include "bench/native/harness.h"
#include "bench/native/plain_head.h"

namespace {

using harness::Random;

// Prints "name us_per_call", timed in batches of 16 calls (small calls).
void Time(const std::string& name, double budget, const std::function<void()>& fn) {
  std::printf("%s %.4f\n", name.c_str(), harness::MicrosPerCall(budget, fn, 16));
}

}  // namespace

int main() {
  const double budget = 0.01;
  for (const size_t d : {8, 64}) {
    for (const size_t T : {1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64}) {
      const size_t n = T * d;
      const auto q = Random(n, 1), k = Random(n, 2), v = Random(n, 3), dO = Random(n, 4);
      std::vector<float> out(n), lse(T), dQ(n), dK(n), dV(n), p_out(n), p_lse(T);
      const attnkit::ConstMatrixView Q(q.data(), T, d), K(k.data(), T, d), V(v.data(), T, d),
          G(dO.data(), T, d);
      const attnkit::AttentionOptions o;
      PlainHead plain(T, d);
      const std::string shape = "d=" + std::to_string(d) + "_T=" + std::to_string(T);
      Time("attention_" + shape, budget,
           [&] { (void)attnkit::Attention(Q, K, V, o, attnkit::MatrixView(out.data(), T, d)); });
      Time("train_fwd_" + shape, budget, [&] {
        (void)attnkit::AttentionForTraining(Q, K, V, o, attnkit::MatrixView(out.data(), T, d),
                                            attnkit::MatrixView(lse.data(), T, 1));
      });
      Time("bwd_saved_" + shape, budget, [&] {
        (void)attnkit::AttentionBackward(
            Q, K, V, attnkit::ConstMatrixView(out.data(), T, d), G,
            attnkit::ConstMatrixView(lse.data(), T, 1), o, attnkit::MatrixView(dQ.data(), T, d),
            attnkit::MatrixView(dK.data(), T, d), attnkit::MatrixView(dV.data(), T, d));
      });
      Time("plain_attention_" + shape, budget,
           [&] { plain.Forward(q.data(), k.data(), v.data(), p_out.data(), nullptr); });
      Time("plain_train_fwd_" + shape, budget,
           [&] { plain.Forward(q.data(), k.data(), v.data(), p_out.data(), p_lse.data()); });
      Time("plain_bwd_saved_" + shape, budget, [&] {
        plain.Backward(q.data(), k.data(), v.data(), p_out.data(), p_lse.data(), dO.data(),
                       dQ.data(), dK.data(), dV.data());
      });
    }
  }
  return 0;
}
