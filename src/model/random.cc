#include "attnkit/random.h"

namespace attnkit {
namespace model {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Rng::Rng(uint64_t seed) {
  for (uint64_t& s : s_) s = SplitMix64(&seed);
}

static inline uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t Rng::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

double Rng::Uniform() { return double(Next() >> 11) * (1.0 / 9007199254740992.0); }

size_t Rng::Below(size_t n) { return size_t(Next() % uint64_t(n)); }

double Rng::Normal() {
  // Each uniform has 53 bits: the sum of 12 is exact in a double.
  double sum = 0;
  for (int i = 0; i < 12; ++i) sum += Uniform();
  return sum - 6.0;
}

}  // namespace model
}  // namespace attnkit
