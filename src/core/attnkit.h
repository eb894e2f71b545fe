// attnkit: the whole public C++ API. Float32, row-major; every operation
// returns a Status (see status.h) and never throws or aborts on bad input.
#ifndef ATTNKIT_ATTNKIT_H_
#define ATTNKIT_ATTNKIT_H_

#include "src/core/attention.h"       // IWYU pragma: export
#include "src/core/backward.h"        // IWYU pragma: export
#include "src/core/backward_trace.h"  // IWYU pragma: export
#include "src/core/kv_cache.h"        // IWYU pragma: export
#include "src/core/matrix.h"          // IWYU pragma: export
#include "src/core/multihead.h"       // IWYU pragma: export
#include "src/core/ops.h"             // IWYU pragma: export
#include "src/core/packed_weights.h"  // IWYU pragma: export
#include "src/core/status.h"          // IWYU pragma: export
#include "src/core/thread_pool.h"     // IWYU pragma: export

#endif  // ATTNKIT_ATTNKIT_H_
