// attnkit: the backward of the heads of a multi-head call (MultiBackward,
// backward-inl.h) for every target, dispatched by backward.cc (see
// backward-kernels-inl.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/core/backward_heads.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "src/core/backward-inl.h"
#include "src/core/backward-kernels-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

bool MultiHeadBackwardT(const internal::MultiGradTask& job) { return MultiBackward(job); }

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();
