#include "attnkit/status.h"

#include <iterator>

#include "src/core/internal.h"

namespace attnkit {

const char* ErrorCodeName(ErrorCode code) {
  // In the order of ErrorCode.
  static constexpr const char* kNames[] = {"ok",         "invalid_argument", "shape_mismatch",
                                           "non_finite", "overflow",         "capacity"};
  static_assert(std::size(kNames) == static_cast<size_t>(ErrorCode::kCapacity) + 1,
                "a name per error code");
  return internal::EnumName(kNames, code);
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(ErrorCodeName(code_)) + ": " + message_;
}

}  // namespace attnkit
