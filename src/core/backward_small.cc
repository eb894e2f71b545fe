// attnkit: the backward of a head that is one tile (SmallBackward,
// backward-inl.h) for every target, dispatched by backward.cc (see
// backward-kernels-inl.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/core/backward_small.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "src/core/backward-inl.h"
#include "src/core/backward-kernels-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

internal::SmallResult SmallBackwardT(const internal::GradTask& task) {
  const internal::HeadTask& t = task.head;
  if (!AllFiniteFlat(t.Q) || !AllFiniteFlat(t.K) || !AllFiniteFlat(t.V) ||
      !AllFiniteFlat(task.dO) || !AllFiniteFlat(t.out) || !AllFiniteFlat<true>(t.lse)) {
    return internal::SmallResult::kNonFiniteInput;
  }
  return SmallBackward(task) ? internal::SmallResult::kOk : internal::SmallResult::kOverflow;
}

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();
