#include "runtime/kernel/kernel_registry.h"

#include <cstdio>
#include <cstring>

#include "runtime/kernel/kernel_signature.h"

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

Error check_kernel_dtype(const Kernel& kernel, EValue* const* args, size_t num_args) {
  if (kernel.dtypes == 0 || kernel.dtype_arg < 0 ||
      static_cast<size_t>(kernel.dtype_arg) >= num_args) {
    return Error::Ok;
  }
  const auto in_set = [&](const Tensor* t) {
    const auto code = static_cast<unsigned>(t->dtype);
    return code < 16 && ((kernel.dtypes >> code) & 1u) != 0;
  };
  const EValue& v = *args[kernel.dtype_arg];
  const Tensor* bad = nullptr;
  if (v.is_tensor()) {
    if (!in_set(v.as_tensor)) bad = v.as_tensor;
  } else if (v.tag == Tag::TensorList || v.tag == Tag::OptionalTensorList) {
    for (Tensor* t : v.as_tensor_list.get()) {
      if (t != nullptr && !in_set(t)) {
        bad = t;
        break;
      }
    }
  }
  if (bad == nullptr) return Error::Ok;
  char names[160];
  size_t used = 0;
  names[0] = '\0';
  for (unsigned code = 0; code < 16; ++code) {
    if (((kernel.dtypes >> code) & 1u) == 0 || used >= sizeof(names)) continue;
    const int n = std::snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "",
                                scalar_type_name(static_cast<ScalarType>(code)));
    if (n > 0) used += static_cast<size_t>(n);
  }
  char arg[64] = "argument";
  if (kernel.arg_names != nullptr) {
    const KernelSignature sig{kernel.name, kernel.kinds, kernel.arg_names};
    signature_arg_name(sig, static_cast<size_t>(kernel.dtype_arg), arg, sizeof(arg));
  }
  return set_error(Error::InvalidProgram, "%s: %s has dtype %s; the kernel computes %s", kernel.name,
                   arg, scalar_type_name(bad->dtype), names);
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
