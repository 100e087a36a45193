#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "runtime/backend/backend_interface.h"

namespace ember {
namespace {
// Filled by static registration objects before main(); read-only afterwards.
struct Entry {
  const char* id;
  const BackendInterface* backend;
};
Entry g_backends[kMaxBackends];
size_t g_num_backends = 0;

void format_into_error(Error code, const char* prefix, const char* format, va_list args) {
  char message[400];
  std::vsnprintf(message, sizeof(message), format, args);
  (void)set_error(code, "%s%s", prefix, message);
}
}  // namespace

Error register_backend(const char* id, const BackendInterface* backend) {
  for (size_t i = 0; i < g_num_backends; ++i) {
    EMBER_CHECK_OR_RETURN(std::strcmp(g_backends[i].id, id) != 0, Error::InvalidArgument,
                          "backend '%s' is already registered", id);
  }
  EMBER_CHECK_OR_RETURN(g_num_backends < kMaxBackends, Error::Internal,
                        "backend registry full (%zu); cannot add '%s'", kMaxBackends, id);
  g_backends[g_num_backends++] = {id, backend};
  return Error::Ok;
}

const BackendInterface* find_backend(std::string_view id) {
  for (size_t i = 0; i < g_num_backends; ++i) {
    if (id == g_backends[i].id) return g_backends[i].backend;
  }
  return nullptr;
}

size_t registered_backend_count() { return g_num_backends; }
const char* registered_backend_id(size_t index) { return g_backends[index].id; }

void BackendInitContext::fail(const char* format, ...) {
  failed = true;
  va_list args;
  va_start(args, format);
  format_into_error(Error::DelegateInvalidCompatibility, "", format, args);
  va_end(args);
}

void BackendExecutionContext::fail(const char* format, ...) {
  failed = true;
  char prefix[160];
  std::snprintf(prefix, sizeof(prefix), "backend '%s' in method '%s': ", backend_id, method_name);
  va_list args;
  va_start(args, format);
  format_into_error(Error::KernelFailed, prefix, format, args);
  va_end(args);
}

}  // namespace ember
