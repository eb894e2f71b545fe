// attnkit model: toy tasks with seeded generators. Token 0 is the separator;
// the task's symbols are tokens 1 .. vocab_size - 1. A sequence of the task is
// fed to the model without its last token and each position predicts the
// next; only the positions named below are scored.
//   copy      x_1..x_n SEP x_1..x_n         scored: the n tokens after SEP
//   reverse   x_1..x_n SEP x_n..x_1         scored: the n tokens after SEP
//   sort      x_1..x_n SEP sorted(x)        scored: the n tokens after SEP
//   induction f_1..f_p y_1..y_m y_1..y_m g_1..g_q   (2m + p + q = 2n + padding + 1)
//             m uniform in [max(2, ceil(n/2)), n], p uniform in
//             [0, padding + 2(n - m)]; y distinct, fillers f, g never one of
//             the y; scored: y_2..y_m of the repeat, each predictable only
//             from the token after the previous occurrence of the current
//             token (y_1 of the repeat follows y_m, which says nothing about
//             it). The random length and offset keep a fixed-position rule
//             (attend n back) from solving it: only an induction circuit does.
//   majority  x_1..x_n SEP m               scored: m, the most frequent
//             symbol of x (a unique maximum: ties are redrawn)
// x are drawn uniformly (with replacement) from the symbols.
// Metric of every task: accuracy over the scored positions (Metrics), and the
// share of sequences with every scored position right.
#ifndef ATTNKIT_MODEL_TASKS_H_
#define ATTNKIT_MODEL_TASKS_H_

#include <cstddef>
#include <cstdint>

#include "attnkit/model.h"
#include "attnkit/random.h"
#include "attnkit/status.h"

namespace attnkit {
namespace model {

enum class TaskKind { kCopy, kReverse, kSort, kInduction, kMajority };
// "copy", "reverse", "sort", "induction", "majority".
const char* TaskName(TaskKind kind);

struct TaskConfig {
  TaskKind kind = TaskKind::kCopy;
  size_t length = 0;      // n, >= 1 (induction: >= 2)
  size_t vocab_size = 0;  // the model's vocabulary
  size_t padding = 0;     // induction only: filler tokens around the segment
};

constexpr int32_t kSeparator = 0;

// The model's input length for the task (the sequence minus its last token):
// copy, reverse, sort 2n; induction 2n + padding; majority n + 1.
size_t TaskSeqLen(const TaskConfig& task);
// The smallest vocabulary (with the separator) the task needs: 3 (two
// symbols) for copy, reverse, sort and majority; induction n + 2 (n distinct
// symbols, a filler symbol, the separator).
size_t TaskMinVocab(const TaskConfig& task);
// Checks the task ("length", "vocab_size", "padding") and, if model is not
// null, that it fits the model: vocab_size equal to the model's, sequence no
// longer than max_seq_len ("max_seq_len").
Status CheckTask(const TaskConfig& task, const ModelConfig* model);

class TaskGenerator {
 public:
  Status Init(const TaskConfig& task, uint64_t seed);
  const TaskConfig& task() const { return task_; }
  // The next `batch` sequences (batch >= 1), from the generator's stream.
  Status Next(size_t batch, Batch* out);

 private:
  void Sequence(int32_t* tokens, int32_t* targets);
  TaskConfig task_;
  Rng rng_{0};
};

}  // namespace model
}  // namespace attnkit

#endif  // ATTNKIT_MODEL_TASKS_H_
