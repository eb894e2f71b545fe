#include "attnkit/status.h"

#include <iterator>
#include <utility>

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

Status::Status(ErrorCode code, std::string parameter, std::string detail) {
  if (code == ErrorCode::kOk) return;
  std::string message = parameter + ": " + detail;
  rep_ = std::make_shared<const Rep>(
      Rep{code, std::move(parameter), std::move(detail), std::move(message)});
}

const std::string& Status::Empty() {
  static const std::string empty;
  return empty;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(ErrorCodeName(rep_->code)) + ": " + rep_->message;
}

}  // namespace attnkit
