// attnkit: a small fixed pool of worker threads for the attention operations.
//
// Give one to AttentionOptions::pool (or DecodeOptions::pool) and the work of a
// call is split over its threads: rows of the projections, then (batch item,
// head, block of 64 queries) tasks of the fused kernel, or (batch item, head,
// chunk of 256 keys) tasks when decoding. Every split is fixed by the shapes,
// not by the thread count, so results are bit-identical with any pool or none.
//
// A pool runs one operation at a time: calls from several threads that share
// a pool take turns. Without thread support (WebAssembly built without
// -pthread) a pool has one thread, the caller's.
#ifndef ATTNKIT_THREAD_POOL_H_
#define ATTNKIT_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
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
  void Drain(size_t thread);  // takes tasks until none are left

  std::mutex run_mutex_;          // one Run at a time
  std::mutex mutex_;              // guards everything below but next_task_
  std::condition_variable wake_;  // workers: a new generation or stop
  std::condition_variable done_;  // Run: the last worker finished
  const std::function<void(size_t, size_t)>* fn_ = nullptr;
  size_t num_tasks_ = 0;
  std::atomic<size_t> next_task_{0};
  size_t generation_ = 0;  // one per Run that uses the workers
  size_t busy_ = 0;        // workers not yet finished with this generation
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace attnkit

#endif  // ATTNKIT_THREAD_POOL_H_
