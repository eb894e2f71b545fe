#include "attnkit/thread_pool.h"

#include "src/core/internal.h"

#include <algorithm>
#include <chrono>
#include <system_error>

namespace attnkit {

// WebAssembly without -pthread cannot start threads (std::thread would abort).
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define ATTNKIT_HAVE_THREADS 0
#else
#define ATTNKIT_HAVE_THREADS 1
#endif

namespace {

// How long a thread polls for what it waits for (a worker: the next Run; Run:
// its last task) before it sleeps on a condition variable. A training step
// calls its pool many times with little work between the calls; a thread
// woken through the condition variable takes far longer to start than one that
// polls, and a worker's wake-up would cost every call that. Bounded, so that
// an idle pool sleeps.
constexpr std::chrono::microseconds kPollTime{200};

// Tells the CPU that this is a polling loop (frees the core's resources for
// its sibling thread, and saves power).
inline void Relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls ready() for up to kPollTime; returns its last value.
template <class Ready>
bool Poll(const Ready& ready) {
  const auto end = std::chrono::steady_clock::now() + kPollTime;
  for (;;) {
    // The clock is read once per 64 polls (it costs more than a poll).
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      Relax();
    }
    if (std::chrono::steady_clock::now() >= end) return ready();
  }
}

}  // namespace

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
    stop_.store(true);
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
  fn_ = &fn;
  for (size_t first = 0; first < num_tasks; first += kMaxRoundTasks) {
    const size_t count = std::min(kMaxRoundTasks, num_tasks - first);
    first_task_ = first;
    finished_.store(0, std::memory_order_relaxed);
    const uint64_t generation = (work_.load(std::memory_order_relaxed) >> (2 * kTaskBits)) + 1;
    {
      // Under the mutex, so that a worker deciding to sleep cannot miss it.
      std::lock_guard<std::mutex> lock(mutex_);
      // Release: fn_, first_task_ and finished_ are written before it.
      work_.store(generation << (2 * kTaskBits) | uint64_t(count) << kTaskBits,
                  std::memory_order_release);
    }
    wake_.notify_all();
    Drain(0);
    const auto all_finished = [&] { return finished_.load(std::memory_order_acquire) == count; };
    if (!Poll(all_finished)) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, all_finished);
    }
  }
  fn_ = nullptr;
}

uint64_t ThreadPool::Drain(size_t thread) {
  for (;;) {
    // Acquire: this word's fn_, first_task_ and count. They stay valid while
    // the task runs: Run returns only after every task it handed out.
    const uint64_t word = work_.fetch_add(1, std::memory_order_acquire);
    const uint64_t count = (word >> kTaskBits) & kTaskMask, task = word & kTaskMask;
    if (task >= count) return word >> (2 * kTaskBits);
    (*fn_)(first_task_ + size_t(task), thread);
    if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == count) {
      // The last task: wake Run if it sleeps (the mutex orders this after
      // its check of finished_).
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

void ThreadPool::WorkerLoop(size_t thread) {
  uint64_t seen = 0;  // the last generation this worker took part in
  const auto woken = [&] {
    return stop_.load(std::memory_order_acquire) ||
           work_.load(std::memory_order_acquire) >> (2 * kTaskBits) != seen;
  };
  for (;;) {
    if (!Poll(woken)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, woken);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = Drain(thread);
  }
}

namespace internal {

double& PoolCutoff() {
  static double cutoff = kPoolMinMultiplyAdds;
  return cutoff;
}

}  // namespace internal
}  // namespace attnkit
