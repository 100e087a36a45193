// BackendInterface: how a delegate (a compiled subgraph) runs on the device.
//
// A backend registers once under its id (the string the exporter wrote in
// BackendDelegate.id). At load_method the runtime hands each delegate's
// processed blob and compile specs to `init`, which returns a handle built in
// the method allocator; `execute` runs it with the DelegateCall's arguments
// (inputs, then outputs); `destroy` runs when the method goes away.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "runtime/core/data_loader.h"
#include "runtime/core/evalue.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/result.h"

namespace ember {

/// Opaque per-delegate state owned by a backend.
using DelegateHandle = void;

struct CompileSpec {
  std::string_view key;
  std::span<const uint8_t> value;
};

struct BackendInitContext {
  /// For the handle and any scratch memory the delegate keeps; lives as long
  /// as the method. Backends must not use the heap for per-method state.
  MemoryAllocator* allocator;
  const char* method_name;
  bool failed = false;
  /// Records why `init` fails: the backend's reason, shown to the user.
  void fail(const char* format, ...) __attribute__((format(printf, 2, 3)));
};

struct BackendExecutionContext {
  const char* method_name;
  const char* backend_id;
  bool failed = false;
  /// Records why `execute` fails; the message names the backend and method.
  void fail(const char* format, ...) __attribute__((format(printf, 2, 3)));
};

class BackendInterface {
 public:
  virtual ~BackendInterface() = default;

  /// False when the backend cannot run on this device (missing hardware...).
  virtual bool is_available() const = 0;

  /// Parses/compiles `processed`. The runtime releases `processed` after init
  /// returns; a backend that needs the bytes later moves the buffer out
  /// (`FreeableBuffer keep = std::move(*processed)`). Failures: return an
  /// error after calling ctx.fail() with the reason.
  virtual Result<DelegateHandle*> init(BackendInitContext& ctx, FreeableBuffer* processed,
                                       std::span<const CompileSpec> compile_specs) const = 0;

  /// Runs the delegate: `args` are its inputs then its outputs.
  virtual Error execute(BackendExecutionContext& ctx, DelegateHandle* handle,
                        std::span<EValue* const> args) const = 0;

  /// Releases what init created (memory from the allocator needs no freeing).
  virtual void destroy(DelegateHandle* handle) const { (void)handle; }
};

inline constexpr size_t kMaxBackends = 16;

/// Registers `backend` under `id`; the object must live forever (a static).
/// Fails when the id is taken or the table is full.
Error register_backend(const char* id, const BackendInterface* backend);

/// The backend registered under `id`, or null.
const BackendInterface* find_backend(std::string_view id);

size_t registered_backend_count();
const char* registered_backend_id(size_t index);

struct BackendRegistration {
  BackendRegistration(const char* id, const BackendInterface* backend) {
    (void)register_backend(id, backend);
  }
};

}  // namespace ember
