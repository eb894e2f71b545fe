// attnkit model: the seeded random numbers of initialisation and the task
// generators. Own generators, never std::*_distribution, whose output is
// implementation-defined (libstdc++ natively, libc++ in WebAssembly differ):
// the same seed gives the same numbers on every build.
#ifndef ATTNKIT_MODEL_RANDOM_H_
#define ATTNKIT_MODEL_RANDOM_H_

#include <cstddef>
#include <cstdint>

namespace attnkit {
namespace model {

// xoshiro256** (Blackman and Vigna 2018), its state filled by splitmix64 from
// one 64-bit seed (as its authors recommend).
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t Next();
  // Uniform in [0, 1), 53 random bits.
  double Uniform();
  // Uniform in [0, n); n > 0. (Modulo bias below 2^-40 for the small n used.)
  size_t Below(size_t n);
  // Approximately standard normal: the sum of 12 uniforms minus 6 (Irwin-Hall;
  // mean 0, variance exactly 1, tails cut at +-6). Only additions of exact
  // doubles, so the value is the same on every libm, unlike Box-Muller's log
  // and cos.
  double Normal();

 private:
  uint64_t s_[4];
};

// splitmix64: one step, also used to derive independent seeds from one seed.
// `state` must not be null (no Status to report it).
uint64_t SplitMix64(uint64_t* state);

}  // namespace model
}  // namespace attnkit

#endif  // ATTNKIT_MODEL_RANDOM_H_
