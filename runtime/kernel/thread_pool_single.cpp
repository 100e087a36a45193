// ThreadPool for a single-threaded build (EMBER_THREADS=OFF): there is never
// a pool, every parallel_for runs on the calling thread, and nothing links a
// thread library.
#include "runtime/kernel/thread_pool.h"

namespace ember {

bool threads_supported() { return false; }

bool set_thread_count(size_t threads) { return threads <= 1; }

ThreadPool* thread_pool() { return nullptr; }

size_t thread_count() { return 1; }

size_t thread_pool_threads(const ThreadPool*) { return 1; }

void thread_pool_run(ThreadPool*, ParallelTask task, void* context, size_t n) {
  for (size_t i = 0; i < n; ++i) task(context, i);
}

void thread_pool_release(ThreadPool*) {}

void thread_pool_note_use(ThreadPool*) {}

ThreadPool* thread_pool_create(size_t) { return nullptr; }

void thread_pool_destroy(ThreadPool*) {}

}  // namespace ember
