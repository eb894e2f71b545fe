// attnkit: which SIMD targets this library was compiled for and runs on
// (ops.h). HWY_TARGETS is the same in every translation unit of the library,
// so these reflect the targets dispatch.cc compiles.
#include <cstdint>
#include <vector>

#include "attnkit/ops.h"
#include "hwy/highway.h"

namespace attnkit {
namespace targets {

std::vector<int64_t> Available() {
#if HWY_HAVE_RUNTIME_DISPATCH
  // Computed here so that it reflects this library's HWY_TARGETS.
  return hwy::SupportedAndGeneratedTargets();
#else
  return {HWY_STATIC_TARGET};
#endif
}

const char* Name(int64_t target) { return hwy::TargetName(target); }

int64_t Current() {
#if HWY_HAVE_RUNTIME_DISPATCH
  const int64_t bits = hwy::SupportedTargets() & HWY_TARGETS;
  return bits & -bits;  // the lowest bit is the best target
#else
  return HWY_STATIC_TARGET;
#endif
}

void ForceForTest(int64_t target) {
#if HWY_HAVE_RUNTIME_DISPATCH
  hwy::SetSupportedTargetsForTest(target);
#else
  (void)target;
#endif
}

}  // namespace targets
}  // namespace attnkit
