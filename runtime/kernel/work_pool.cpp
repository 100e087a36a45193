#include "runtime/kernel/work_pool.h"

#include <chrono>
#include <new>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EMBER_CPU_RELAX() _mm_pause()
#else
#define EMBER_CPU_RELAX() ((void)0)
#endif

namespace ember {
namespace {

// How long a thread spins before it sleeps: a worker for the next job, the
// caller for the last tasks. Kernels issue parallel calls microseconds apart,
// and waking a sleeping thread costs about as much again; spinning longer
// only burns a core that another process may need.
constexpr std::chrono::microseconds kSpin{100};

// Spins until `done()` or kSpin passed; true when done.
template <typename F>
bool spin_until(const F& done) {
  const auto start = std::chrono::steady_clock::now();
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    EMBER_CPU_RELAX();
    if ((i & 63) == 0 && std::chrono::steady_clock::now() - start > kSpin) return done();
  }
}

}  // namespace

WorkPool* WorkPool::create(size_t threads) {
  if (threads < 2) return nullptr;
  auto* pool = new (std::nothrow) WorkPool();
  if (pool == nullptr) return nullptr;
  const size_t workers = threads - 1 < kMaxWorkers ? threads - 1 : kMaxWorkers;
  for (size_t i = 0; i < workers; ++i) {
    if (pthread_create(&pool->threads_[i], nullptr, worker_main, pool) != 0) break;
    ++pool->workers_;
  }
  if (pool->workers_ == 0) {
    delete pool;
    return nullptr;
  }
  return pool;
}

void WorkPool::destroy(WorkPool* pool) {
  if (pool == nullptr) return;
  pool->stop_.store(true, std::memory_order_release);
  pool->job_.fetch_add(1, std::memory_order_release);
  pool->job_.notify_all();
  for (size_t i = 0; i < pool->workers_; ++i) pthread_join(pool->threads_[i], nullptr);
  delete pool;
}

void* WorkPool::worker_main(void* self) {
  auto* pool = static_cast<WorkPool*>(self);
  // The number the pool started with, not the current one: a thread that
  // starts after destroy() began must still see that change.
  uint32_t seen = 0;
  for (;;) {
    uint32_t job = seen;
    auto changed = [&] {
      job = pool->job_.load(std::memory_order_acquire);
      return job != seen || pool->stop_.load(std::memory_order_acquire);
    };
    if (!spin_until(changed)) {
      while (!changed()) pool->job_.wait(job, std::memory_order_acquire);
    }
    if (pool->stop_.load(std::memory_order_acquire)) return nullptr;
    seen = job;
    pool->work(job);
  }
}

void WorkPool::work(uint32_t job) {
  Job& j = jobs_[job & 1];
  uint64_t v = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(v >> 32) != job) return;  // A newer job: this one is done.
    const uint32_t index = static_cast<uint32_t>(v);
    // n may be another job's if the slot is being rewritten; the claim below
    // then fails, because the counter no longer holds `job`.
    if (index >= j.n.load(std::memory_order_relaxed)) return;
    if (!claim_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      continue;
    }
    // Claimed: the job cannot finish (nor its slot change) before this task does.
    j.task.load(std::memory_order_relaxed)(j.context.load(std::memory_order_relaxed), index);
    if (j.pending.fetch_sub(1, std::memory_order_acq_rel) == 1) j.pending.notify_all();
    v = claim_.load(std::memory_order_acquire);
  }
}

void WorkPool::run_chunk(ParallelTask task, void* context, uint32_t n) {
  const uint32_t job = job_.load(std::memory_order_relaxed) + 1;
  Job& j = jobs_[job & 1];
  j.task.store(task, std::memory_order_relaxed);
  j.context.store(context, std::memory_order_relaxed);
  j.n.store(n, std::memory_order_relaxed);
  j.pending.store(n, std::memory_order_relaxed);
  claim_.store(static_cast<uint64_t>(job) << 32, std::memory_order_release);
  job_.store(job, std::memory_order_release);
  job_.notify_all();
  work(job);
  // Tasks other threads claimed may still run.
  auto done = [&] { return j.pending.load(std::memory_order_acquire) == 0; };
  if (!spin_until(done)) {
    for (uint32_t left; (left = j.pending.load(std::memory_order_acquire)) != 0;) {
      j.pending.wait(left, std::memory_order_acquire);
    }
  }
}

void WorkPool::run(ParallelTask task, void* context, size_t n) {
  if (n <= 1 || busy_.exchange(true, std::memory_order_acquire)) {
    // One task, or another thread's job in flight: run here, without waiting.
    for (size_t i = 0; i < n; ++i) task(context, i);
    return;
  }
  // The counter holds 32-bit indices (kernels ask for a few tasks per thread).
  constexpr size_t kMaxTasks = size_t{1} << 31;
  const size_t pooled = n < kMaxTasks ? n : kMaxTasks;
  run_chunk(task, context, static_cast<uint32_t>(pooled));
  for (size_t i = pooled; i < n; ++i) task(context, i);
  busy_.store(false, std::memory_order_release);
}

}  // namespace ember
