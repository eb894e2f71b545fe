// attnkit: error reporting. The core never throws or aborts on bad input: every
// public operation returns a Status that the caller checks.
#ifndef ATTNKIT_STATUS_H_
#define ATTNKIT_STATUS_H_

#include <memory>
#include <string>

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
  Status(ErrorCode code, std::string parameter, std::string detail);

  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  ErrorCode code() const { return rep_ ? rep_->code : ErrorCode::kOk; }
  const std::string& parameter() const { return rep_ ? rep_->parameter : Empty(); }
  const std::string& detail() const { return rep_ ? rep_->detail : Empty(); }
  const std::string& message() const { return rep_ ? rep_->message : Empty(); }
  // "shape_mismatch: W_Q: expected ..." or "ok".
  std::string ToString() const;

 private:
  struct Rep {
    ErrorCode code;
    std::string parameter, detail, message;
  };
  static const std::string& Empty();
  // Null when OK: an OK Status is one pointer that is never followed, so the
  // checks a small call makes by the dozen cost nothing when they pass.
  std::shared_ptr<const Rep> rep_;
};

}  // namespace attnkit

// Returns early from the enclosing function if `expr` is not OK.
#define ATTNKIT_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::attnkit::Status attnkit_status_ = (expr);        \
    if (!attnkit_status_.ok()) return attnkit_status_; \
  } while (0)

#endif  // ATTNKIT_STATUS_H_
