#include "attnkit/status.h"

namespace attnkit {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kShapeMismatch:
      return "shape_mismatch";
    case ErrorCode::kNonFinite:
      return "non_finite";
    case ErrorCode::kOverflow:
      return "overflow";
    case ErrorCode::kCapacity:
      return "capacity";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(ErrorCodeName(code_)) + ": " + message_;
}

}  // namespace attnkit
