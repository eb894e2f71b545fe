// attnkit: error reporting. The core never throws or aborts on bad input: every
// public operation returns a Status that the caller checks.
#ifndef ATTNKIT_STATUS_H_
#define ATTNKIT_STATUS_H_

#include <string>
#include <utility>

namespace attnkit {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // a size, option or pointer is not acceptable
  kShapeMismatch,    // shapes of two parameters do not fit together
  kNonFinite,        // NaN or +-Inf where only finite values are allowed
  kOverflow,         // a size product overflows, or a result overflows float
  kCapacity,         // the KV cache is full
};

// Returns a stable lower-case name such as "shape_mismatch".
const char* ErrorCodeName(ErrorCode code);

// The result of a public operation. An error names the parameter at fault (as
// the C++ signature names it) and says what was expected and what was given:
//   parameter() "W_Q", detail() "expected 4 rows (d_model of X), got 3",
//   message() "W_Q: expected 4 rows (d_model of X), got 3".
// Bindings read parameter() and detail() apart: no caller parses message().
class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(ErrorCode code, std::string parameter, std::string detail)
      : code_(code), parameter_(std::move(parameter)), detail_(std::move(detail)) {
    message_ = parameter_ + ": " + detail_;
  }

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& parameter() const { return parameter_; }
  const std::string& detail() const { return detail_; }
  const std::string& message() const { return message_; }
  // "shape_mismatch: W_Q: expected ..." or "ok".
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string parameter_, detail_, message_;
};

}  // namespace attnkit

// Returns early from the enclosing function if `expr` is not OK.
#define ATTNKIT_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::attnkit::Status attnkit_status_ = (expr);        \
    if (!attnkit_status_.ok()) return attnkit_status_; \
  } while (0)

#endif  // ATTNKIT_STATUS_H_
