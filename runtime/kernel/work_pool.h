// The fork-join pool Ember's own kernels run on (thread_pool_pthreadpool.cpp
// puts it behind ThreadPool; the XNNPACK delegate keeps a pthreadpool).
//
// Tasks are claimed one index at a time from a shared counter, and the
// calling thread claims too; `run` returns as soon as every task has
// finished. Unlike pthreadpool, the caller never waits for a worker that has
// not started: on a machine whose cores are busy with other processes, a
// worker the scheduler has not run yet claims nothing, and the caller does its
// share instead. (pthreadpool's caller waits until every worker has passed
// through each parallel call, and that wait is the scheduler's latency,
// milliseconds, paid at every call: ResNet-50 ran 10× slower on 2 threads than
// on 1 on a loaded host; BENCHMARKS.md.)
//
// Workers spin for a short while after a job (kernels issue parallel calls
// back to back) and then sleep on a futex (std::atomic::wait), so an idle
// pool costs no CPU. One job at a time: a second thread that calls `run`
// while a job is in flight runs its tasks itself, without waiting. `run` takes
// no lock and allocates nothing.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/kernel/thread_pool.h"

namespace ember {

class WorkPool {
 public:
  /// A pool running tasks on the caller plus `threads - 1` workers; null when
  /// a worker thread cannot be started. Load-time only (it allocates).
  static WorkPool* create(size_t threads);
  static void destroy(WorkPool* pool);

  /// Threads a job runs on, the caller included.
  size_t threads() const { return workers_ + 1; }

  /// Calls task(context, i) for every i in [0, n) and returns when all are
  /// done.
  void run(ParallelTask task, void* context, size_t n);

 private:
  // One job's description. A job's slot is rewritten two jobs later, only
  // after every task of it has finished; the fields are atomics because a
  // late worker may read a slot while it is rewritten (it then fails to
  // claim, since the counter holds another job's number).
  struct Job {
    std::atomic<ParallelTask> task{nullptr};
    std::atomic<void*> context{nullptr};
    std::atomic<uint32_t> n{0};
    std::atomic<uint32_t> pending{0};  // Tasks not finished yet.
  };
  static constexpr size_t kMaxWorkers = 255;

  WorkPool() = default;
  static void* worker_main(void* self);
  void run_chunk(ParallelTask task, void* context, uint32_t n);
  void work(uint32_t job);  // Claims and runs the tasks of `job` until none is left.

  // (job number << 32) | next index to claim.
  alignas(64) std::atomic<uint64_t> claim_{0};
  // The newest job's number: the word workers sleep on.
  alignas(64) std::atomic<uint32_t> job_{0};
  std::atomic<bool> busy_{false};
  std::atomic<bool> stop_{false};
  Job jobs_[2];
  pthread_t threads_[kMaxWorkers] = {};
  size_t workers_ = 0;
};

}  // namespace ember
