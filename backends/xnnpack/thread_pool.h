// The process-wide thread pool XNNPACK delegates run on.
//
// One pool serves every delegate of every method, so a model split into
// several delegates does not multiply threads. Its size is fixed when the
// first delegate is initialised: `set_thread_count` (ember-run --threads,
// ember.runtime.set_xnnpack_threads) or EMBER_XNNPACK_THREADS, else one
// thread per core.
#pragma once

#include <pthreadpool.h>

#include <cstddef>

namespace ember::backends::xnnpack {

/// Requests `threads` (0 = one per core) for the pool. Returns false when the
/// pool already exists with another size (it cannot change once in use).
bool set_thread_count(size_t threads);

/// The pool, created on first use; null means "run on the calling thread"
/// (a single-thread pool would only add synchronisation).
pthreadpool_t thread_pool();

/// Threads the pool runs (1 when there is no pool).
size_t thread_count();

}  // namespace ember::backends::xnnpack
