#include "runtime/kernel/kernel_registry.h"

#include <cstring>


namespace ember {
namespace {
// Function-local statics would need a guard (a lock); a plain zero-initialised
// array is ready before any static constructor runs.
const Kernel* g_kernels[kMaxKernels];
size_t g_num_kernels = 0;
}  // namespace

Error register_kernel(const Kernel& kernel) {
  for (size_t i = 0; i < g_num_kernels; ++i) {
    if (std::strcmp(g_kernels[i]->name, kernel.name) == 0) {
      g_kernels[i] = &kernel;
      return Error::Ok;
    }
  }
  EMBER_CHECK_OR_RETURN(g_num_kernels < kMaxKernels, Error::Internal,
                        "kernel registry full (%zu kernels); cannot add %s", kMaxKernels,
                        kernel.name);
  g_kernels[g_num_kernels++] = &kernel;
  return Error::Ok;
}

const Kernel* find_kernel(std::string_view name) {
  for (size_t i = 0; i < g_num_kernels; ++i) {
    if (name == g_kernels[i]->name) return g_kernels[i];
  }
  return nullptr;
}

KernelTableRegistration::KernelTableRegistration(const Kernel* table, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    (void)register_kernel(table[i]);
  }
}

size_t registered_kernel_count() { return g_num_kernels; }
const Kernel& registered_kernel(size_t index) { return *g_kernels[index]; }

}  // namespace ember
