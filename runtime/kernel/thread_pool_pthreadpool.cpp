// ThreadPool with threads (EMBER_THREADS=ON): Ember's kernels run on a
// WorkPool (work_pool.h: the caller never waits for a worker that has not
// started), and libraries built on pthreadpool (the XNNPACK delegate) get a
// pthreadpool of the same size (thread_pool_pthreadpool.h). Both sleep when
// idle.
#include <pthreadpool.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>

#include "runtime/kernel/thread_pool.h"
#include "runtime/kernel/thread_pool_pthreadpool.h"
#include "runtime/kernel/work_pool.h"

namespace ember {

namespace {

std::mutex g_mutex;  // Load-time only: execute never takes it.
bool g_created = false;
size_t g_requested = 0;
bool g_requested_set = false;
ThreadPool* g_pool = nullptr;
size_t g_threads = 1;

size_t requested_threads() {
  if (g_requested_set) return g_requested;
  for (const char* name : {"EMBER_NUM_THREADS", "EMBER_XNNPACK_THREADS"}) {
    const char* env = std::getenv(name);
    if (env == nullptr || *env == '\0') continue;
    char* end = nullptr;
    const unsigned long n = std::strtoul(env, &end, 10);
    if (end != env && *end == '\0' && n <= 1024) return n;
  }
  return 0;
}


// Set when work ran on a pool since the last thread_pool_release (any pool:
// a private pool only costs one spare release). Relaxed: a hint, lock-free.
std::atomic<bool> g_used{false};

void noop(void*, size_t) {}

}  // namespace

bool threads_supported() { return true; }

bool set_thread_count(size_t threads) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_created) {
    return threads == g_threads || (threads == 0 && g_requested == 0);
  }
  g_requested = threads;
  g_requested_set = true;
  return true;
}

ThreadPool* thread_pool() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_created) {
    g_created = true;
    const size_t want = requested_threads();
    g_requested = want;
    if (want != 1) {
      g_pool = thread_pool_create(want);
      g_threads = thread_pool_threads(g_pool);
      if (g_threads <= 1 && g_pool != nullptr) {
        thread_pool_destroy(g_pool);
        g_pool = nullptr;
        g_threads = 1;
      }
    }
  }
  return g_pool;
}

size_t thread_count() {
  (void)thread_pool();
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_threads;
}

size_t thread_pool_threads(const ThreadPool* pool) {
  if (pool == nullptr) return 1;
  return pool->work->threads();
}

void thread_pool_run(ThreadPool* pool, ParallelTask task, void* context, size_t n) {
  if (pool == nullptr || n <= 1) {
    for (size_t i = 0; i < n; ++i) task(context, i);
    return;
  }
  pool->work->run(task, context, n);
}

void thread_pool_note_use(ThreadPool* pool) {
  if (pool != nullptr) g_used.store(true, std::memory_order_relaxed);
}

void thread_pool_release(ThreadPool* pool) {
  // The WorkPool's workers sleep by themselves; a delegate that used the
  // pthreadpool (thread_pool_note_use) left its workers spinning.
  if (pool == nullptr || !g_used.exchange(false, std::memory_order_relaxed)) return;
  // An empty command whose flag tells every worker to wait in the kernel
  // (futex) rather than spin for the next one.
  pthreadpool_parallelize_1d(native_pthreadpool(pool), noop, nullptr,
                             pthreadpool_get_threads_count(native_pthreadpool(pool)),
                             PTHREADPOOL_FLAG_YIELD_WORKERS);
}

ThreadPool* thread_pool_create(size_t threads) {
  pthreadpool_t pthreads = pthreadpool_create(threads);
  if (pthreads == nullptr) return nullptr;
  // Its workers spin-wait from creation until a command with this flag; only
  // a delegate may ever use them, so they sleep from the start.
  pthreadpool_parallelize_1d(pthreads, noop, nullptr, pthreadpool_get_threads_count(pthreads),
                             PTHREADPOOL_FLAG_YIELD_WORKERS);
  // The same size as the pthreadpool (which resolves 0 to one per core).
  WorkPool* work = WorkPool::create(pthreadpool_get_threads_count(pthreads));
  auto* pool = work != nullptr ? new (std::nothrow) ThreadPool{work, pthreads} : nullptr;
  if (pool == nullptr) {
    WorkPool::destroy(work);
    pthreadpool_destroy(pthreads);
  }
  return pool;
}

void thread_pool_destroy(ThreadPool* pool) {
  if (pool == nullptr) return;
  WorkPool::destroy(pool->work);
  pthreadpool_destroy(pool->pthreadpool);
  delete pool;
}

}  // namespace ember
