#include "runtime/kernel/kernel_context.h"

#include <cstdio>

namespace ember {
namespace {

// Sets the error message "<op>: <formatted>".
void set_op_error(Error error, const char* op_name, const char* format, va_list args) {
  char message[400];
  std::vsnprintf(message, sizeof(message), format, args);
  (void)set_error(error, "%s: %s", op_name, message);
}

}  // namespace

void KernelContext::fail(Error error, const char* format, ...) {
  va_list args;
  va_start(args, format);
  set_op_error(error, op_name_, format, args);
  va_end(args);
  failure_ = error;
}

bool KernelPrepareContext::is_constant(const Tensor& t) const {
  for (size_t i = 0; i < num_args_; ++i) {
    if (args_[i]->is_tensor() && args_[i]->as_tensor == &t) return constant_[i];
  }
  return false;
}

void KernelPrepareContext::mark_packed(const Tensor& t) {
  if (packed_ == nullptr) return;
  for (size_t i = 0; i < num_args_; ++i) {
    if (args_[i]->is_tensor() && args_[i]->as_tensor == &t && constant_[i]) packed_[i] = true;
  }
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
  va_list args;
  va_start(args, format);
  set_op_error(error, op_name_, format, args);
  va_end(args);
  failure_ = error;
  return error;
}

}  // namespace ember
