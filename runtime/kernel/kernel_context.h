// KernelContext: what a kernel sees besides its arguments.
//
// A kernel reports failure through `fail()` (never by crashing); the method
// stops at the first failed kernel and returns its error.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/kernel/thread_pool.h"

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

  /// What the kernel's prepare step left for this instruction (null when it
  /// has none); the method sets it before each call.
  void* state() const { return state_; }
  void set_state(void* state) { state_ = state; }

  /// Deterministic random state for ops such as randn (per method, seeded).
  uint64_t& rng_state() { return rng_state_; }

  /// The method's scratch memory (KernelPrepareContext::reserve_scratch):
  /// `bytes` of it, 64-byte aligned, valid until the kernel returns and
  /// shared by every instruction of the method (never kept across calls);
  /// null when less than `bytes` was reserved.
  void* scratch(size_t bytes) const { return bytes <= scratch_size_ ? scratch_ : nullptr; }
  size_t scratch_size() const { return scratch_size_; }
  void set_scratch(void* scratch, size_t size) {
    scratch_ = scratch;
    scratch_size_ = scratch != nullptr ? size : 0;
  }

  /// The pool parallel_for runs on (null: the calling thread only). The
  /// method sets it from thread_pool.h once, at load.
  void set_thread_pool(ThreadPool* pool) { pool_ = pool; }

  /// Threads parallel_for spreads tasks over (1 without a pool).
  size_t threads() const { return thread_pool_threads(pool_); }

  /// Calls task(i) for every i in [0, n), concurrently on the pool when
  /// there is one, and returns when all are done. Tasks must write disjoint
  /// memory and must not fail (validate before splitting work). No heap, no
  /// locks (pthreadpool hands out indices with atomics and wakes workers
  /// with futexes).
  template <typename F>
  void parallel_for(size_t n, const F& task) {
    if (pool_ == nullptr || n <= 1) {
      for (size_t i = 0; i < n; ++i) task(i);
      return;
    }
    thread_pool_run(
        pool_, [](void* f, size_t i) { (*static_cast<const F*>(f))(i); },
        const_cast<void*>(static_cast<const void*>(&task)), n);
  }

 private:
  const char* op_name_;
  Error failure_ = Error::Ok;
  void* state_ = nullptr;
  uint64_t rng_state_ = 0x853c49e6748fea9bULL;
  ThreadPool* pool_ = nullptr;
  void* scratch_ = nullptr;
  size_t scratch_size_ = 0;
};

/// What a kernel's prepare step sees: it runs once per instruction, in
/// load_method, with the arguments of that call. Tensors have their planned
/// sizes (for a dynamic tensor, its upper bound) and memory; only constants
/// (`is_constant`) have data yet. Prepare validates what the program fixes,
/// derives what `execute` would recompute (geometry, algorithm, ISA) and packs
/// constant weights into memory from the method's allocator, then leaves a
/// pointer to that state with `set_state`; the kernel reads it back with
/// `KernelContext::state()`. The state is never destroyed: keep it trivially
/// destructible.
class KernelPrepareContext {
 public:
  KernelPrepareContext(const char* op_name, MemoryAllocator* allocator, EValue* const* args,
                       const bool* constant, size_t num_args, ThreadPool* pool,
                       bool* packed = nullptr)
      : op_name_(op_name), allocator_(allocator), args_(args), constant_(constant),
        num_args_(num_args), pool_(pool), packed_(packed) {}

  const char* op_name() const { return op_name_; }

  /// True when `t` is a tensor argument of this call whose data is in the
  /// program (fixed for the method's life, so it may be packed now).
  bool is_constant(const Tensor& t) const;

  /// Promises that `execute` never reads the data of constant `t` (this
  /// prepare keeps a packed copy): once no instruction reads a constant, the
  /// method loader tells the data loader it may drop its pages (an mmapped
  /// file's weights then stop counting twice in memory). Only a promise about
  /// reads: the data stays valid and readable.
  void mark_packed(const Tensor& t);

  /// `bytes` from the method's allocator, or null after failing with
  /// MemoryAllocationFailed (return `failure()` then). Counted in
  /// `prepared_bytes()`.
  void* allocate(size_t bytes, size_t alignment = 64);

  /// A value-initialised T from `allocate`, or null after failing.
  template <typename T>
  T* allocate_state() {
    static_assert(std::is_trivially_destructible_v<T>, "prepared state is never destroyed");
    void* p = allocate(sizeof(T), alignof(T) > 64 ? alignof(T) : 64);
    return p != nullptr ? new (p) T() : nullptr;
  }

  void set_state(void* state) { state_ = state; }
  void* state() const { return state_; }
  size_t prepared_bytes() const { return prepared_bytes_; }

  /// Asks for `bytes` of scratch memory at every execute of this
  /// instruction (KernelContext::scratch). The method allocates the largest
  /// request of its instructions once, at load, and they share it: memory a
  /// kernel needs only while it runs (a transformed copy of its input), not
  /// the per-instruction state `allocate` keeps.
  void reserve_scratch(size_t bytes) {
    if (bytes > scratch_bytes_) scratch_bytes_ = bytes;
  }
  size_t scratch_bytes() const { return scratch_bytes_; }

  /// Threads the kernel's parallel_for will have (1 without a pool).
  size_t threads() const { return thread_pool_threads(pool_); }

  /// Records a failure with a message (the op's name is prefixed) and
  /// returns `error`, so prepare can `return ctx.fail(...)`.
  Error fail(Error error, const char* format, ...) __attribute__((format(printf, 3, 4)));
  Error failure() const { return failure_; }

 private:
  const char* op_name_;
  MemoryAllocator* allocator_;
  EValue* const* args_;
  const bool* constant_;
  size_t num_args_;
  ThreadPool* pool_;
  bool* packed_;  // packed_[a]: mark_packed(args[a]) was called (null: not tracked).
  void* state_ = nullptr;
  size_t prepared_bytes_ = 0;
  size_t scratch_bytes_ = 0;
  Error failure_ = Error::Ok;
};

/// `EMBER_PREPARE_CHECK(ctx, cond, "fmt", ...)`: fail prepare and return the error.
#define EMBER_PREPARE_CHECK(ctx, cond, ...)                             \
  do {                                                                  \
    if (!(cond)) return (ctx).fail(::ember::Error::InvalidArgument, __VA_ARGS__); \
  } while (0)

/// `EMBER_KERNEL_CHECK(ctx, cond, "fmt", ...)`: fail the kernel and return.
#define EMBER_KERNEL_CHECK(ctx, cond, ...)                      \
  do {                                                          \
    if (!(cond)) {                                              \
      (ctx).fail(::ember::Error::InvalidArgument, __VA_ARGS__); \
      return;                                                   \
    }                                                           \
  } while (0)

}  // namespace ember
