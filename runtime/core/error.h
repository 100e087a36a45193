// Error codes and the last-error message of the runtime.
//
// Every fallible runtime call returns `Error` or `Result<T>`. The code says
// what kind of failure it was; the message (formatted into a fixed,
// thread-local buffer: no heap, no lock) says which thing was wrong.
#pragma once

#include <cstdint>

namespace ember {

enum class [[nodiscard]] Error : uint32_t {
  Ok = 0,
  Internal = 1,
  InvalidState = 2,
  InvalidArgument = 3,
  InvalidType = 4,
  InvalidProgram = 5,
  NotSupported = 6,
  NotFound = 7,
  OperatorMissing = 8,
  MemoryAllocationFailed = 9,
  AccessFailed = 10,
  OutOfRange = 11,
  DelegateInvalidCompatibility = 12,
  DelegateInvalidHandle = 13,
  DelegateMissing = 14,
  KernelFailed = 15,
};

/// Short, stable name of an error code, e.g. "InvalidProgram".
const char* error_name(Error error);

#ifndef EMBER_ERROR_MESSAGES
#define EMBER_ERROR_MESSAGES 1
#endif

#if EMBER_ERROR_MESSAGES
/// Formats a message into this thread's error buffer and returns `error`.
/// printf-style; the message is truncated to the buffer's size.
Error set_error(Error error, const char* format, ...)
    __attribute__((format(printf, 2, 3)));
/// Appends to the message set last (context added by a caller, e.g. the
/// model source line of the instruction that failed).
void append_error_message(const char* format, ...) __attribute__((format(printf, 1, 2)));
#else
// Built with EMBER_ERROR_MESSAGES=0 (the size-optimised core, CMake
// -DEMBER_ERROR_MESSAGES=OFF): only the code is kept, and the message text
// and its formatting are compiled out. last_error_message() then names the code.
void set_error_code(Error error);
template <typename... Args>
inline Error set_error(Error error, const char*, Args&&...) {
  set_error_code(error);
  return error;
}
#endif

/// The message of the last `set_error` on this thread ("" if none).
const char* last_error_message();

/// Clears this thread's error message.
void clear_error_message();

}  // namespace ember

/// Returns `error` with a formatted message when `cond` is false.
#define EMBER_CHECK_OR_RETURN(cond, error, ...)      \
  do {                                               \
    if (!(cond)) {                                   \
      return ::ember::set_error((error), __VA_ARGS__); \
    }                                                \
  } while (0)

/// Evaluates an expression returning `Error`; returns it when not Ok.
#define EMBER_TRY(expr)                       \
  do {                                        \
    const ::ember::Error ember_err_ = (expr); \
    if (ember_err_ != ::ember::Error::Ok) {   \
      return ember_err_;                      \
    }                                         \
  } while (0)

#define EMBER_CONCAT_INNER_(a, b) a##b
#define EMBER_CONCAT_(a, b) EMBER_CONCAT_INNER_(a, b)

/// `EMBER_TRY_ASSIGN(auto x, f())`: unwraps a Result<T> or returns its error.
#define EMBER_TRY_ASSIGN(decl, expr) \
  EMBER_TRY_ASSIGN_IMPL_(EMBER_CONCAT_(ember_res_, __LINE__), decl, expr)
#define EMBER_TRY_ASSIGN_IMPL_(tmp, decl, expr) \
  auto tmp = (expr);                            \
  if (!tmp.ok()) {                              \
    return tmp.error();                         \
  }                                             \
  decl = std::move(tmp.get())
