// Small calls: Attention's lean path (plan.h, UseSmallPath) against the
// float64 reference and against the general path (through a planned
// AttentionJob) bit for bit, at T = 1..16 and d = 8 and 64, on every target:
// split-K where the lean path takes split-K, the fused kernel where it takes
// the small-shape kernel (d = 8); the errors of small calls, each naming its
// parameter; and the heap after many small calls, forward and backward.
#include <malloc.h>

#include <cmath>
#include <optional>
#include <string>

#include "src/core/plan.h"
#include "tests/reference.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::AttentionOptions;
namespace internal = attnkit::internal;

// The general path: UseSmallPath refuses while a head path is forced; the
// lean path's split-K is the planner's split-K, its small-shape kernel the
// fused kernel's sums.
struct GeneralPath {
  explicit GeneralPath(internal::HeadPath path = internal::HeadPath::kSplitK) {
    internal::ForceHeadPathForTest(path);
  }
  ~GeneralPath() { internal::ForceHeadPathForTest(std::nullopt); }
  GeneralPath(const GeneralPath&) = delete;
  GeneralPath& operator=(const GeneralPath&) = delete;
};

// Bytes the allocator has handed out and not taken back.
size_t HeapInUse() {
#if defined(__EMSCRIPTEN__)
  return static_cast<size_t>(mallinfo().uordblks);
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  return mallinfo2().uordblks;
#else
  return 0;
#endif
}

TEST_CASE("Small calls take the lean path at T = 1..16, d = 8 and 64", "[attention][small]") {
  // Every call of these sizes that the planner gives split-K (one chunk), and
  // at d = 8 every one (the small-shape kernel, also where the planner gives
  // the fused kernel, from about T = 10); at d = 64 the fused ones stay there.
  for (size_t d : {8, 64}) {
    for (size_t T = 1; T <= 16; ++T) {
      INFO("T=" << T << " d=" << d);
      const TestMatrix Q = Random(T, d, 1), K = Random(T, d, 2), V = Random(T, d, 3);
      TestMatrix out(T, d);
      const bool fused = internal::UseFusedPath(T, T, d, d);
      const bool small = internal::UseSmallKernelForAttention(T, T, d, d);
      CHECK(small == (d == 8));
      CHECK(internal::UseSmallPath(Q, K, V, AttentionOptions(), out) == (small || !fused));
      if (T <= 8) CHECK_FALSE(fused);
    }
  }
  // Not: a key count past one split-K chunk, or a call the fused kernel takes.
  const TestMatrix Q = Random(2, 8, 1), K = Random(internal::kDecodeChunkKeys + 1, 8, 2);
  const TestMatrix V = Random(internal::kDecodeChunkKeys + 1, 8, 3);
  TestMatrix out(2, 8);
  CHECK_FALSE(internal::UseSmallPath(Q, K, V, AttentionOptions(), out));
  const TestMatrix Qf = Random(128, 8, 1), Kf = Random(128, 8, 2), Vf = Random(128, 8, 3);
  TestMatrix outf(128, 8);
  CHECK_FALSE(internal::UseSmallPath(Qf, Kf, Vf, AttentionOptions(), outf));
}

TEST_CASE("The lean path matches the reference and the general path bit for bit",
          "[attention][small]") {
  ForEachTarget([](int64_t) {
    uint32_t seed = 7000;
    for (size_t d : {8, 64}) {
      for (size_t T = 1; T <= 16; ++T) {
        const Layout layout = T % 3 == 0 ? Layout::kStrided : Layout::kContiguous;
        const TestMatrix Q = Random(T, d, ++seed, layout, -2.0f, 2.0f);
        const TestMatrix K = Random(T, d, ++seed, layout, -2.0f, 2.0f);
        const TestMatrix V = Random(T, d, ++seed, layout);
        const TestMask mask = RandomMask(T, T, ++seed, 0.7);
        TestMatrix additive = Random(T, T, ++seed, Layout::kContiguous, -1.0f, 1.0f);
        additive(0, 0) = -kInf;
        const bool small = internal::UseSmallKernelForAttention(T, T, d, d);
        if (!small && internal::UseFusedPath(T, T, d, d)) continue;  // not a lean-path call
        for (int variant = 0; variant < 6; ++variant) {
          INFO("T=" << T << " d=" << d << " variant " << variant);
          AttentionOptions o;
          if (variant == 1) o.causal = true;
          if (variant == 2) o.scale = 0.3f, o.softcap = 2.5f;
          if (variant == 3) o.key_length = (T + 1) / 2;
          if (variant == 4) o.bool_mask = mask.view();
          if (variant == 5) o.additive_mask = additive.cview();
          TestMatrix lean(T, d, layout), general(T, d, layout);
          REQUIRE(internal::UseSmallPath(Q, K, V, o, lean));
          REQUIRE_OK(attnkit::Attention(Q, K, V, o, lean));
          {
            GeneralPath forced(small ? internal::HeadPath::kFused : internal::HeadPath::kSplitK);
            REQUIRE_OK(attnkit::Attention(Q, K, V, o, general));
          }
          CHECK(lean.SameValues(general));
          CHECK(lean.PaddingIntact());
          const ref::Trace want =
              ref::Attention(Q.ToRef(), K.ToRef(), V.ToRef(), ref::FromAttnkit(o));
          const double max_add = o.additive_mask.empty() ? 0.0 : MaxAbs(o.additive_mask);
          const AttnTol tol =
              AttentionTol(d, T, MaxAbs(Q), MaxAbs(K), MaxAbs(V), want.scale, max_add);
          CHECK_CLOSE(lean, want.output, tol.output);
        }
      }
    }
  });
}

TEST_CASE("Small calls report every error naming the parameter, as the general path does",
          "[attention][small][errors]") {
  const size_t T = 4, d = 8;
  const TestMatrix Q = Random(T, d, 1), K = Random(T, d, 2), V = Random(T, d, 3);
  TestMatrix out(T, d);
  const AttentionOptions none;
  // The code and parameter of each bad call, on the lean path's shapes and
  // with the general path forced: the same.
  const auto same = [&](const char* parameter, attnkit::ErrorCode code, auto call) {
    INFO("parameter " << parameter);
    const attnkit::Status lean = call();
    CHECK(lean.code() == code);
    CHECK(lean.parameter() == parameter);
    GeneralPath forced;
    const attnkit::Status general = call();
    CHECK(general.code() == lean.code());
    CHECK(general.message() == lean.message());
  };
  for (const char* name : {"Q", "K", "V"}) {
    TestMatrix bad = CopyOf(name[0] == 'Q' ? Q.cview() : name[0] == 'K' ? K.cview() : V.cview());
    bad(T - 1, d - 1) = kNaN;
    same(name, attnkit::ErrorCode::kNonFinite, [&] {
      return attnkit::Attention(name[0] == 'Q' ? bad : Q, name[0] == 'K' ? bad : K,
                                name[0] == 'V' ? bad : V, none, out);
    });
  }
  // NaN in Q and a wrong output shape: the finiteness of Q is checked first.
  TestMatrix nan_q = CopyOf(Q);
  nan_q(0, 0) = kNaN;
  TestMatrix wide(T, d + 1);
  same("Q", attnkit::ErrorCode::kNonFinite,
       [&] { return attnkit::Attention(nan_q, K, V, none, wide); });
  same("out", attnkit::ErrorCode::kShapeMismatch,
       [&] { return attnkit::Attention(Q, K, V, none, wide); });
  const TestMatrix K9 = Random(T, d + 1, 5);
  same("K", attnkit::ErrorCode::kShapeMismatch,
       [&] { return attnkit::Attention(Q, K9, V, none, out); });
  TestMatrix qkv = Random(T, d, 6);
  same("out", attnkit::ErrorCode::kInvalidArgument, [&] {
    return attnkit::Attention(qkv, K, V, none, qkv.view());  // out overlaps Q
  });
  AttentionOptions bad_scale;
  bad_scale.scale = -1.0f;
  same("scale", attnkit::ErrorCode::kInvalidArgument,
       [&] { return attnkit::Attention(Q, K, V, bad_scale, out); });
  AttentionOptions long_key;
  long_key.key_length = T + 1;
  same("key_length", attnkit::ErrorCode::kInvalidArgument,
       [&] { return attnkit::Attention(Q, K, V, long_key, out); });
  // Scores past float: an overflow naming Q, on the lean path too.
  const TestMatrix huge = Random(T, d, 7, Layout::kContiguous, 1e20f, 2e20f);
  same("Q", attnkit::ErrorCode::kOverflow,
       [&] { return attnkit::Attention(huge, huge, V, none, out); });
  // And the next call works.
  REQUIRE_OK(attnkit::Attention(Q, K, V, none, out));
  CHECK(AllFinite(out));
}

TEST_CASE("Many small calls leave the heap as they found it", "[attention][small][memory]") {
  const size_t d = 8;
  const TestMatrix Q = Random(4, d, 1), K = Random(4, d, 2), V = Random(4, d, 3);
  const TestMatrix dO = Random(4, d, 4);
  TestMatrix out(4, d), lse(4, 1), dQ(4, d), dK(4, d), dV(4, d);
  TestMatrix nan_q = CopyOf(Q);
  nan_q(1, 1) = kNaN;
  const AttentionOptions o;
  // One round first: lazily made state (the dispatch table) is not a leak.
  const auto round = [&] {
    REQUIRE_OK(attnkit::Attention(Q, K, V, o, out));
    REQUIRE_OK(attnkit::AttentionForTraining(Q, K, V, o, out, lse));
    REQUIRE_OK(attnkit::AttentionBackward(Q, K, V, out, dO, lse, o, dQ, dK, dV));
    REQUIRE_FALSE(attnkit::Attention(nan_q, K, V, o, out).ok());
  };
  round();
  const size_t before = HeapInUse();
  for (int i = 0; i < 10000; ++i) round();
  CHECK(HeapInUse() == before);
}

}  // namespace
}  // namespace attnkit_test
