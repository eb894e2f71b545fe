// attnkit: which SIMD targets this library was compiled for and runs on, and
// forcing one (ops.h). HWY_TARGETS is the same in every translation unit of
// the library, so these reflect the targets dispatch.cc compiles.
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "attnkit/ops.h"
#include "hwy/highway.h"
#include "src/core/validate.h"

namespace attnkit {
namespace {

// Compiled and supported, best first: computed once, before anything is
// forced (while forced, Highway's own list holds only the forced target).
const std::vector<int64_t>& Unforced() {
  static const std::vector<int64_t> targets = [] {
#if HWY_HAVE_RUNTIME_DISPATCH
    return hwy::SupportedAndGeneratedTargets();
#else
    return std::vector<int64_t>{HWY_STATIC_TARGET};
#endif
  }();
  return targets;
}

// Constant-initialised: dispatch.cc may force from its static initialiser.
int64_t forced = 0;
// What reading ATTNKIT_TARGET gave (a function's static: constructed on first
// use, whichever translation unit's initialiser comes first).
Status& EnvironmentResult() {
  static Status status;
  return status;
}

std::string Upper(const std::string& s) {
  std::string u = s;
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

// "AVX3, AVX2, SSE4" (the available targets, for errors).
std::string AvailableNames() {
  std::string names;
  for (int64_t t : Unforced()) names += (names.empty() ? "" : ", ") + std::string(targets::Name(t));
  return names;
}

// The target of Available() called `name` in any case, or 0.
int64_t TargetNamed(const std::string& name) {
  for (int64_t t : Unforced()) {
    if (Upper(targets::Name(t)) == Upper(name)) return t;
  }
  return 0;
}

Status ForceNamed(const char* parameter, const std::string& name) {
  const int64_t t = TargetNamed(name);
  if (t == 0) {
    return Status(ErrorCode::kInvalidArgument, parameter,
                  "expected a target this build compiled and this CPU supports (" +
                      AvailableNames() + "), got \"" + name + "\"");
  }
  return targets::Force(t);
}

}  // namespace

namespace targets {

std::vector<int64_t> Available() { return Unforced(); }

const char* Name(int64_t target) { return hwy::TargetName(target); }

int64_t Current() {
  if (forced != 0) return forced;
  return Unforced().front();
}

int64_t Forced() { return forced; }

Status Force(int64_t target) {
  const std::vector<int64_t>& available = Unforced();
  if (target != 0) {
    bool found = false;
    for (int64_t t : available) found |= t == target;
    if (!found) {
      return Status(ErrorCode::kInvalidArgument, "target",
                    "expected a target this build compiled and this CPU supports (" +
                        AvailableNames() + "), got " + std::string(Name(target)) + " (" +
                        std::to_string(target) + ")");
    }
  }
#if HWY_HAVE_RUNTIME_DISPATCH
  hwy::SetSupportedTargetsForTest(target);
#endif
  forced = target;
  return Status::Ok();
}

Status ForceByName(const char* name) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("name", name));
  return ForceNamed("name", name);
}

Status EnvironmentStatus() { return EnvironmentResult(); }

void ForceForTest(int64_t target) { (void)Force(target); }

}  // namespace targets

namespace internal {

Status ForceFromEnvironment() {
  const char* value = std::getenv("ATTNKIT_TARGET");
  EnvironmentResult() =
      value == nullptr || *value == '\0' ? Status::Ok() : ForceNamed("ATTNKIT_TARGET", value);
  return EnvironmentResult();
}

}  // namespace internal
}  // namespace attnkit
