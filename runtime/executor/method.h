// Method: one loaded execution plan, ready to run.
//
// Built by Program::load_method in memory the caller hands in. `execute()`
// runs the instructions in order; it takes no lock and allocates nothing.
#pragma once


#include <cstddef>
#include <cstdint>

#include "runtime/backend/backend_interface.h"
#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/executor/event_tracer.h"
#include "runtime/executor/input_guards.h"
#include "runtime/executor/intermediate_output_logger.h"
#include "runtime/executor/method_meta.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernel/thread_pool.h"

namespace ember_fb {
struct ExecutionPlan;
}

namespace ember {

class Program;
class MemoryManager;

/// One instruction, resolved at load time.
struct Step {
  enum class Kind : uint8_t { Kernel, Delegate, Move, JumpFalse, Free };
  Kind kind = Kind::Kernel;
  KernelFn fn = nullptr;
  const char* op_name = nullptr;  // "aten::add.out", for errors and profiles.
  EValue** args = nullptr;
  void* state = nullptr;  // Kernel: what its prepare step left (KernelContext::state()).
  uint32_t num_args = 0;
  int32_t a = 0;  // Move: from; JumpFalse: condition; Free: value; Delegate: index.
  int32_t b = 0;  // Move: to; JumpFalse: destination.
  uint32_t prepared_bytes = 0;  // Kernel: what its prepare took (reports; saturates).
};

/// One initialised delegate of a method.
/// A mutable buffer (a KV cache, a running statistic): planned memory that
/// keeps its contents across execute() calls, filled with `initial` at load.
struct MutableBuffer {
  void* data = nullptr;
  const void* initial = nullptr;  // In the program's mutable data segment.
  size_t nbytes = 0;
  int32_t value = 0;  // Its index in the method's value table.
};

struct DelegateInstance {
  const BackendInterface* backend = nullptr;
  DelegateHandle* handle = nullptr;
  const char* id = nullptr;
  uint32_t events_per_execute = 0;  // BackendInitContext::events_per_execute
};

class Method {
 public:
  Method(Method&& other);
  Method& operator=(Method&&) = delete;
  /// Destroys the method's delegate handles (memory belongs to the caller).
  ~Method();

  const char* name() const;
  size_t inputs_size() const { return num_inputs_; }
  size_t outputs_size() const { return num_outputs_; }

  /// Threads its kernels may split work over (the process-wide pool's size,
  /// fixed when the method loaded; 1 without a pool).
  size_t threads() const {
    return thread_pool_threads(thread_pool_);
  }

  /// Copies a tensor into input `index` (or points the input at the caller's
  /// data when the input has no planned memory; the data must then outlive
  /// execute()). Checks dtype, rank and sizes; a dynamic input accepts sizes
  /// within its bound. The error names the input, expected and actual.
  Error set_input(size_t index, const Tensor& input);
  /// Sets a scalar (Int/Double/Bool) input; the tag must match.
  Error set_input(size_t index, const EValue& input);

  /// Checks the input guards (input_guards.h), then runs every instruction.
  /// Fails with InvalidState when an input was never set, InvalidArgument
  /// with the guard's message when the inputs break a dynamic_shapes
  /// constraint, and with the failing kernel's error otherwise.
  Error execute();

  /// Output `index`; valid until the next execute() or the method's end.
  Result<const EValue*> get_output(size_t index) const;
  Result<const EValue*> get_input(size_t index) const;

  MethodMeta method_meta() const { return MethodMeta(plan_, prepared_bytes_); }
  size_t num_steps() const { return num_steps_; }
  /// Bytes the kernels' prepare steps took from the method allocator
  /// (packed weights, derived geometry), counted at load.
  size_t prepared_bytes() const { return prepared_bytes_; }
  /// Bytes of scratch memory the kernels share while they run (the largest
  /// KernelPrepareContext::reserve_scratch request; counted in prepared_bytes).
  size_t scratch_bytes() const { return scratch_size_; }
  /// Bytes of constants only prepare steps read (they keep packed copies),
  /// handed back to the data loader at load (DataLoader::drop_pages; an
  /// mmapped file drops them from memory).
  size_t dropped_constant_bytes() const { return dropped_constant_bytes_; }
  const Step& step(size_t index) const { return steps_[index]; }
  /// The program's table of this method (for tools: Chain.stacktrace, values).
  const ember_fb::ExecutionPlan* execution_plan() const { return plan_; }

  /// Mutable buffers: state that execute() updates and the next execute()
  /// reads. Each loaded method has its own (in its planned memory).
  size_t num_mutable_buffers() const { return num_mutable_buffers_; }
  const MutableBuffer& mutable_buffer(size_t index) const { return mutable_buffers_[index]; }
  /// Puts every mutable buffer back to the initial value the program holds
  /// (as it was after load_method).
  void reset_mutable_buffers();

  /// Records each kernel and delegate instruction execute() runs (its step
  /// index and start/end times) into `tracer`; null stops recording.
  /// Delegates add their own events inside their instruction's (after it).
  void set_event_tracer(EventTracer* tracer) { tracer_ = tracer; }
  /// Events one run records when it runs each instruction once: kernel and
  /// delegate instructions, and the events each delegate said at load it
  /// logs per call. (Loops run instructions more often.)
  size_t profile_events_per_run() const;

  /// Hands each kernel and delegate instruction's arguments to `logger` right
  /// after the instruction ran (numerical debugging: capture every op's
  /// output); null stops it. The logger must outlive its use here.
  void set_output_logger(IntermediateOutputLogger* logger) { output_logger_ = logger; }

 private:
  friend class Program;
  friend class MethodLoader;
  Method() = default;
  Error execute_delegate(const Step& step, size_t pc);
  // Adds where instruction `pc` comes from (Chain.stacktrace) to the error message.
  void note_source(size_t pc) const;

  const ember_fb::ExecutionPlan* plan_ = nullptr;
  EValue* values_ = nullptr;
  size_t num_values_ = 0;
  int32_t* inputs_ = nullptr;
  size_t num_inputs_ = 0;
  int32_t* outputs_ = nullptr;
  size_t num_outputs_ = 0;
  bool* input_set_ = nullptr;
  bool* input_planned_ = nullptr;
  Step* steps_ = nullptr;
  size_t num_steps_ = 0;
  size_t prepared_bytes_ = 0;
  size_t dropped_constant_bytes_ = 0;
  void* scratch_ = nullptr;  // Shared by the kernels while they run (KernelContext::scratch).
  size_t scratch_size_ = 0;
  MutableBuffer* mutable_buffers_ = nullptr;
  size_t num_mutable_buffers_ = 0;
  DelegateInstance* delegates_ = nullptr;
  size_t num_delegates_ = 0;  // Initialised ones: destroyed with the method.
  InputGuardTable input_guards_;
  uint64_t rng_state_ = 0x853c49e6748fea9bULL;
  ThreadPool* thread_pool_ = nullptr;  // Process-wide pool, looked up at load.
  EventTracer* tracer_ = nullptr;
  IntermediateOutputLogger* output_logger_ = nullptr;
};

}  // namespace ember
