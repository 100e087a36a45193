#include "runtime/kernel/kernel_context.h"

#include <cstdio>

namespace ember {

void KernelContext::fail(Error error, const char* format, ...) {
  char message[400];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  failure_ = error;
  (void)set_error(error, "%s: %s", op_name_, message);
}

bool KernelPrepareContext::is_constant(const Tensor& t) const {
  for (size_t i = 0; i < num_args_; ++i) {
    if (args_[i]->is_tensor() && args_[i]->as_tensor == &t) return constant_[i];
  }
  return false;
}

void* KernelPrepareContext::allocate(size_t bytes, size_t alignment) {
  void* p = allocator_ != nullptr ? allocator_->allocate(bytes, alignment) : nullptr;
  if (p == nullptr) {
    failure_ = Error::MemoryAllocationFailed;
    (void)set_error(failure_, "%s: prepare needs %zu more bytes than the method allocator has",
                    op_name_, bytes);
    return nullptr;
  }
  prepared_bytes_ += bytes;
  return p;
}

Error KernelPrepareContext::fail(Error error, const char* format, ...) {
  char message[400];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  failure_ = error;
  (void)set_error(error, "%s: %s", op_name_, message);
  return error;
}

}  // namespace ember
