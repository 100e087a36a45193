#include "runtime/kernel/thread_pool.h"

#include <cstdlib>
#include <mutex>

namespace ember {
namespace {

std::mutex g_mutex;  // Load-time only: execute never takes it.
bool g_created = false;
size_t g_requested = 0;
bool g_requested_set = false;
pthreadpool_t g_pool = nullptr;
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

}  // namespace

bool set_thread_count(size_t threads) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_created) {
    return threads == g_threads || (threads == 0 && g_requested == 0);
  }
  g_requested = threads;
  g_requested_set = true;
  return true;
}

pthreadpool_t thread_pool() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_created) {
    g_created = true;
    const size_t want = requested_threads();
    g_requested = want;
    if (want != 1) {
      g_pool = pthreadpool_create(want);
      g_threads = g_pool != nullptr ? pthreadpool_get_threads_count(g_pool) : 1;
      if (g_threads <= 1 && g_pool != nullptr) {
        pthreadpool_destroy(g_pool);
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

}  // namespace ember
