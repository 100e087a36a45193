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

}  // namespace ember
