#include "runtime/core/error.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace ember {
#if EMBER_ERROR_MESSAGES
namespace {
// Fixed size: the message is for humans, and a long path or op name still fits.
thread_local char g_error_message[512] = {0};
}  // namespace
#endif

const char* error_name(Error error) {
  switch (error) {
    case Error::Ok: return "Ok";
    case Error::Internal: return "Internal";
    case Error::InvalidState: return "InvalidState";
    case Error::InvalidArgument: return "InvalidArgument";
    case Error::InvalidType: return "InvalidType";
    case Error::InvalidProgram: return "InvalidProgram";
    case Error::NotSupported: return "NotSupported";
    case Error::NotFound: return "NotFound";
    case Error::OperatorMissing: return "OperatorMissing";
    case Error::MemoryAllocationFailed: return "MemoryAllocationFailed";
    case Error::AccessFailed: return "AccessFailed";
    case Error::OutOfRange: return "OutOfRange";
    case Error::DelegateInvalidCompatibility: return "DelegateInvalidCompatibility";
    case Error::DelegateInvalidHandle: return "DelegateInvalidHandle";
    case Error::DelegateMissing: return "DelegateMissing";
    case Error::KernelFailed: return "KernelFailed";
  }
  return "Unknown";
}

#if EMBER_ERROR_MESSAGES
Error set_error(Error error, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_error_message, sizeof(g_error_message), format, args);
  va_end(args);
  return error;
}

void append_error_message(const char* format, ...) {
  const size_t used = std::strlen(g_error_message);
  if (used + 1 >= sizeof(g_error_message)) return;
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_error_message + used, sizeof(g_error_message) - used, format, args);
  va_end(args);
}

const char* last_error_message() { return g_error_message; }

void clear_error_message() { g_error_message[0] = '\0'; }
#else
namespace {
thread_local Error g_error_code = Error::Ok;
}  // namespace

void set_error_code(Error error) { g_error_code = error; }

const char* last_error_message() { return g_error_code == Error::Ok ? "" : error_name(g_error_code); }

void clear_error_message() { g_error_code = Error::Ok; }
#endif

}  // namespace ember
