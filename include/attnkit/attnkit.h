// attnkit: the whole public C++ API. Float32, row-major; every operation
// returns a Status (see status.h) and never throws or aborts on bad input.
#ifndef ATTNKIT_ATTNKIT_H_
#define ATTNKIT_ATTNKIT_H_

#include "attnkit/attention.h"       // IWYU pragma: export
#include "attnkit/backward.h"        // IWYU pragma: export
#include "attnkit/backward_trace.h"  // IWYU pragma: export
#include "attnkit/kv_cache.h"        // IWYU pragma: export
#include "attnkit/matrix.h"          // IWYU pragma: export
#include "attnkit/multihead.h"       // IWYU pragma: export
#include "attnkit/ops.h"             // IWYU pragma: export
#include "attnkit/packed_weights.h"  // IWYU pragma: export
#include "attnkit/status.h"          // IWYU pragma: export
#include "attnkit/thread_pool.h"     // IWYU pragma: export

#endif  // ATTNKIT_ATTNKIT_H_
