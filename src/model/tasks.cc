#include "attnkit/tasks.h"
#include "src/core/validate.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

namespace attnkit {
namespace model {

const char* TaskName(TaskKind kind) {
  // In the order of TaskKind.
  static constexpr const char* kNames[] = {"copy", "reverse", "sort", "induction", "majority"};
  static_assert(std::size(kNames) == static_cast<size_t>(TaskKind::kMajority) + 1,
                "a name per task");
  return internal::EnumName(kNames, kind);
}

size_t TaskSeqLen(const TaskConfig& task) {
  switch (task.kind) {
    case TaskKind::kInduction:
      return 2 * task.length + task.padding;
    case TaskKind::kMajority:
      return task.length + 1;
    default:
      return 2 * task.length;
  }
}

size_t TaskMinVocab(const TaskConfig& task) {
  // n distinct symbols, at least one filler symbol, and the separator.
  if (task.kind == TaskKind::kInduction) return task.length + 2;
  return 3;
}

Status CheckTask(const TaskConfig& task, const ModelConfig* model) {
  const std::string name = TaskName(task.kind);
  if (name == "unknown") return Status(ErrorCode::kInvalidArgument, "kind", "not a task");
  const size_t min_length = task.kind == TaskKind::kInduction ? 2 : 1;
  if (task.length < min_length) {
    return Status(ErrorCode::kInvalidArgument, "length",
                  "the " + name + " task needs length >= " + std::to_string(min_length) + ", got " +
                      std::to_string(task.length));
  }
  if (task.length > (1u << 20) || task.padding > (1u << 20)) {
    return Status(ErrorCode::kInvalidArgument, task.length > (1u << 20) ? "length" : "padding",
                  "at most 2^20");
  }
  if (task.padding != 0 && task.kind != TaskKind::kInduction) {
    return Status(ErrorCode::kInvalidArgument, "padding",
                  "only the induction task takes padding, got " + std::to_string(task.padding) +
                      " for " + name);
  }
  const size_t min_vocab = TaskMinVocab(task);
  if (task.vocab_size < min_vocab) {
    return Status(ErrorCode::kInvalidArgument, "vocab_size",
                  "the " + name + " task of length " + std::to_string(task.length) +
                      " needs at least " + std::to_string(min_vocab) + " tokens, got " +
                      std::to_string(task.vocab_size));
  }
  if (task.vocab_size > (1u << 24)) {
    return Status(ErrorCode::kInvalidArgument, "vocab_size", "at most 2^24");
  }
  if (model) {
    if (model->vocab_size != task.vocab_size) {
      return Status(ErrorCode::kShapeMismatch, "vocab_size",
                    "the task's " + std::to_string(task.vocab_size) + " differs from the model's " +
                        std::to_string(model->vocab_size));
    }
    if (TaskSeqLen(task) > model->max_seq_len) {
      return Status(ErrorCode::kInvalidArgument, "max_seq_len",
                    "the " + name + " task's sequence of " + std::to_string(TaskSeqLen(task)) +
                        " tokens is longer than the model's " + std::to_string(model->max_seq_len) +
                        " positions");
    }
  }
  return Status::Ok();
}

Status TaskGenerator::Init(const TaskConfig& task, uint64_t seed) {
  ATTNKIT_RETURN_IF_ERROR(CheckTask(task, nullptr));
  task_ = task;
  rng_ = Rng(seed);
  return Status::Ok();
}

void TaskGenerator::Sequence(int32_t* tokens, int32_t* targets) {
  const size_t n = task_.length, T = TaskSeqLen(task_);
  const size_t symbols = task_.vocab_size - 1;
  // The full sequence has T + 1 tokens; the model sees the first T.
  std::vector<int32_t> s(T + 1);
  std::vector<bool> scored(T + 1, false);  // scored[i]: token i is a target
  auto symbol = [&] { return int32_t(1 + rng_.Below(symbols)); };
  switch (task_.kind) {
    case TaskKind::kCopy:
    case TaskKind::kReverse:
    case TaskKind::kSort: {
      for (size_t i = 0; i < n; ++i) s[i] = symbol();
      s[n] = kSeparator;
      std::vector<int32_t> answer(s.begin(), s.begin() + n);
      if (task_.kind == TaskKind::kReverse) std::reverse(answer.begin(), answer.end());
      if (task_.kind == TaskKind::kSort) std::sort(answer.begin(), answer.end());
      for (size_t i = 0; i < n; ++i) {
        s[n + 1 + i] = answer[i];
        scored[n + 1 + i] = true;
      }
      break;
    }
    case TaskKind::kInduction: {
      // n distinct symbols by a partial Fisher-Yates shuffle.
      std::vector<int32_t> pool(symbols);
      for (size_t i = 0; i < symbols; ++i) pool[i] = int32_t(1 + i);
      for (size_t i = 0; i < n; ++i) std::swap(pool[i], pool[i + rng_.Below(symbols - i)]);
      // A segment of m symbols at a random offset p: neither where the repeat
      // starts nor how far back its first occurrence lies is fixed.
      const size_t m_min = std::max<size_t>(2, (n + 1) / 2);
      const size_t m = m_min + rng_.Below(n - m_min + 1);
      const size_t p = rng_.Below(task_.padding + 2 * (n - m) + 1);
      auto filler = [&] { return pool[m + rng_.Below(symbols - m)]; };
      size_t at = 0;
      for (size_t i = 0; i < p; ++i) s[at++] = filler();
      for (size_t i = 0; i < m; ++i) s[at++] = pool[i];
      for (size_t i = 0; i < m; ++i) {
        scored[at] = i > 0;
        s[at++] = pool[i];
      }
      while (at < T + 1) s[at++] = filler();
      break;
    }
    case TaskKind::kMajority: {
      std::vector<size_t> count(symbols + 1);
      for (;;) {
        std::fill(count.begin(), count.end(), 0);
        for (size_t i = 0; i < n; ++i) ++count[size_t(s[i] = symbol())];
        const size_t best = *std::max_element(count.begin(), count.end());
        if (std::count(count.begin(), count.end(), best) == 1) {
          s[n] = kSeparator;
          s[n + 1] = int32_t(std::max_element(count.begin(), count.end()) - count.begin());
          scored[n + 1] = true;
          break;
        }
      }
      break;
    }
  }
  for (size_t t = 0; t < T; ++t) {
    tokens[t] = s[t];
    targets[t] = scored[t + 1] ? s[t + 1] : -1;
  }
}

Status TaskGenerator::Next(size_t batch, Batch* out) {
  ATTNKIT_RETURN_IF_ERROR(internal::CheckPointer("out", out));
  if (batch == 0) return Status(ErrorCode::kInvalidArgument, "batch", "must be >= 1, got 0");
  if (task_.vocab_size == 0) return Status(ErrorCode::kInvalidArgument, "task", "not initialised");
  const size_t T = TaskSeqLen(task_);
  out->batch = batch;
  out->seq_len = T;
  out->tokens.assign(batch * T, 0);
  out->targets.assign(batch * T, -1);
  for (size_t b = 0; b < batch; ++b) Sequence(&out->tokens[b * T], &out->targets[b * T]);
  return Status::Ok();
}

}  // namespace model
}  // namespace attnkit
