// The per-thread kept blocks behind the core's temporary memory (scratch.h):
// reuse, the bounds, zeroing on request, errors, and a public call that
// allocates nothing new once its blocks are kept.
#include <cstring>
#include <thread>
#include <vector>

#include "attnkit/attnkit.h"
#include "src/core/scratch.h"
#include "tests/test_util.h"

namespace attnkit_test {
namespace {

using attnkit::internal::AllocateScratch;
using attnkit::internal::KeptScratchFloats;
using attnkit::internal::ScratchBuffer;
using attnkit::internal::ScratchMatrix;

#if defined(__EMSCRIPTEN__)
constexpr bool kKeeps = false;  // wasm memory is never given back: nothing is kept
#else
constexpr bool kKeeps = true;
#endif

TEST_CASE("scratch: a released block serves the next request of its size", "[scratch]") {
  const size_t before = KeptScratchFloats();
  float* first;
  {
    ScratchBuffer b;
    REQUIRE(b.Allocate(100000));
    REQUIRE(b.size() == 100000);
    first = b.data();
    b.data()[99999] = 1.0f;  // the whole block is ours
  }
  CHECK(KeptScratchFloats() == (kKeeps ? before + 100000 : before));
  ScratchBuffer again;
  REQUIRE(again.Allocate(90000));
  if (kKeeps) CHECK(again.data() == first);
  CHECK(KeptScratchFloats() == before);
  // A much smaller request does not take a much larger kept block.
  again.Release();
  ScratchBuffer small;
  REQUIRE(small.Allocate(100));
  if (kKeeps) CHECK(small.data() != first);
  // Moving hands the block over; the moved-from buffer holds nothing.
  ScratchBuffer moved = std::move(small);
  CHECK(small.data() == nullptr);
  CHECK(moved.size() == 100);
}

TEST_CASE("scratch: at most 16 blocks and 64 MiB are kept per thread", "[scratch]") {
  const size_t bound = size_t{1} << 24;
  {
    std::vector<ScratchBuffer> many(20);
    for (ScratchBuffer& b : many) REQUIRE(b.Allocate(300000));
  }
  CHECK(KeptScratchFloats() <= 16 * size_t{300000} + 15 * size_t{100000});
  if (kKeeps) CHECK(KeptScratchFloats() >= 16 * size_t{300000});
  {
    std::vector<ScratchBuffer> large(4);
    for (ScratchBuffer& b : large) REQUIRE(b.Allocate(5000000));
  }
  CHECK(KeptScratchFloats() <= bound);
  if (kKeeps) CHECK(KeptScratchFloats() >= 3 * size_t{5000000});
  const size_t kept = KeptScratchFloats();
  {
    // A block past the bound alone is freed, and nothing kept is evicted for it.
    ScratchBuffer huge;
    REQUIRE(huge.Allocate(bound + 1));
  }
  CHECK(KeptScratchFloats() == kept);
}

TEST_CASE("scratch: AllocateScratch zeroes a reused block on request, and names overflow",
          "[scratch]") {
  {
    ScratchMatrix dirty;
    REQUIRE_OK(AllocateScratch("X", "dirty", 64, 33, /*zero=*/false, &dirty));
    std::memset(dirty.data(), 0x7f, 64 * 33 * sizeof(float));
  }
  ScratchMatrix m;
  REQUIRE_OK(AllocateScratch("X", "zeros", 64, 33, /*zero=*/true, &m));
  REQUIRE(m.rows() == 64);
  REQUIRE(m.cols() == 33);
  for (size_t i = 0; i < 64 * 33; ++i) REQUIRE(m.data()[i] == 0.0f);
  const attnkit::Status s = AllocateScratch("X", "Q [T, d_k]", SIZE_MAX / 2, 4, /*zero=*/false, &m);
  REQUIRE(!s.ok());
  CHECK(s.parameter() == "X");
  CHECK(s.message().find("Q [T, d_k]") != std::string::npos);
  CHECK(m.rows() == 0);
}

TEST_CASE("scratch: each thread keeps its own blocks", "[scratch]") {
  if (attnkit::ThreadPool::MaxThreads() < 2) return;  // no threads in this build
  const size_t here = KeptScratchFloats();
  size_t there = 1;
  std::thread([&] {
    {
      ScratchBuffer b;
      REQUIRE(b.Allocate(50000));
    }
    there = KeptScratchFloats();
  }).join();
  CHECK(there == (kKeeps ? 50000 : 0));
  CHECK(KeptScratchFloats() == here);
}

TEST_CASE("scratch: a multi-head backward allocates nothing new once its blocks are kept",
          "[scratch]") {
  using attnkit::AttentionOptions;
  using attnkit::HeadConfig;
  using attnkit::MultiHeadWeights;
  const size_t T = 96, d_model = 64, h = 4;
  const TestMatrix X = Random(T, d_model, 8100), W_Q = Random(d_model, d_model, 8101),
                   W_K = Random(d_model, d_model, 8102), W_V = Random(d_model, d_model, 8103),
                   W_O = Random(d_model, d_model, 8104), dOut = Random(T, d_model, 8105);
  const MultiHeadWeights w{W_Q, W_K, W_V, W_O};
  HeadConfig c;
  c.num_heads = h;
  AttentionOptions o;
  o.causal = true;
  TestMatrix dX(T, d_model), dW_Q(d_model, d_model), dW_K(d_model, d_model), dW_V(d_model, d_model),
      dW_O(d_model, d_model);
  const auto step = [&] {
    REQUIRE_OK(
        attnkit::MultiHeadAttentionBackward(X, 1, w, c, o, dOut, {dX, dW_Q, dW_K, dW_V, dW_O}));
    return KeptScratchFloats();
  };
  // The first call may take blocks other calls left; from the second on,
  // every request is served by a block the last call gave back.
  step();
  const size_t kept = step();
  if (kKeeps) CHECK(kept > 0);
  for (int i = 0; i < 3; ++i) CHECK(step() == kept);
}

}  // namespace
}  // namespace attnkit_test
