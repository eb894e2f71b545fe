// attnkit: the backward of one head (Backward, backward-inl.h) for every
// target, dispatched by backward.cc (see backward-kernels-inl.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/core/backward_head.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "src/core/backward-inl.h"
#include "src/core/backward-kernels-inl.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

bool AttentionBackwardT(const internal::GradTask& task) { return Backward(task); }

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();
