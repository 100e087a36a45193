#include "runtime/executor/method.h"

#include <cstring>

#include "schema/program_generated.h"

namespace ember {

const char* Method::name() const { return plan_->name()->c_str(); }

Method::Method(Method&& other)
    : plan_(other.plan_),
      values_(other.values_),
      num_values_(other.num_values_),
      inputs_(other.inputs_),
      num_inputs_(other.num_inputs_),
      outputs_(other.outputs_),
      num_outputs_(other.num_outputs_),
      input_set_(other.input_set_),
      input_planned_(other.input_planned_),
      steps_(other.steps_),
      num_steps_(other.num_steps_),
      prepared_bytes_(other.prepared_bytes_),
      dropped_constant_bytes_(other.dropped_constant_bytes_),
      scratch_(other.scratch_),
      scratch_size_(other.scratch_size_),
      mutable_buffers_(other.mutable_buffers_),
      num_mutable_buffers_(other.num_mutable_buffers_),
      delegates_(other.delegates_),
      num_delegates_(other.num_delegates_),
      input_guards_(other.input_guards_),
      rng_state_(other.rng_state_),
      thread_pool_(other.thread_pool_),
      tracer_(other.tracer_),
      output_logger_(other.output_logger_) {
  other.num_delegates_ = 0;  // The handles now belong to this method.
}

Method::~Method() {
  for (size_t i = 0; i < num_delegates_; ++i) {
    delegates_[i].backend->destroy(delegates_[i].handle);
  }
}

void Method::reset_mutable_buffers() {
  for (size_t i = 0; i < num_mutable_buffers_; ++i) {
    const MutableBuffer& b = mutable_buffers_[i];
    if (b.nbytes > 0) std::memcpy(b.data, b.initial, b.nbytes);
  }
}

void Method::note_source(size_t pc) const {
#if EMBER_ERROR_MESSAGES
  const auto* chains = plan_->chains();
  const auto* trace = chains != nullptr && chains->size() > 0 ? chains->Get(0)->stacktrace() : nullptr;
  if (trace == nullptr || pc >= trace->size() || trace->Get(static_cast<uint32_t>(pc))->items() == nullptr) {
    return;
  }
  // The exporter writes the model's innermost frames, then one naming the node.
  const ember_fb::Frame* source = nullptr;
  const ember_fb::Frame* node = nullptr;
  for (const ember_fb::Frame* frame : *trace->Get(static_cast<uint32_t>(pc))->items()) {
    const bool has_file = frame->filename() != nullptr && frame->filename()->size() > 0;
    (has_file ? source : node) = frame;
  }
  if (source != nullptr) {
    append_error_message(" (model source: %s:%d in %s: %s)", source->filename()->c_str(),
                         source->lineno(), source->name() ? source->name()->c_str() : "?",
                         source->context() ? source->context()->c_str() : "");
  }
  if (node != nullptr && node->name() != nullptr) {
    append_error_message(" (node %s)", node->name()->c_str());
  }
#else
  (void)pc;
#endif
}

Error Method::execute_delegate(const Step& step, size_t pc) {
  const DelegateInstance& d = delegates_[step.a];
  BackendExecutionContext ctx{name(), d.id};
  ctx.event_tracer = tracer_;
  ctx.instruction = static_cast<uint32_t>(pc);
  const Error err = d.backend->execute(ctx, d.handle, std::span<EValue* const>(step.args, step.num_args));
  thread_pool_note_use(thread_pool_);  // A delegate may run on the pool's pthreadpool itself.
  if (err != Error::Ok && !ctx.failed) {
    return set_error(err, "backend '%s' in method '%s' (instruction %zu) failed: %s", d.id, name(),
                     pc, error_name(err));
  }
  return err;
}

Error Method::set_input(size_t index, const Tensor& input) {
  EMBER_CHECK_OR_RETURN(index < num_inputs_, Error::InvalidArgument,
                        "method '%s': input index %zu is out of range (%zu inputs)", name(),
                        index, num_inputs_);
  EValue& v = values_[inputs_[index]];
  EMBER_CHECK_OR_RETURN(v.is_tensor(), Error::InvalidArgument,
                        "method '%s' input %zu: expected a %s, got a tensor", name(), index,
                        tag_name(v.tag));
  Tensor& t = *v.as_tensor;
  EMBER_CHECK_OR_RETURN(input.dtype == t.dtype, Error::InvalidArgument,
                        "method '%s' input %zu: expected dtype %s, got %s", name(), index,
                        scalar_type_name(t.dtype), scalar_type_name(input.dtype));
  char want[128];
  char got[128];
  EMBER_CHECK_OR_RETURN(input.dim == t.dim, Error::InvalidArgument,
                        "method '%s' input %zu: expected a rank-%d tensor of shape %s, got rank "
                        "%d (shape %s)",
                        name(), index, t.dim, format_shape(t.shape(), want, sizeof(want)),
                        input.dim, format_shape(input.shape(), got, sizeof(got)));
  for (int32_t d = 0; d < t.dim; ++d) {
    EMBER_CHECK_OR_RETURN(input.dim_order[d] == t.dim_order[d], Error::InvalidArgument,
                          "method '%s' input %zu: memory layout (dim order) differs from the "
                          "program's; pass a tensor in the program's layout",
                          name(), index);
  }
  if (t.dynamism == TensorShapeDynamism::Static) {
    for (int32_t d = 0; d < t.dim; ++d) {
      EMBER_CHECK_OR_RETURN(input.sizes[d] == t.sizes[d], Error::InvalidArgument,
                            "method '%s' input %zu: expected shape %s, got %s (dim %d is %d, "
                            "expected %d)",
                            name(), index, format_shape(t.shape(), want, sizeof(want)),
                            format_shape(input.shape(), got, sizeof(got)), d, input.sizes[d],
                            t.sizes[d]);
    }
  } else {
    for (int32_t d = 0; d < t.dim && t.bound_sizes != nullptr; ++d) {
      EMBER_CHECK_OR_RETURN(input.sizes[d] <= t.bound_sizes[d], Error::InvalidArgument,
                            "method '%s' input %zu: dim %d is %d, above its bound %d (shape %s)",
                            name(), index, d, input.sizes[d], t.bound_sizes[d],
                            format_shape(input.shape(), got, sizeof(got)));
    }
    const Error err = t.resize(input.shape());
    EMBER_CHECK_OR_RETURN(err == Error::Ok, err, "method '%s' input %zu: %s", name(), index,
                          last_error_message());
  }
  const size_t nbytes = t.nbytes();
  EMBER_CHECK_OR_RETURN(input.data != nullptr || nbytes == 0, Error::InvalidArgument,
                        "method '%s' input %zu: tensor has no data", name(), index);
  if (t.dtype == ScalarType::Bool) {
    // A bool holds 0 or 1; any other byte is a caller's mistake worth naming
    // early. Kernels no longer depend on this check: they read bool storage
    // as bytes (portable::BoolByte, any non-zero byte is true), because planned
    // memory reused across dtypes can hold any byte in a bool tensor anyway.
    const auto* bytes = static_cast<const uint8_t*>(input.data);
    for (size_t i = 0; i < nbytes; ++i) {
      EMBER_CHECK_OR_RETURN(bytes[i] <= 1, Error::InvalidArgument,
                            "method '%s' input %zu: bool tensor holds byte %u at element %zu",
                            name(), index, bytes[i], i);
    }
  }
  if (input_planned_[index]) {
    if (nbytes > 0 && input.data != t.data) std::memmove(t.data, input.data, nbytes);
  } else {
    t.data = input.data;
  }
  input_set_[index] = true;
  return Error::Ok;
}

Error Method::set_input(size_t index, const EValue& input) {
  EMBER_CHECK_OR_RETURN(index < num_inputs_, Error::InvalidArgument,
                        "method '%s': input index %zu is out of range (%zu inputs)", name(),
                        index, num_inputs_);
  if (input.is_tensor()) return set_input(index, *input.as_tensor);
  EValue& v = values_[inputs_[index]];
  EMBER_CHECK_OR_RETURN(v.tag == input.tag, Error::InvalidArgument,
                        "method '%s' input %zu: expected a %s, got a %s", name(), index,
                        tag_name(v.tag), tag_name(input.tag));
  EMBER_CHECK_OR_RETURN(v.is_scalar() || v.is_none(), Error::NotSupported,
                        "method '%s' input %zu: %s inputs cannot be set", name(), index,
                        tag_name(v.tag));
  v = input;
  input_set_[index] = true;
  return Error::Ok;
}

Error Method::execute() {
  for (size_t i = 0; i < num_inputs_; ++i) {
    const EValue& v = values_[inputs_[i]];
    // Scalar and None inputs carry the value exported with the program.
    EMBER_CHECK_OR_RETURN(input_set_[i] || !v.is_tensor(), Error::InvalidState,
                          "method '%s': input %zu was not set before execute()", name(), i);
  }
  EMBER_TRY(check_input_guards(input_guards_, values_, inputs_, name()));
  // However execute ends, the pool's workers then sleep instead of spinning
  // while the app is idle (thread_pool_release; nothing when no work ran).
  struct ReleasePool {
    ThreadPool* pool;
    ~ReleasePool() { thread_pool_release(pool); }
  } release{thread_pool_};
  KernelContext ctx;
  ctx.rng_state() = rng_state_;
  ctx.set_thread_pool(thread_pool_);
  ctx.set_scratch(scratch_, scratch_size_);
  size_t pc = 0;
  while (pc < num_steps_) {
    const Step& step = steps_[pc];
    // Kernels and delegates are timed when a tracer is set (event_tracer.h);
    // the slot is taken first so a delegate's own events follow it.
    size_t slot = EventTracer::kNoSlot;
    if (tracer_ != nullptr &&
        (step.kind == Step::Kind::Kernel || step.kind == Step::Kind::Delegate)) {
      slot = tracer_->begin(static_cast<uint32_t>(pc), EventTracer::now_ns());
    }
    switch (step.kind) {
      case Step::Kind::Kernel:
        ctx.reset(step.op_name);
        ctx.set_state(step.state);
        step.fn(ctx, step.args);
        if (ctx.failure() != Error::Ok) {
          rng_state_ = ctx.rng_state();
          note_source(pc);
          return ctx.failure();
        }
        break;
      case Step::Kind::Move:
        values_[step.b] = values_[step.a];
        break;
      case Step::Kind::JumpFalse: {
        const EValue& cond = values_[step.a];
        EMBER_CHECK_OR_RETURN(cond.is_bool(), Error::InvalidProgram,
                              "method '%s' instruction %zu: jump condition is a %s, not a Bool",
                              name(), pc, tag_name(cond.tag));
        if (!cond.as_bool) {
          pc = static_cast<size_t>(step.b);
          continue;
        }
        break;
      }
      case Step::Kind::Free:
        // Memory is planned ahead of time, so there is nothing to release.
        break;
      case Step::Kind::Delegate: {
        const Error err = execute_delegate(step, pc);
        if (err != Error::Ok) {
          rng_state_ = ctx.rng_state();
          note_source(pc);
          return err;
        }
        break;
      }
    }
    if (step.kind == Step::Kind::Kernel || step.kind == Step::Kind::Delegate) {
      const uint32_t k = static_cast<uint32_t>(pc);
      if (tracer_ != nullptr) tracer_->end(slot, EventTracer::now_ns());
      if (output_logger_ != nullptr) {
        output_logger_->log_instruction(k, {step.args, step.num_args});
      }
    }
    ++pc;
  }
  rng_state_ = ctx.rng_state();
  return Error::Ok;
}

size_t Method::profile_events_per_run() const {
  size_t n = 0;
  for (size_t pc = 0; pc < num_steps_; ++pc) {
    const Step& step = steps_[pc];
    if (step.kind == Step::Kind::Kernel) ++n;
    if (step.kind == Step::Kind::Delegate) n += 1 + delegates_[step.a].events_per_execute;
  }
  return n;
}

Result<const EValue*> Method::get_output(size_t index) const {
  EMBER_CHECK_OR_RETURN(index < num_outputs_, Error::InvalidArgument,
                        "method '%s': output index %zu is out of range (%zu outputs)", name(),
                        index, num_outputs_);
  return &values_[outputs_[index]];
}

Result<const EValue*> Method::get_input(size_t index) const {
  EMBER_CHECK_OR_RETURN(index < num_inputs_, Error::InvalidArgument,
                        "method '%s': input index %zu is out of range (%zu inputs)", name(),
                        index, num_inputs_);
  return &values_[inputs_[index]];
}

}  // namespace ember
