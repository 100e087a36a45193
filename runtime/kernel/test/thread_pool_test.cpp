// The thread pool interface: tasks cover the range once, and after
// thread_pool_release the workers sleep instead of spinning (measured as the
// process's CPU time while the calling thread sleeps; a behaviour check, not a
// speed target: spinning workers burn tens of ms per 200 ms here).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/kernel/thread_pool.h"

namespace ember {
namespace {

double process_cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

void busy(void* context, size_t index) {
  auto* hits = static_cast<std::vector<std::atomic<int>>*>(context);
  volatile double x = 0;
  for (int i = 0; i < 200000; ++i) x = x + i;
  (*hits)[index].fetch_add(1);
}

TEST(ThreadPoolTest, RunCoversEveryIndexOnce) {
  ThreadPool* pool = thread_pool_create(2);
  std::vector<std::atomic<int>> hits(37);
  thread_pool_run(pool, busy, &hits, hits.size());
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
  thread_pool_destroy(pool);
}

TEST(ThreadPoolTest, WorkersSleepAfterRelease) {
  if (!threads_supported()) GTEST_SKIP() << "single-threaded build (EMBER_THREADS=OFF)";
  ThreadPool* pool = thread_pool_create(2);
  ASSERT_NE(pool, nullptr);
  std::vector<std::atomic<int>> hits(8);
  thread_pool_run(pool, busy, &hits, hits.size());
  thread_pool_release(pool);
  const double before = process_cpu_ms();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LT(process_cpu_ms() - before, 10.0) << "the workers kept spinning after release";
  // The pool still works after its workers slept.
  std::vector<std::atomic<int>> again(5);
  thread_pool_run(pool, busy, &again, again.size());
  for (const auto& h : again) EXPECT_EQ(h.load(), 1);
  thread_pool_destroy(pool);
}

}  // namespace
}  // namespace ember
