// The process-wide thread pool that portable kernels and XNNPACK delegates
// run on (pthreadpool).
//
// One pool serves every method and delegate, so a model split into several
// delegates, or two loaded programs, do not multiply threads. Its size is
// fixed when it is first used (a method loads): `set_thread_count`
// (ember-run --threads, ember._C.set_threads) or the environment variable
// EMBER_NUM_THREADS (EMBER_XNNPACK_THREADS is read as a fallback), else one
// thread per core. The pool is looked up once per method at load; execute
// never takes the lock below.
#pragma once

#include <pthreadpool.h>

#include <cstddef>

namespace ember {

/// Requests `threads` (0 = one per core) for the pool. Returns false when the
/// pool already exists with another size (it cannot change once in use).
bool set_thread_count(size_t threads);

/// The pool, created on first use; null means "run on the calling thread"
/// (a single-thread pool would only add synchronisation).
pthreadpool_t thread_pool();

/// Threads the pool runs (1 when there is no pool).
size_t thread_count();

}  // namespace ember
