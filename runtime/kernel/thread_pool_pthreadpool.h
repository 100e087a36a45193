// The pthreadpool behind a ThreadPool, for code that hands the pool to a
// library built on pthreadpool (the XNNPACK delegate). In a single-threaded
// build (EMBER_THREADS=OFF) every ThreadPool* is null, and so is its
// pthreadpool: the library then runs on the calling thread.
#pragma once

#include <pthreadpool.h>

#include "runtime/kernel/thread_pool.h"

namespace ember {

/// The pthreadpool of `pool` (null for null), with as many threads as the
/// pool. Ember's own kernels run on the pool's WorkPool (work_pool.h).
pthreadpool_t native_pthreadpool(ThreadPool* pool);

}  // namespace ember
