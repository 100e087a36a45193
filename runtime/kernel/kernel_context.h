// KernelContext: what a kernel sees besides its arguments.
//
// A kernel reports failure through `fail()` (never by crashing); the method
// stops at the first failed kernel and returns its error.
#pragma once

#include <pthreadpool.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"

namespace ember {

class KernelContext {
 public:
  explicit KernelContext(const char* op_name = "") : op_name_(op_name) {}

  /// Records a failure with a message; the op's name is prefixed.
  void fail(Error error, const char* format, ...) __attribute__((format(printf, 3, 4)));

  Error failure() const { return failure_; }
  const char* op_name() const { return op_name_; }

  // Set by the method before each call.
  void reset(const char* op_name) {
    op_name_ = op_name;
    failure_ = Error::Ok;
  }

  /// Deterministic random state for ops such as randn (per method, seeded).
  uint64_t& rng_state() { return rng_state_; }

  /// The pool parallel_for runs on (null: the calling thread only). The
  /// method sets it from thread_pool.h once, at load.
  void set_thread_pool(pthreadpool_t pool) { pool_ = pool; }

  /// Threads parallel_for spreads tasks over (1 without a pool).
  size_t threads() const { return pool_ != nullptr ? pthreadpool_get_threads_count(pool_) : 1; }

  /// Calls task(i) for every i in [0, n), concurrently on the pool when
  /// there is one, and returns when all are done. Tasks must write disjoint
  /// memory and must not fail (validate before splitting work). No heap, no
  /// locks: pthreadpool hands out indices with atomics and wakes workers
  /// with futexes.
  template <typename F>
  void parallel_for(size_t n, const F& task) {
    if (pool_ == nullptr || n <= 1) {
      for (size_t i = 0; i < n; ++i) task(i);
      return;
    }
    pthreadpool_parallelize_1d(
        pool_, [](void* f, size_t i) { (*static_cast<const F*>(f))(i); },
        const_cast<void*>(static_cast<const void*>(&task)), n, 0);
  }

 private:
  const char* op_name_;
  Error failure_ = Error::Ok;
  uint64_t rng_state_ = 0x853c49e6748fea9bULL;
  pthreadpool_t pool_ = nullptr;
};

/// `EMBER_KERNEL_CHECK(ctx, cond, "fmt", ...)`: fail the kernel and return.
#define EMBER_KERNEL_CHECK(ctx, cond, ...)                      \
  do {                                                          \
    if (!(cond)) {                                              \
      (ctx).fail(::ember::Error::InvalidArgument, __VA_ARGS__); \
      return;                                                   \
    }                                                           \
  } while (0)

}  // namespace ember
