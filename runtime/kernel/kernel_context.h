// KernelContext: what a kernel sees besides its arguments.
//
// A kernel reports failure through `fail()` (never by crashing); the method
// stops at the first failed kernel and returns its error.
#pragma once

#include <cstdarg>
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

 private:
  const char* op_name_;
  Error failure_ = Error::Ok;
  uint64_t rng_state_ = 0x853c49e6748fea9bULL;
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
