#include "attnkit/thread_pool.h"

#include <system_error>

namespace attnkit {

// WebAssembly without -pthread cannot start threads (std::thread would abort).
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define ATTNKIT_HAVE_THREADS 0
#else
#define ATTNKIT_HAVE_THREADS 1
#endif

size_t ThreadPool::MaxThreads() {
#if ATTNKIT_HAVE_THREADS
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
#else
  return 1;
#endif
}

ThreadPool::ThreadPool(size_t num_threads) {
  if (num_threads == 0) num_threads = MaxThreads();
#if ATTNKIT_HAVE_THREADS
  for (size_t t = 1; t < num_threads; ++t) {
#if defined(__cpp_exceptions)
    try {
      workers_.emplace_back(&ThreadPool::WorkerLoop, this, t);
    } catch (const std::system_error&) {
      break;  // keep the threads we have
    }
#else
    workers_.emplace_back(&ThreadPool::WorkerLoop, this, t);
#endif
  }
#endif
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::Run(size_t num_tasks, const std::function<void(size_t, size_t)>& fn) {
  if (num_tasks == 0) return;
  std::lock_guard<std::mutex> run_lock(run_mutex_);
  if (workers_.empty() || num_tasks == 1) {
    for (size_t task = 0; task < num_tasks; ++task) fn(task, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    num_tasks_ = num_tasks;
    next_task_.store(0, std::memory_order_relaxed);
    busy_ = workers_.size();
    ++generation_;
  }
  wake_.notify_all();
  Drain(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return busy_ == 0; });
  fn_ = nullptr;
}

void ThreadPool::Drain(size_t thread) {
  for (;;) {
    const size_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= num_tasks_) return;
    (*fn_)(task, thread);
  }
}

void ThreadPool::WorkerLoop(size_t thread) {
  size_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    lock.unlock();
    Drain(thread);  // fn_ and num_tasks_ were set before generation_ changed
    lock.lock();
    if (--busy_ == 0) done_.notify_one();
  }
}

}  // namespace attnkit
