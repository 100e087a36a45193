// The kernel registry: operator name ("aten::add.out") → kernel function.
//
// Kernels register themselves with static `KernelRegistration` objects in
// libraries the build links whole. Registration happens before main(); the
// table is fixed-size and read-only afterwards, so lookups take no lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {

/// A kernel gets every schema argument in order, then the return value(s).
using KernelFn = void (*)(KernelContext& ctx, EValue** args);

/// A kernel's prepare step (KernelPrepareContext), run once per instruction
/// by load_method with the same arguments.
using KernelPrepareFn = Error (*)(KernelPrepareContext& ctx, EValue** args);

struct Kernel {
  const char* name = nullptr;  // "namespace::op.overload"
  KernelFn fn = nullptr;
  // Typed kernels (generated from kernels/ops.yaml): the argument kinds
  // (kernel_signature.h letters, return slot included) and names load_method
  // checks, and the optional prepare step.
  const char* kinds = nullptr;
  const char* arg_names = nullptr;
  KernelPrepareFn prepare = nullptr;
  // A kernel registered by hand (EMBER_REGISTER_KERNEL: custom ops outside
  // the op list): the count of `args` entries it expects (-1: not checked).
  int num_args = -1;
  // Typed kernels: the dtypes (bit i: ScalarType code i) the tensor argument
  // `dtype_arg` may have (every tensor of it, for a tensor list), from the op
  // list's `dtypes:`; load_method refuses others. 0: not checked.
  uint16_t dtypes = 0;
  int8_t dtype_arg = -1;
};

inline constexpr size_t kMaxKernels = 2048;
/// The most arguments (return slot included) one kernel call may have.
inline constexpr size_t kMaxKernelArgs = 32;

/// Adds a kernel, by address: `kernel` must outlive every lookup (a static
/// table row or registration object). A later registration of the same name
/// replaces the earlier one (optimized kernels override portable ones). Fails
/// when the registry is full. The registry holds pointers only (zero-initialised,
/// so it costs no file size).
Error register_kernel(const Kernel& kernel);

/// The kernel registered under `name`, or null.
const Kernel* find_kernel(std::string_view name);

/// Checks the dtype of `kernel`'s dtype argument (`dtypes`, `dtype_arg`)
/// in a call's arguments; on a mismatch sets the error message ("aten::cos.out:
/// self has dtype int16; the kernel computes float32, float64") and returns
/// InvalidProgram. A None or absent argument passes.
Error check_kernel_dtype(const Kernel& kernel, EValue* const* args, size_t num_args);

/// All registered kernels (for tools that list them).
size_t registered_kernel_count();
const Kernel& registered_kernel(size_t index);

struct KernelRegistration {
  KernelRegistration(const char* name, KernelFn fn, int num_args)
      : kernel{name, fn, nullptr, nullptr, nullptr, num_args} {
    (void)register_kernel(kernel);
  }
  const Kernel kernel;
};

/// Registers every row of a generated table (one static object per table).
struct KernelTableRegistration {
  KernelTableRegistration(const Kernel* table, size_t count);
};

}  // namespace ember

#define EMBER_CONCAT2_INNER_(a, b) a##b
#define EMBER_CONCAT2_(a, b) EMBER_CONCAT2_INNER_(a, b)

/// A custom op's boxed kernel, registered by hand:
/// `EMBER_REGISTER_KERNEL("my_ops::axpy.out", axpy_out, 5);` at namespace
/// scope (the count includes the return slot). The kernels of the op list
/// (kernels/ops.yaml) are typed and registered by the generated table.
#define EMBER_REGISTER_KERNEL(name, fn, num_args)                                  \
  static const ::ember::KernelRegistration EMBER_CONCAT2_(ember_kernel_reg_, __LINE__)( \
      name, fn, num_args)

