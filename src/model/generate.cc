#include "src/model/generate.h"

namespace attnkit {
namespace model {

Status Generator::Start(const Model& model, const std::vector<int32_t>& prompt, uint64_t seed) {
  return Status(ErrorCode::kInvalidArgument, "model", "generation is not implemented yet");
}

Status Generator::Next(const SampleOptions& options, GeneratedToken* out) {
  return Status(ErrorCode::kInvalidArgument, "generator", "not started");
}

}  // namespace model
}  // namespace attnkit
