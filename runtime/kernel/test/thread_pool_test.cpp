// The thread pool interface: tasks cover the range once, and after
// thread_pool_release the workers sleep instead of spinning (measured as the
// process's CPU time while the calling thread sleeps; a behaviour check, not a
// speed target: spinning workers burn tens of ms per 200 ms here). And the
// WorkPool under it (work_pool.h) under stress: many jobs of every size back
// to back, a task that runs a job itself, two threads calling one pool at
// once, and pools destroyed before their workers have started.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/kernel/thread_pool.h"
#if EMBER_WORK_POOL
#include "runtime/kernel/work_pool.h"
#endif

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

#if EMBER_WORK_POOL  // Built with threads (EMBER_THREADS=ON).

// Counts calls per index of one job.
struct Counts {
  std::vector<std::atomic<int>> hits;
  explicit Counts(size_t n) : hits(n) {}
  static void task(void* context, size_t index) {
    static_cast<Counts*>(context)->hits[index].fetch_add(1, std::memory_order_relaxed);
  }
  bool each_once() const {
    for (const auto& h : hits) {
      if (h.load() != 1) return false;
    }
    return true;
  }
};

TEST(WorkPoolTest, ManyJobsBackToBackRunEveryTaskOnce) {
  for (size_t threads : {2, 3, 4}) {
    WorkPool* pool = WorkPool::create(threads);
    ASSERT_NE(pool, nullptr);
    EXPECT_EQ(pool->threads(), threads);
    for (int job = 0; job < 20000; ++job) {
      Counts counts(static_cast<size_t>(job % 41));  // 0 to 40 tasks, edges included.
      pool->run(Counts::task, &counts, counts.hits.size());
      ASSERT_TRUE(counts.each_once()) << threads << " threads, job " << job;
    }
    WorkPool::destroy(pool);
  }
}

struct Nested {
  WorkPool* pool;
  std::vector<Counts>* inner;
  static void task(void* context, size_t index) {
    auto* self = static_cast<Nested*>(context);
    Counts& c = (*self->inner)[index];
    self->pool->run(Counts::task, &c, c.hits.size());  // Runs on this thread: no deadlock.
  }
};

TEST(WorkPoolTest, ATaskThatRunsAJobRunsItItself) {
  WorkPool* pool = WorkPool::create(2);
  ASSERT_NE(pool, nullptr);
  std::vector<Counts> inner;
  inner.reserve(8);
  for (int i = 0; i < 8; ++i) inner.emplace_back(13);
  Nested nested{pool, &inner};
  pool->run(Nested::task, &nested, inner.size());
  for (const Counts& c : inner) EXPECT_TRUE(c.each_once());
  WorkPool::destroy(pool);
}

TEST(WorkPoolTest, TwoCallersShareOnePool) {
  WorkPool* pool = WorkPool::create(3);
  ASSERT_NE(pool, nullptr);
  std::atomic<int> bad{0};
  auto caller = [&] {
    for (int job = 0; job < 5000; ++job) {
      Counts counts(static_cast<size_t>(1 + job % 17));
      pool->run(Counts::task, &counts, counts.hits.size());
      if (!counts.each_once()) bad.fetch_add(1);
    }
  };
  std::thread other(caller);
  caller();
  other.join();
  EXPECT_EQ(bad.load(), 0);
  WorkPool::destroy(pool);
}

TEST(WorkPoolTest, DestroyedBeforeItsWorkersStart) {
  for (int i = 0; i < 200; ++i) WorkPool::destroy(WorkPool::create(3));
  WorkPool* pool = WorkPool::create(2);
  ASSERT_NE(pool, nullptr);
  Counts counts(5);
  pool->run(Counts::task, &counts, counts.hits.size());
  EXPECT_TRUE(counts.each_once());
  WorkPool::destroy(pool);
  EXPECT_EQ(WorkPool::create(1), nullptr) << "one thread needs no pool";
}

#endif  // EMBER_WORK_POOL

}  // namespace
}  // namespace ember
