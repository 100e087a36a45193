// The kernel registry: operator name ("aten::add.out") → kernel function.
//
// Kernels register themselves with static `KernelRegistration` objects in
// libraries the build links whole. Registration happens before main(); the
// table is fixed-size and read-only afterwards, so lookups take no lock.
#pragma once

#include <cstddef>
#include <string_view>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {

/// A kernel gets every schema argument in order, then the return value(s).
using KernelFn = void (*)(KernelContext& ctx, EValue** args);

struct Kernel {
  const char* name = nullptr;  // "namespace::op.overload"
  KernelFn fn = nullptr;
  int num_args = -1;  // Count of `args` entries it expects; -1: not checked.
};

inline constexpr size_t kMaxKernels = 2048;

/// Adds a kernel; a later registration of the same name replaces the earlier
/// one (optimized kernels override portable ones). Fails when the table is full.
Error register_kernel(const Kernel& kernel);

/// The kernel registered under `name`, or null.
const Kernel* find_kernel(std::string_view name);

/// All registered kernels (for tools that list them).
size_t registered_kernel_count();
const Kernel& registered_kernel(size_t index);

struct KernelRegistration {
  KernelRegistration(const char* name, KernelFn fn, int num_args) {
    (void)register_kernel(Kernel{name, fn, num_args});
  }
};

}  // namespace ember

#define EMBER_CONCAT2_INNER_(a, b) a##b
#define EMBER_CONCAT2_(a, b) EMBER_CONCAT2_INNER_(a, b)

/// `EMBER_REGISTER_KERNEL("aten::add.out", add_out, 5);` at namespace scope.
#define EMBER_REGISTER_KERNEL(name, fn, num_args)                                  \
  static const ::ember::KernelRegistration EMBER_CONCAT2_(ember_kernel_reg_, __LINE__)( \
      name, fn, num_args)
