// attnkit: the backward's per-target entry points, declared once per target
// (toggled include guard) for the dispatch tables of backward.cc. Each is
// defined in a translation unit of its own, compiled for every target, so
// that the three compile in parallel: the backward of one head
// (backward_head.cc), of the heads of a multi-head call (backward_heads.cc)
// and of a head that is one tile (backward_small.cc). Their steps are those
// of backward-inl.h.

#if defined(ATTNKIT_BACKWARD_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ATTNKIT_BACKWARD_KERNELS_INL_H_
#undef ATTNKIT_BACKWARD_KERNELS_INL_H_
#else
#define ATTNKIT_BACKWARD_KERNELS_INL_H_
#endif

#include "hwy/highway.h"
#include "src/core/plan.h"

HWY_BEFORE_NAMESPACE();
namespace attnkit {
namespace HWY_NAMESPACE {

// Backward (backward-inl.h): dQ, dK, dV of one head from its task's layout
// and workspace. Returns false if a gradient overflowed.
bool AttentionBackwardT(const internal::GradTask& task);

// MultiBackward: every head of a multi-head call, chunk by chunk. Returns
// false if a gradient overflowed.
bool MultiHeadBackwardT(const internal::MultiGradTask& job);

// The lean path of a small backward (task.small): its inputs checked finite
// (lse may hold -inf), then SmallBackward, in one dispatch.
internal::SmallResult SmallBackwardT(const internal::GradTask& task);

}  // namespace HWY_NAMESPACE
}  // namespace attnkit
HWY_AFTER_NAMESPACE();

#endif  // ATTNKIT_BACKWARD_KERNELS_INL_H_
