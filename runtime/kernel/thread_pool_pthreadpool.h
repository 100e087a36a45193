// The pthreadpool behind a ThreadPool, for code that hands the pool to a
// library built on pthreadpool (the XNNPACK delegate). In a single-threaded
// build (EMBER_THREADS=OFF) every ThreadPool* is null, and so is its
// pthreadpool: the library then runs on the calling thread.
#pragma once

#include <pthreadpool.h>

#include "runtime/kernel/thread_pool.h"

namespace ember {

class WorkPool;

/// A pool with threads (thread_pool_pthreadpool.cpp): Ember's kernels run on
/// `work` (work_pool.h), libraries built on pthreadpool on `pthreadpool`, of
/// the same size. Defined here so that native_pthreadpool stays inline: a
/// single-threaded build links no pool code (its pools are all null).
struct ThreadPool {
  WorkPool* work;
  pthreadpool_t pthreadpool;
};

/// The pthreadpool of `pool` (null for null).
inline pthreadpool_t native_pthreadpool(ThreadPool* pool) {
  return pool != nullptr ? pool->pthreadpool : nullptr;
}

}  // namespace ember
