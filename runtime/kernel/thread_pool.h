// The process-wide thread pool that portable kernels and delegates run on,
// behind a small interface so that a single-threaded build
// (-DEMBER_THREADS=OFF) links no thread library at all.
//
// One pool serves every method and delegate, so a model split into several
// delegates, or two loaded programs, do not multiply threads. Its size is
// fixed when it is first used (a method loads): `set_thread_count`
// (ember-run --threads, ember._C.set_threads) or the environment variable
// EMBER_NUM_THREADS (EMBER_XNNPACK_THREADS is read as a fallback), else one
// thread per core. The pool is looked up once per method at load; execute
// never takes a lock.
//
// Implementations: thread_pool_pthreadpool.cpp (pthreadpool, the default) and
// thread_pool_single.cpp (the calling thread only).
#pragma once

#include <cstddef>

namespace ember {

/// Opaque pool. Null everywhere means "run on the calling thread".
struct ThreadPool;

/// A task body: called once per index with the caller's context.
using ParallelTask = void (*)(void* context, size_t index);

/// Requests `threads` (0 = one per core) for the pool. Returns false when the
/// pool already exists with another size (it cannot change once in use), or
/// when this build cannot run more than one thread and more were asked for.
bool set_thread_count(size_t threads);

/// The process-wide pool, created on first use; null when it would run a
/// single thread (a single-thread pool would only add synchronisation).
ThreadPool* thread_pool();

/// Threads the process-wide pool runs (1 when there is no pool).
size_t thread_count();

/// True when this build can run kernels on more than one thread.
bool threads_supported();

/// Threads `pool` runs (1 for null).
size_t thread_pool_threads(const ThreadPool* pool);

/// Calls task(context, i) for every i in [0, n), concurrently on `pool` when
/// there is one, and returns when all are done. No heap, no locks on the
/// calling path.
void thread_pool_run(ThreadPool* pool, ParallelTask task, void* context, size_t n);

/// Ends a burst of work on `pool`: when anything ran on it since the last
/// call, its workers go to sleep now instead of spin-waiting for the next
/// task (pthreadpool spins for milliseconds after every parallel op, which
/// burns a core while an app sits idle between runs). Cheap: the workers are
/// still awake then. Method::execute calls it before returning.
void thread_pool_release(ThreadPool* pool);

/// Records that a library (a delegate) ran work on the pool's pthreadpool
/// directly, so the next thread_pool_release lets its workers sleep.
void thread_pool_note_use(ThreadPool* pool);

/// A private pool of `threads` (0 = one per core) for tests and embedders
/// that want one outside the process-wide pool; null in a single-threaded
/// build or when creation fails. Destroy with thread_pool_destroy.
ThreadPool* thread_pool_create(size_t threads);
void thread_pool_destroy(ThreadPool* pool);

}  // namespace ember
