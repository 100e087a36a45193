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
#include "runtime/executor/event_tracer.h"

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
  /// The most events one `execute` logs (BackendExecutionContext::log_event);
  /// profilers size their event storage from it at load
  /// (Method::profile_events_per_run), so execute never allocates for them.
  uint32_t events_per_execute = 0;
  /// Records why `init` fails: the backend's reason, shown to the user.
  void fail(const char* format, ...) __attribute__((format(printf, 2, 3)));
};

struct BackendExecutionContext {
  const char* method_name;
  const char* backend_id;
  bool failed = false;
  /// Set while the method is profiled (Method::set_event_tracer); null otherwise.
  EventTracer* event_tracer = nullptr;
  /// The delegate call's instruction index.
  uint32_t instruction = 0;
  /// Records why `execute` fails; the message names the backend and method.
  void fail(const char* format, ...) __attribute__((format(printf, 2, 3)));

  /// True while profiling: time what log_event reports, skip the clock otherwise.
  bool profiling() const { return event_tracer != nullptr; }
  /// Logs an event inside this delegate call (an inner operator, a layout
  /// conversion), shown under the call in profiles. `name` must live as long
  /// as the delegate (a literal, or a string in its handle). At most
  /// BackendInitContext::events_per_execute per call fit in sized storage.
  void log_event(const char* name, uint64_t start_ns, uint64_t end_ns) {
    if (event_tracer != nullptr) event_tracer->record(instruction, start_ns, end_ns, name);
  }
  static uint64_t now_ns() { return EventTracer::now_ns(); }
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
