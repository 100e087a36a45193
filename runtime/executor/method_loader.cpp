// Program::load_method: turns a verified ExecutionPlan into a runnable Method.
//
// Everything is allocated from the caller's method allocator; planned tensors
// point into the caller's planned buffers and constants into the program's
// constant segment. Kernels are looked up here, once, by "name.overload".
#include <cstdio>
#include <cstring>
#include <iterator>

#include "runtime/executor/memory_manager.h"
#include "runtime/executor/named_data_map.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/executor/program_verifier.h"
#include "runtime/kernel/kernel_signature.h"
#include "runtime/kernel/thread_pool.h"
#include "schema/program_generated.h"

namespace ember {

class MethodLoader {
 public:
  MethodLoader(const Program& program, const ember_fb::ExecutionPlan* plan, MemoryManager* mm,
               const NamedDataMap* named_data)
      : program_(program),
        plan_(plan),
        mm_(mm),
        alloc_(mm->method_allocator()),
        named_data_(named_data) {}

  Result<Method> load() {
    method_.plan_ = plan_;
    EMBER_TRY(check_planned_buffers());
    EMBER_TRY(init_values());
    EMBER_TRY(init_mutable_buffers());
    EMBER_TRY(init_io());
    EMBER_TRY(init_input_guards());
    EMBER_TRY(init_delegates());
    EMBER_TRY(init_steps());
    EMBER_TRY(init_scratch());
    count_dropped_constants();
    return static_cast<Method&&>(method_);
  }

 private:
  const char* name() const { return plan_->name()->c_str(); }

  template <typename T>
  Result<T*> alloc_array(size_t count, const char* what) {
    if (count == 0) return static_cast<T*>(nullptr);
    T* p = alloc_->allocate_array<T>(count);
    EMBER_CHECK_OR_RETURN(p != nullptr, Error::MemoryAllocationFailed,
                          "method '%s': method allocator exhausted allocating %zu %s (%zu of "
                          "%zu bytes used)",
                          name(), count, what, alloc_->used(), alloc_->capacity());
    return p;
  }

  // The guard table beside the program, if any (input_guards.h).
  Error init_input_guards() {
    char key[160];
    if (!input_guards_key(name(), key, sizeof(key))) return Error::Ok;
    Result<FreeableBuffer> data = program_.load_named_data(key);
    if (data.error() == Error::NotFound) return Error::Ok;
    if (!data.ok()) return data.error();
    EMBER_TRY_ASSIGN(method_.input_guards_,
                     parse_input_guards(static_cast<const uint8_t*>(data->data()), data->size(),
                                        name(), method_.num_inputs_, alloc_));
    return Error::Ok;
  }

  // Planned tensors with an initial value (mutable buffers): remembered so
  // the method can be reset, and filled now, before any prepare step runs.
  Error init_mutable_buffers() {
    const auto* values = plan_->values();
    size_t n = 0;
    auto is_mutable = [](const ember_fb::EValue* fv) {
      const auto* t = fv->val_as_Tensor();
      return t != nullptr && t->allocation_info() != nullptr && t->data_buffer_idx() > 0;
    };
    for (uint32_t i = 0; i < values->size(); ++i) n += is_mutable(values->Get(i)) ? 1 : 0;
    if (n == 0) return Error::Ok;
    EMBER_TRY_ASSIGN(method_.mutable_buffers_, alloc_array<MutableBuffer>(n, "mutable buffers"));
    const auto* offsets = program_.flatbuffer()->mutable_data_segments()->Get(0)->offsets();
    size_t k = 0;
    for (uint32_t i = 0; i < values->size(); ++i) {
      if (!is_mutable(values->Get(i))) continue;
      const Tensor& t = *method_.values_[i].as_tensor;
      MutableBuffer& b = method_.mutable_buffers_[k++];
      b.data = t.data;
      b.initial = program_.mutable_data(offsets->Get(values->Get(i)->val_as_Tensor()->data_buffer_idx()));
      b.nbytes = t.capacity_bytes;
      b.value = static_cast<int32_t>(i);
    }
    method_.num_mutable_buffers_ = n;
    method_.reset_mutable_buffers();
    return Error::Ok;
  }

  Error check_planned_buffers() {
    const auto* sizes = plan_->non_const_buffer_sizes();
    const size_t n = sizes != nullptr && sizes->size() > 0 ? sizes->size() - 1 : 0;
    const auto buffers = mm_->planned_buffers();
    EMBER_CHECK_OR_RETURN(buffers.size() >= n, Error::InvalidArgument,
                          "method '%s' needs %zu planned buffers, the memory manager has %zu",
                          name(), n, buffers.size());
    for (size_t i = 0; i < n; ++i) {
      const auto need = static_cast<uint64_t>(sizes->Get(static_cast<uint32_t>(i + 1)));
      EMBER_CHECK_OR_RETURN(buffers[i].size() >= need, Error::InvalidArgument,
                            "method '%s': planned buffer %zu has %zu bytes, the plan needs %llu",
                            name(), i + 1, buffers[i].size(),
                            static_cast<unsigned long long>(need));
    }
    return Error::Ok;
  }

  // A tensor stored outside the program: its bytes come from the named-data
  // map (not copied), after checking they are what the program expects.
  Error bind_external(size_t index, const char* key, Tensor* tensor) {
    EMBER_CHECK_OR_RETURN(named_data_ != nullptr, Error::InvalidArgument,
                          "method '%s' value %zu: tensor '%s' is stored outside the program; "
                          "load its .ptd data file with the program (ember-run --data FILE.ptd)",
                          name(), index, key);
    Result<TensorLayout> layout = named_data_->tensor_layout(key);
    EMBER_CHECK_OR_RETURN(layout.ok(), Error::NotFound,
                          "method '%s' value %zu: tensor '%s' is not in the named data file",
                          name(), index, key);
    bool same = layout->dtype == tensor->dtype &&
                layout->sizes.size() == static_cast<size_t>(tensor->dim) &&
                layout->dim_order.size() == static_cast<size_t>(tensor->dim);
    for (int32_t d = 0; same && d < tensor->dim; ++d) {
      same = layout->sizes[static_cast<size_t>(d)] == tensor->sizes[d] &&
             layout->dim_order[static_cast<size_t>(d)] == tensor->dim_order[d];
    }
    Result<std::span<const uint8_t>> bytes = named_data_->data(key);
    EMBER_CHECK_OR_RETURN(same && bytes.ok() && bytes->size() >= tensor->nbytes(),
                          Error::InvalidArgument,
                          "method '%s' value %zu: tensor '%s' has another dtype, shape, dim order "
                          "or size in the data file than in the program (%s, rank %d, %zu bytes)",
                          name(), index, key, scalar_type_name(tensor->dtype), tensor->dim,
                          tensor->nbytes());
    tensor->data = const_cast<uint8_t*>(bytes->data());
    return Error::Ok;
  }

  Error init_tensor(size_t index, const ember_fb::Tensor* t, EValue* v) {
    EMBER_TRY_ASSIGN(Tensor * tensor, alloc_array<Tensor>(1, "tensors"));
    new (tensor) Tensor();
    const int32_t dim = t->sizes() != nullptr ? static_cast<int32_t>(t->sizes()->size()) : 0;
    tensor->dtype = static_cast<ScalarType>(t->scalar_type());
    tensor->dim = dim;
    tensor->dynamism = static_cast<TensorShapeDynamism>(t->shape_dynamism());
    // Rank-0 tensors still get one slot so pointers are never null.
    const size_t slots = dim > 0 ? static_cast<size_t>(dim) : 1;
    EMBER_TRY_ASSIGN(tensor->sizes, alloc_array<int32_t>(slots, "tensor sizes"));
    EMBER_TRY_ASSIGN(tensor->dim_order, alloc_array<uint8_t>(slots, "tensor dim orders"));
    EMBER_TRY_ASSIGN(tensor->strides, alloc_array<int64_t>(slots, "tensor strides"));
    for (int32_t i = 0; i < dim; ++i) {
      tensor->sizes[i] = t->sizes()->Get(static_cast<uint32_t>(i));
      tensor->dim_order[i] = t->dim_order()->Get(static_cast<uint32_t>(i));
    }
    tensor->update_strides();
    tensor->capacity_bytes = tensor->nbytes();
    if (tensor->dynamism != TensorShapeDynamism::Static && dim > 0) {
      EMBER_TRY_ASSIGN(int32_t * bounds, alloc_array<int32_t>(static_cast<size_t>(dim), "tensor bounds"));
      for (int32_t i = 0; i < dim; ++i) bounds[i] = tensor->sizes[i];
      tensor->bound_sizes = bounds;
    }

    const auto* alloc = t->allocation_info();
    const auto* extra = t->extra_tensor_info();
    if (extra != nullptr && extra->location() == ember_fb::TensorDataLocation::EXTERNAL) {
      EMBER_TRY(bind_external(index, extra->fully_qualified_name()->c_str(), tensor));
    } else if (alloc != nullptr) {
      const uint64_t offset =
          uint64_t{alloc->memory_offset_low()} | (uint64_t{alloc->memory_offset_high()} << 32);
      tensor->data = mm_->planned_buffers()[alloc->memory_id() - 1].data() + offset;
    } else if (t->data_buffer_idx() > 0) {
      const auto* cs = program_.flatbuffer()->constant_segment();
      if (cs != nullptr && cs->offsets() != nullptr) {
        tensor->data = const_cast<uint8_t*>(
            program_.constant_data(cs->offsets()->Get(t->data_buffer_idx())));
      } else {
        tensor->data = const_cast<uint8_t*>(
            program_.flatbuffer()->constant_buffer()->Get(t->data_buffer_idx())->storage()->data());
      }
      // A bool constant holds 0 or 1; any other byte means a corrupt or
      // crafted file, so refuse it early. Kernels no longer depend on this
      // check: they read bool storage as bytes (portable::BoolByte, any
      // non-zero byte is true), as planned memory can hold any byte.
      if (tensor->dtype == ScalarType::Bool) {
        const auto* bytes = static_cast<const uint8_t*>(tensor->data);
        for (int64_t i = 0; i < tensor->numel; ++i) {
          EMBER_CHECK_OR_RETURN(bytes[i] <= 1, Error::InvalidProgram,
                                "method '%s' value %zu: bool constant holds byte %u at element "
                                "%lld (only 0 and 1 are valid)",
                                name(), index, bytes[i], static_cast<long long>(i));
        }
      }
    } else {
      tensor->data = nullptr;  // Supplied by the caller through set_input.
    }
    // Kernels load elements in place: the data must be aligned for its dtype.
    EMBER_CHECK_OR_RETURN(
        reinterpret_cast<uintptr_t>(tensor->data) % element_size(tensor->dtype) == 0,
        Error::InvalidProgram,
        "method '%s' value %zu: %s data at address %p is not aligned to its %zu-byte elements "
        "(a planned or constant offset that is not a multiple of the element size)",
        name(), index, scalar_type_name(tensor->dtype), tensor->data, element_size(tensor->dtype));
    v->tag = Tag::Tensor;
    v->as_tensor = tensor;
    return Error::Ok;
  }

  Error init_values() {
    const auto* values = plan_->values();
    const size_t n = values->size();
    EMBER_TRY_ASSIGN(method_.values_, alloc_array<EValue>(n, "values"));
    method_.num_values_ = n;
    for (size_t i = 0; i < n; ++i) new (&method_.values_[i]) EValue();
    // Scalars and tensors first, so lists can point at them regardless of order.
    for (uint32_t i = 0; i < n; ++i) {
      const auto* fv = values->Get(i);
      EValue* v = &method_.values_[i];
      switch (fv->val_type()) {
        case ember_fb::KernelTypes::Int:
          v->tag = Tag::Int;
          v->as_int = fv->val_as_Int()->int_val();
          break;
        case ember_fb::KernelTypes::Bool:
          v->tag = Tag::Bool;
          v->as_bool = fv->val_as_Bool()->bool_val();
          break;
        case ember_fb::KernelTypes::Double:
          v->tag = Tag::Double;
          v->as_double = fv->val_as_Double()->double_val();
          break;
        case ember_fb::KernelTypes::String: {
          const auto* s = fv->val_as_String()->string_val();
          v->tag = Tag::String;
          v->as_string = std::string_view(s->c_str(), s->size());
          break;
        }
        case ember_fb::KernelTypes::DoubleList: {
          const auto* items = fv->val_as_DoubleList()->items();
          const size_t len = items != nullptr ? items->size() : 0;
          EMBER_TRY_ASSIGN(double* data, alloc_array<double>(len, "double lists"));
          for (size_t j = 0; j < len; ++j) data[j] = items->Get(static_cast<uint32_t>(j));
          v->tag = Tag::DoubleList;
          v->as_double_list = std::span<const double>(data, len);
          break;
        }
        case ember_fb::KernelTypes::BoolList: {
          const auto* items = fv->val_as_BoolList()->items();
          const size_t len = items != nullptr ? items->size() : 0;
          EMBER_TRY_ASSIGN(bool* data, alloc_array<bool>(len, "bool lists"));
          for (size_t j = 0; j < len; ++j) data[j] = items->Get(static_cast<uint32_t>(j)) != 0;
          v->tag = Tag::BoolList;
          v->as_bool_list = std::span<const bool>(data, len);
          break;
        }
        case ember_fb::KernelTypes::Tensor:
          EMBER_TRY(init_tensor(i, fv->val_as_Tensor(), v));
          break;
        default:
          break;  // None, or a list handled below.
      }
    }
    for (uint32_t i = 0; i < n; ++i) {
      const auto* fv = values->Get(i);
      EValue* v = &method_.values_[i];
      if (fv->val_type() == ember_fb::KernelTypes::IntList) {
        const auto* items = fv->val_as_IntList()->items();
        const size_t len = items != nullptr ? items->size() : 0;
        EMBER_TRY_ASSIGN(EValue * *boxed, alloc_array<EValue*>(len, "int list items"));
        EMBER_TRY_ASSIGN(int64_t * unboxed, alloc_array<int64_t>(len, "int list items"));
        for (size_t j = 0; j < len; ++j) {
          boxed[j] = &method_.values_[items->Get(static_cast<uint32_t>(j))];
          unboxed[j] = boxed[j]->as_int;
        }
        v->tag = Tag::IntList;
        v->as_int_list = BoxedIntList{boxed, unboxed, len};
      } else if (fv->val_type() == ember_fb::KernelTypes::TensorList ||
                 fv->val_type() == ember_fb::KernelTypes::OptionalTensorList) {
        const bool optional = fv->val_type() == ember_fb::KernelTypes::OptionalTensorList;
        const auto* items = optional ? fv->val_as_OptionalTensorList()->items()
                                     : fv->val_as_TensorList()->items();
        const size_t len = items != nullptr ? items->size() : 0;
        EMBER_TRY_ASSIGN(Tensor * *tensors, alloc_array<Tensor*>(len, "tensor list items"));
        for (size_t j = 0; j < len; ++j) {
          const int32_t idx = items->Get(static_cast<uint32_t>(j));
          tensors[j] = idx < 0 ? nullptr : method_.values_[idx].as_tensor;
        }
        v->tag = optional ? Tag::OptionalTensorList : Tag::TensorList;
        v->as_tensor_list = TensorListRef{tensors, len};
      }
    }
    return Error::Ok;
  }

  Error init_io() {
    const auto copy = [&](const flatbuffers::Vector<int32_t>* list, int32_t** out, size_t* count,
                          const char* what) -> Error {
      const size_t len = list != nullptr ? list->size() : 0;
      EMBER_TRY_ASSIGN(*out, alloc_array<int32_t>(len, what));
      for (size_t i = 0; i < len; ++i) (*out)[i] = list->Get(static_cast<uint32_t>(i));
      *count = len;
      return Error::Ok;
    };
    EMBER_TRY(copy(plan_->inputs(), &method_.inputs_, &method_.num_inputs_, "inputs"));
    EMBER_TRY(copy(plan_->outputs(), &method_.outputs_, &method_.num_outputs_, "outputs"));
    EMBER_TRY_ASSIGN(method_.input_set_, alloc_array<bool>(method_.num_inputs_, "input flags"));
    EMBER_TRY_ASSIGN(method_.input_planned_,
                     alloc_array<bool>(method_.num_inputs_, "input flags"));
    for (size_t i = 0; i < method_.num_inputs_; ++i) {
      const EValue& v = method_.values_[method_.inputs_[i]];
      // A planned input keeps its memory; an unplanned one borrows the caller's.
      method_.input_planned_[i] = v.is_tensor() && v.as_tensor->data != nullptr;
      method_.input_set_[i] = false;
    }
    return Error::Ok;
  }

  Error init_steps() {
    const auto* chain = plan_->chains()->Get(0);
    const auto* instrs = chain->instructions();
    const size_t n = instrs != nullptr ? instrs->size() : 0;
    EMBER_TRY_ASSIGN(method_.steps_, alloc_array<Step>(n, "instructions"));
    method_.num_steps_ = n;
    method_.thread_pool_ = thread_pool();
    EMBER_TRY(init_constant_uses());
    const auto* ops = plan_->operators();
    for (uint32_t k = 0; k < n; ++k) {
      const auto* ins = instrs->Get(k);
      Step* step = new (&method_.steps_[k]) Step();
      switch (ins->instr_args_type()) {
        case ember_fb::InstructionArguments::KernelCall: {
          const auto* call = ins->instr_args_as_KernelCall();
          const auto* op = ops->Get(static_cast<uint32_t>(call->op_index()));
          EMBER_TRY(resolve_kernel(k, op, step));
          const auto* args = call->args();
          const size_t nargs = args != nullptr ? args->size() : 0;
          const Kernel* kernel = find_kernel(step->op_name);
          EMBER_CHECK_OR_RETURN(kernel->num_args < 0 || static_cast<size_t>(kernel->num_args) == nargs,
                                Error::InvalidProgram,
                                "method '%s' instruction %u: %s takes %d arguments, the program "
                                "passes %zu",
                                name(), k, step->op_name, kernel->num_args, nargs);
          EMBER_TRY_ASSIGN(step->args, alloc_array<EValue*>(nargs, "kernel arguments"));
          for (size_t a = 0; a < nargs; ++a) {
            step->args[a] = &method_.values_[args->Get(static_cast<uint32_t>(a))];
          }
          step->num_args = static_cast<uint32_t>(nargs);
          EMBER_TRY(check_argument_kinds(k, *kernel, *step));
          bool packed[kMaxKernelArgs] = {};
          if (kernel->prepare != nullptr) {
            EMBER_TRY(run_kernel_prepare(k, *kernel, step, args, packed));
          }
          for (size_t a = 0; a < nargs; ++a) {
            // mark_packed cannot tell two slots of one value apart (mm(W, W)):
            // such a value counts as read at execute.
            bool only_packed = a < kMaxKernelArgs && packed[a];
            for (size_t b = 0; only_packed && b < nargs; ++b) {
              if (b != a && args->Get(static_cast<uint32_t>(b)) ==
                                args->Get(static_cast<uint32_t>(a))) {
                only_packed = false;
              }
            }
            note_constant_use(args->Get(static_cast<uint32_t>(a)), only_packed);
          }
          break;
        }
        case ember_fb::InstructionArguments::DelegateCall: {
          const auto* call = ins->instr_args_as_DelegateCall();
          const auto* args = call->args();
          const size_t nargs = args != nullptr ? args->size() : 0;
          step->kind = Step::Kind::Delegate;
          step->a = call->delegate_index();
          step->op_name = method_.delegates_[call->delegate_index()].id;
          EMBER_TRY_ASSIGN(step->args, alloc_array<EValue*>(nargs, "delegate arguments"));
          for (size_t a = 0; a < nargs; ++a) {
            step->args[a] = &method_.values_[args->Get(static_cast<uint32_t>(a))];
            note_constant_use(args->Get(static_cast<uint32_t>(a)), false);
          }
          step->num_args = static_cast<uint32_t>(nargs);
          break;
        }
        case ember_fb::InstructionArguments::MoveCall:
          step->kind = Step::Kind::Move;
          step->a = ins->instr_args_as_MoveCall()->move_from();
          step->b = ins->instr_args_as_MoveCall()->move_to();
          note_constant_use(step->a, false);
          break;
        case ember_fb::InstructionArguments::JumpFalseCall:
          step->kind = Step::Kind::JumpFalse;
          step->a = ins->instr_args_as_JumpFalseCall()->cond_value_index();
          step->b = ins->instr_args_as_JumpFalseCall()->destination_instruction();
          break;
        case ember_fb::InstructionArguments::FreeCall:
          step->kind = Step::Kind::Free;
          step->a = ins->instr_args_as_FreeCall()->value_index();
          break;
        default:
          return set_error(Error::InvalidProgram, "method '%s' instruction %u: unknown kind",
                           name(), k);
      }
    }
    return Error::Ok;
  }

  // One scratch buffer for the whole method, as large as the largest request
  // of its kernels' prepare steps: instructions run one at a time, so they
  // can share it (KernelContext::scratch).
  Error init_scratch() {
    if (scratch_request_ == 0) return Error::Ok;
    void* p = alloc_->allocate(scratch_request_, 64);
    EMBER_CHECK_OR_RETURN(p != nullptr, Error::MemoryAllocationFailed,
                          "method '%s': method allocator exhausted allocating %zu bytes of "
                          "kernel scratch (%zu of %zu bytes used)",
                          name(), scratch_request_, alloc_->used(), alloc_->capacity());
    method_.scratch_ = p;
    method_.scratch_size_ = scratch_request_;
    method_.prepared_bytes_ += scratch_request_;
    return Error::Ok;
  }

  // With a known signature, every argument must be of the kind the kernel
  // reads, and its dtype argument of a dtype it computes (the op list's
  // `dtypes:`); the kernels still check the other dtypes and shapes at run time.
  Error check_argument_kinds(uint32_t k, const Kernel& kernel, const Step& step) {
    const KernelSignature typed{kernel.name, kernel.kinds, kernel.arg_names};
    const KernelSignature* sig =
        kernel.kinds != nullptr ? &typed : find_kernel_signature(step.op_name);
    if (sig == nullptr) return Error::Ok;
    if (check_kernel_arguments(*sig, step.args, step.num_args) == Error::Ok &&
        check_kernel_dtype(kernel, step.args, step.num_args) == Error::Ok) {
      return Error::Ok;
    }
    char reason[400];
    std::snprintf(reason, sizeof(reason), "%s", last_error_message());
    return set_error(Error::InvalidProgram, "method '%s' instruction %u: %s", name(), k, reason);
  }

  // constant[a]: args[a] is a tensor whose data is in the program.
  Error constant_flags(uint32_t k, const Step& step, const flatbuffers::Vector<int32_t>* args,
                       bool (&constant)[kMaxKernelArgs]) {
    EMBER_CHECK_OR_RETURN(step.num_args <= kMaxKernelArgs, Error::NotSupported,
                          "method '%s' instruction %u: %s: %u arguments are more than %zu",
                          name(), k, step.op_name, step.num_args, kMaxKernelArgs);
    for (uint32_t a = 0; a < step.num_args; ++a) {
      const auto* fv = plan_->values()->Get(static_cast<uint32_t>(args->Get(a)));
      const auto* t = fv->val_type() == ember_fb::KernelTypes::Tensor ? fv->val_as_Tensor() : nullptr;
      const auto* extra = t != nullptr ? t->extra_tensor_info() : nullptr;
      constant[a] = t != nullptr && t->allocation_info() == nullptr &&
                    (t->data_buffer_idx() > 0 ||
                     (extra != nullptr && extra->location() == ember_fb::TensorDataLocation::EXTERNAL));
    }
    return Error::Ok;
  }

  // The kernel's prepare step (KernelPrepareContext): validates, derives
  // and packs once; what it leaves is the step's state.
  Error run_kernel_prepare(uint32_t k, const Kernel& kernel, Step* step,
                           const flatbuffers::Vector<int32_t>* args,
                           bool (&packed)[kMaxKernelArgs]) {
    bool constant[kMaxKernelArgs] = {};
    EMBER_TRY(constant_flags(k, *step, args, constant));
    KernelPrepareContext ctx(step->op_name, alloc_, step->args, constant, step->num_args,
                             method_.thread_pool_, packed);
    const Error err = kernel.prepare(ctx, step->args);
    method_.prepared_bytes_ += ctx.prepared_bytes();
    if (ctx.scratch_bytes() > scratch_request_) scratch_request_ = ctx.scratch_bytes();
    step->prepared_bytes = ctx.prepared_bytes() > UINT32_MAX
                               ? UINT32_MAX
                               : static_cast<uint32_t>(ctx.prepared_bytes());
    if (err == Error::Ok) {
      step->state = ctx.state();
      return Error::Ok;
    }
    char reason[400];
    std::snprintf(reason, sizeof(reason), "%s", last_error_message());
    return set_error(err, "method '%s' instruction %u: %s", name(), k, reason);
  }



  // Which constants something reads at execute. constant_use_[i] for
  // constant buffer i: 0 unused, 1 read only by prepare steps that packed it
  // (KernelPrepareContext::mark_packed), 2 read at execute. A constant is
  // handed back to the data loader when it is first packed (DataLoader::
  // drop_pages), so an mmapped file's weights do not sit in memory beside
  // their packed copy; count_dropped_constants counts those that stay at 1.
  Error init_constant_uses() {
    const auto* fb = program_.flatbuffer();
    const auto* cs = fb->constant_segment();
    num_constant_buffers_ = cs != nullptr && cs->offsets() != nullptr ? cs->offsets()->size()
                            : fb->constant_buffer() != nullptr    ? fb->constant_buffer()->size()
                                                                  : 0;
    if (num_constant_buffers_ == 0) return Error::Ok;
    EMBER_TRY_ASSIGN(constant_use_, alloc_array<uint8_t>(num_constant_buffers_, "constant uses"));
    for (size_t i = 0; i < num_constant_buffers_; ++i) constant_use_[i] = 0;
    for (uint32_t i = 0; plan_->outputs() != nullptr && i < plan_->outputs()->size(); ++i) {
      note_constant_use(plan_->outputs()->Get(i), false);
    }
    return Error::Ok;
  }

  // The constant buffer value `index` reads, or 0 (none).
  uint32_t constant_buffer_of(int32_t index) const {
    if (index < 0 || static_cast<size_t>(index) >= plan_->values()->size()) return 0;
    const auto* v = plan_->values()->Get(static_cast<uint32_t>(index));
    if (v->val_type() != ember_fb::KernelTypes::Tensor) return 0;
    const auto* t = v->val_as_Tensor();
    if (t->allocation_info() != nullptr || t->data_buffer_idx() == 0) return 0;
    return t->data_buffer_idx() < num_constant_buffers_ ? t->data_buffer_idx() : 0;
  }

  void note_constant_use(int32_t index, bool packed) {
    if (constant_use_ == nullptr || index < 0 ||
        static_cast<size_t>(index) >= plan_->values()->size()) {
      return;
    }
    const auto* v = plan_->values()->Get(static_cast<uint32_t>(index));
    if (v->val_type() == ember_fb::KernelTypes::TensorList) {
      const auto* items = v->val_as_TensorList()->items();
      for (uint32_t i = 0; items != nullptr && i < items->size(); ++i) {
        note_constant_use(items->Get(i), false);
      }
      return;
    }
    if (v->val_type() == ember_fb::KernelTypes::OptionalTensorList) {
      const auto* items = v->val_as_OptionalTensorList()->items();
      for (uint32_t i = 0; items != nullptr && i < items->size(); ++i) {
        note_constant_use(items->Get(i), false);
      }
      return;
    }
    const uint32_t buffer = constant_buffer_of(index);
    if (buffer == 0) return;
    uint8_t& use = constant_use_[buffer];
    if (packed && use == 0) {
      // Dropped as soon as it is packed, so the original and its packed copy
      // are never both in memory for long (peak RSS). Should a later
      // instruction read it after all, its pages are simply read back.
      const Tensor* t = method_.values_[index].as_tensor;
      program_.drop_constant_pages(t->data, t->nbytes());
      use = 1;
    } else if (!packed) {
      use = 2;
    }
  }

  // Counts the constants only prepare steps read (the ones that stay dropped).
  void count_dropped_constants() {
    if (constant_use_ == nullptr) return;
    for (size_t i = 0; i < method_.num_values_; ++i) {
      const uint32_t buffer = constant_buffer_of(static_cast<int32_t>(i));
      if (buffer == 0 || constant_use_[buffer] != 1) continue;
      method_.dropped_constant_bytes_ += method_.values_[i].as_tensor->nbytes();
      constant_use_[buffer] = 3;  // Counted: once per buffer.
    }
  }

  // Looks up each delegate's backend and runs its init with the processed
  // blob (inline or from a segment) and compile specs. Handles are counted
  // as they succeed so the method's destructor destroys exactly those.
  Error init_delegates() {
    const auto* delegates = plan_->delegates();
    const size_t n = delegates != nullptr ? delegates->size() : 0;
    EMBER_TRY_ASSIGN(method_.delegates_, alloc_array<DelegateInstance>(n, "delegates"));
    for (uint32_t i = 0; i < n; ++i) {
      const auto* d = delegates->Get(i);
      const char* id = d->id()->c_str();
      const BackendInterface* backend = find_backend(id);
      EMBER_CHECK_OR_RETURN(backend != nullptr, Error::DelegateMissing,
                            "method '%s' delegate %u: backend '%s' is not registered in this "
                            "runtime",
                            name(), i, id);
      EMBER_CHECK_OR_RETURN(backend->is_available(), Error::DelegateInvalidCompatibility,
                            "method '%s' delegate %u: backend '%s' is not available on this "
                            "device",
                            name(), i, id);
      EMBER_TRY_ASSIGN(FreeableBuffer blob, program_.load_delegate_data(d->processed()));
      const auto* specs = d->compile_specs();
      const size_t num_specs = specs != nullptr ? specs->size() : 0;
      EMBER_TRY_ASSIGN(CompileSpec * spec_array, alloc_array<CompileSpec>(num_specs, "compile specs"));
      for (uint32_t k = 0; k < num_specs; ++k) {
        const auto* spec = specs->Get(k);
        new (&spec_array[k]) CompileSpec();
        if (spec->key() != nullptr) spec_array[k].key = spec->key()->string_view();
        if (spec->value() != nullptr) {
          spec_array[k].value = std::span<const uint8_t>(spec->value()->data(), spec->value()->size());
        }
      }
      BackendInitContext ctx{alloc_, name()};
      Result<DelegateHandle*> handle =
          backend->init(ctx, &blob, std::span<const CompileSpec>(spec_array, num_specs));
      blob.release();
      if (!handle.ok()) {
        char reason[400];
        std::snprintf(reason, sizeof(reason), "%s",
                      ctx.failed ? last_error_message() : error_name(handle.error()));
        return set_error(handle.error(), "method '%s' delegate %u: backend '%s' failed to init: %s",
                         name(), i, id, reason);
      }
      method_.delegates_[i] = DelegateInstance{backend, handle.get(), id, ctx.events_per_execute};
      method_.num_delegates_ = i + 1;
    }
    return Error::Ok;
  }

  // Builds "name.overload" in the method allocator and finds its kernel.
  Error resolve_kernel(uint32_t k, const ember_fb::Operator* op, Step* step) {
    const char* op_name = op->name()->c_str();
    const char* overload = op->overload() != nullptr ? op->overload()->c_str() : "";
    const size_t name_len = std::strlen(op_name);
    const size_t overload_len = std::strlen(overload);
    EMBER_TRY_ASSIGN(char* full, alloc_array<char>(name_len + overload_len + 2, "operator names"));
    std::memcpy(full, op_name, name_len);
    size_t pos = name_len;
    if (overload_len > 0) {
      full[pos++] = '.';
      std::memcpy(full + pos, overload, overload_len);
      pos += overload_len;
    }
    full[pos] = '\0';
    const Kernel* kernel = find_kernel(std::string_view(full, pos));
    EMBER_CHECK_OR_RETURN(kernel != nullptr, Error::OperatorMissing,
                          "method '%s' instruction %u: no kernel is registered for operator %s",
                          name(), k, full);
    step->kind = Step::Kind::Kernel;
    step->fn = kernel->fn;
    step->op_name = kernel->name;
    return Error::Ok;
  }

  const Program& program_;
  const ember_fb::ExecutionPlan* plan_;
  MemoryManager* mm_;
  MemoryAllocator* alloc_;
  const NamedDataMap* named_data_;
  uint8_t* constant_use_ = nullptr;
  size_t num_constant_buffers_ = 0;
  size_t scratch_request_ = 0;  // Largest KernelPrepareContext::reserve_scratch.
  Method method_;
};

Result<Method> Program::load_method(const char* method_name, MemoryManager* memory_manager,
                                    const NamedDataMap* named_data) const {
  EMBER_CHECK_OR_RETURN(memory_manager != nullptr && memory_manager->method_allocator() != nullptr,
                        Error::InvalidArgument, "load_method('%s'): no memory manager",
                        method_name);
  const ember_fb::ExecutionPlan* plan = nullptr;
  for (size_t i = 0; i < num_methods(); ++i) {
    const auto* p = program_->execution_plan()->Get(static_cast<uint32_t>(i));
    if (std::strcmp(p->name()->c_str(), method_name) == 0) plan = p;
  }
  EMBER_CHECK_OR_RETURN(plan != nullptr, Error::NotFound,
                        "the program has no method named '%s'", method_name);
  if (!plans_verified_) {
    EMBER_TRY(verify_plan(program_, plan, constant_segment_.size(), mutable_segment_.size()));
  }
  return MethodLoader(*this, plan, memory_manager, named_data).load();
}

}  // namespace ember
