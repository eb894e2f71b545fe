// attnkit: a small fixed pool of worker threads for the attention operations.
//
// Give one to AttentionOptions::pool (or DecodeOptions::pool) and the work of a
// call is split over its threads: rows of the projections, then (batch item,
// head, block of 64 queries) tasks of the fused kernel, or (batch item, head,
// chunk of 256 keys) tasks when decoding. Every split is fixed by the shapes,
// not by the thread count, so results are bit-identical with any pool or none.
//
// A pool runs one operation at a time: calls from several threads that share
// a pool take turns. Between calls its workers poll for the next one for a
// short while before they sleep, so that the many short calls of a training
// step reach them without a thread's wake-up each; a call does not wait for a
// worker that has not started (the caller takes the tasks left). Without
// thread support (WebAssembly built without -pthread) a pool has one thread,
// the caller's.
#ifndef ATTNKIT_THREAD_POOL_H_
#define ATTNKIT_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace attnkit {

class ThreadPool {
 public:
  // The threads this machine runs at once (1 if unknown or without threads).
  static size_t MaxThreads();

  // `num_threads` counts the caller, which works too: 1 = no workers. 0 means
  // MaxThreads(). If the system refuses to start a thread, the pool keeps the
  // ones it has; num_threads() says how many.
  explicit ThreadPool(size_t num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t num_threads() const { return workers_.size() + 1; }

  // Calls fn(task, thread) once for every task in [0, num_tasks), spread over
  // the threads (thread in [0, num_threads()), 0 = the caller); returns when
  // all are done. fn must not throw or call Run on the same pool.
  void Run(size_t num_tasks, const std::function<void(size_t, size_t)>& fn);

 private:
  void WorkerLoop(size_t thread);
  // Takes tasks of the current Run until none are left; returns the
  // generation they belonged to.
  uint64_t Drain(size_t thread);

  // One word says what to do: the Run's generation, its task count and the
  // next task to take, so that a thread takes a task and learns which Run it
  // belongs to in one atomic step (a thread that wakes late cannot take a
  // task of one Run with the count of another).
  static constexpr unsigned kTaskBits = 20;
  static constexpr uint64_t kTaskMask = (uint64_t{1} << kTaskBits) - 1;
  // The most tasks one word holds: Run hands out more in rounds. Below the
  // mask, so that the failed takes past the end never carry into the count.
  static constexpr size_t kMaxRoundTasks = size_t{1} << (kTaskBits - 1);

  std::mutex run_mutex_;          // one Run at a time
  std::mutex mutex_;              // sleeping and waking (the words are atomic)
  std::condition_variable wake_;  // workers: a new generation or stop
  std::condition_variable done_;  // Run: the last task finished
  const std::function<void(size_t, size_t)>* fn_ = nullptr;
  size_t first_task_ = 0;            // the round's first task (Run's rounds)
  std::atomic<uint64_t> work_{0};    // generation << 2 kTaskBits | count << kTaskBits | next
  std::atomic<size_t> finished_{0};  // tasks of this round finished
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

}  // namespace attnkit

#endif  // ATTNKIT_THREAD_POOL_H_
