// One A/B round's Highway target: ATTNKIT_TARGET (a name such as AVX2) forces
// it for both sides, whether or not the library under test reads the variable
// itself (revisions before src/core/targets.cc's environment did not).
#include <strings.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "hwy/targets.h"

namespace {

struct ForceTargetFromEnvironment {
  ForceTargetFromEnvironment() {
    const char* name = std::getenv("ATTNKIT_TARGET");
    if (name == nullptr || *name == '\0') return;
    const int64_t supported = hwy::SupportedTargets();
    for (int bit = 0; bit < 63; ++bit) {
      const int64_t target = int64_t{1} << bit;
      if ((supported & target) != 0 && strcasecmp(hwy::TargetName(target), name) == 0) {
        hwy::SetSupportedTargetsForTest(target);
        return;
      }
    }
    std::fprintf(stderr, "ATTNKIT_TARGET: expected a target this CPU supports, got \"%s\"\n", name);
    std::exit(2);
  }
};

const ForceTargetFromEnvironment force_target;

}  // namespace
