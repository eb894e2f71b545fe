// The options kinds the backward tests run every case with: each option of
// the forward one at a time and combined, and the masks they point into
// (tests/backward_test.cc, tests/backward_trace_test.cc).
#ifndef ATTNKIT_TESTS_BACKWARD_KINDS_H_
#define ATTNKIT_TESTS_BACKWARD_KINDS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "attnkit/attention.h"
#include "tests/test_util.h"

namespace attnkit_test {

// The masks an options kind may point into, owned for one shape.
struct Masks {
  TestMask random;      // [T_q, T_k], ~60% allowed, row 0 fully masked
  TestMask shared;      // [1, T_k - 1]: one row for every query, shorter than T_k
  TestMatrix additive;  // [T_q, T_k] in [-2, 2], with some -inf
  Masks(size_t T_q, size_t T_k, uint32_t seed)
      : random(RandomMask(T_q, T_k, seed, 0.6, Layout::kStrided)),
        shared(RandomMask(1, T_k > 1 ? T_k - 1 : 1, seed + 1, 0.7)),
        additive(Random(T_q, T_k, seed + 2, Layout::kStrided, -2.0f, 2.0f)) {
    for (size_t j = 0; j < T_k; ++j) random(0, j) = 0;
    for (size_t i = 0; i < T_q; ++i) additive(i, (i * 3) % T_k) = -kInf;
  }
};

// Every option of the forward, one at a time and combined.
struct Kind {
  const char* name;
  std::function<void(size_t T_q, size_t T_k, const Masks&, attnkit::AttentionOptions*)> set;
};
inline const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {"none", [](size_t, size_t, const Masks&, attnkit::AttentionOptions*) {}},
      {"scale 0.3",
       [](size_t, size_t, const Masks&, attnkit::AttentionOptions* o) { o->scale = 0.3f; }},
      {"softcap 0.8",
       [](size_t, size_t, const Masks&, attnkit::AttentionOptions* o) {
         o->softcap = 0.8f;
         o->scale = 1.5f;
       }},
      {"causal lower-right",
       [](size_t, size_t, const Masks&, attnkit::AttentionOptions* o) { o->causal = true; }},
      {"causal upper-left offset 0",
       [](size_t, size_t, const Masks&, attnkit::AttentionOptions* o) {
         o->causal = true;
         o->causal_alignment = attnkit::CausalAlignment::kUpperLeft;
       }},
      {"causal upper-left offset -2 (first rows fully masked)",
       [](size_t, size_t, const Masks&, attnkit::AttentionOptions* o) {
         o->causal = true;
         o->causal_alignment = attnkit::CausalAlignment::kUpperLeft;
         o->causal_offset = -2;
       }},
      {"causal upper-left offset 3",
       [](size_t, size_t, const Masks&, attnkit::AttentionOptions* o) {
         o->causal = true;
         o->causal_alignment = attnkit::CausalAlignment::kUpperLeft;
         o->causal_offset = 3;
       }},
      {"key_length T_k / 2", [](size_t, size_t T_k, const Masks&,
                                attnkit::AttentionOptions* o) { o->key_length = T_k / 2; }},
      {"key_length 0 (all masked)",
       [](size_t, size_t, const Masks&, attnkit::AttentionOptions* o) { o->key_length = 0; }},
      {"bool mask (row 0 fully masked)",
       [](size_t, size_t, const Masks& m, attnkit::AttentionOptions* o) {
         o->bool_mask = m.random.view();
       }},
      {"bool mask: one shared short row",
       [](size_t, size_t, const Masks& m, attnkit::AttentionOptions* o) {
         o->bool_mask = m.shared.view();
       }},
      {"additive mask with -inf",
       [](size_t, size_t, const Masks& m, attnkit::AttentionOptions* o) {
         o->additive_mask = m.additive.cview();
       }},
      {"everything: causal, key length, bool, additive, softcap, scale",
       [](size_t, size_t T_k, const Masks& m, attnkit::AttentionOptions* o) {
         o->causal = true;
         o->key_length = T_k - T_k / 4;
         o->bool_mask = m.random.view();
         o->additive_mask = m.additive.cview();
         o->softcap = 2.0f;
         o->scale = 0.9f;
       }},
  };
  return kinds;
}

// A shape of one head: T_q queries, T_k keys, d_k, d_v.
struct GradShape {
  size_t T_q, T_k, d_k, d_v;
};

// Calls fn(shape, Q, K, V, dO, options) on every target, for every shape and
// every options kind: Q, K in [-2, 2], V and dO in [-1, 1], strided views,
// drawn from `seed` on (Q, K, V, dO, then the masks, per shape). Failures
// name the shape and the kind.
template <class Fn>
void ForEachGradCase(const std::vector<GradShape>& shapes, uint32_t seed, const Fn& fn) {
  ForEachTarget([&](int64_t) {
    for (const GradShape& s : shapes) {
      const TestMatrix Q = Random(s.T_q, s.d_k, seed++, Layout::kStrided, -2.0f, 2.0f);
      const TestMatrix K = Random(s.T_k, s.d_k, seed++, Layout::kStrided, -2.0f, 2.0f);
      const TestMatrix V = Random(s.T_k, s.d_v, seed++, Layout::kStrided);
      const TestMatrix dO = Random(s.T_q, s.d_v, seed++, Layout::kStrided);
      const Masks masks(s.T_q, s.T_k, seed++);
      for (const Kind& kind : Kinds()) {
        attnkit::AttentionOptions o;
        kind.set(s.T_q, s.T_k, masks, &o);
        INFO("T_q " << s.T_q << " T_k " << s.T_k << " d_k " << s.d_k << " d_v " << s.d_v << ", "
                    << kind.name);
        fn(s, Q, K, V, dO, o);
      }
    }
  });
}

}  // namespace attnkit_test

#endif  // ATTNKIT_TESTS_BACKWARD_KINDS_H_
