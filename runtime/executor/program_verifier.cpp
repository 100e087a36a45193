#include "runtime/executor/program_verifier.h"

#include "runtime/core/scalar_type.h"
#include "runtime/core/tensor.h"
#include "schema/program_generated.h"

namespace ember {
namespace {

using ember_fb::KernelTypes;

constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 48;

bool add_overflows(uint64_t a, uint64_t b) { return a > UINT64_MAX - b; }

// The FlatBuffer verifier only checks 4-byte alignment of vectors; vectors of
// 8-byte elements must be 8-aligned before their elements are read. An empty
// vector has nothing to read: FlatBuffers builders (ours and flatc's JSON
// parser) do not pad before one, so its data pointer may be 4-aligned.
template <typename Vec>
bool aligned8(const Vec* v) {
  return v == nullptr || v->size() == 0 || reinterpret_cast<uintptr_t>(v->data()) % 8 == 0;
}

const char* plan_name(const ember_fb::ExecutionPlan* plan) {
  return plan->name() != nullptr ? plan->name()->c_str() : "<unnamed>";
}

// Bytes of a tensor's data at its (upper-bound) sizes, or an error.
Error tensor_nbytes(const char* method, size_t index, const ember_fb::Tensor* t,
                    uint64_t* nbytes) {
  const int type = static_cast<int>(t->scalar_type());
  EMBER_CHECK_OR_RETURN(is_valid_scalar_type(type), Error::InvalidProgram,
                        "method '%s' value %zu: unknown scalar type %d", method, index, type);
  const auto* sizes = t->sizes();
  const uint32_t dim = sizes != nullptr ? sizes->size() : 0;
  EMBER_CHECK_OR_RETURN(dim <= static_cast<uint32_t>(kTensorMaxDim), Error::InvalidProgram,
                        "method '%s' value %zu: tensor rank %u exceeds the maximum %d", method,
                        index, dim, kTensorMaxDim);
  const auto* dim_order = t->dim_order();
  const uint32_t order_len = dim_order != nullptr ? dim_order->size() : 0;
  EMBER_CHECK_OR_RETURN(order_len == dim, Error::InvalidProgram,
                        "method '%s' value %zu: dim_order has %u entries for a rank-%u tensor",
                        method, index, order_len, dim);
  bool seen[kTensorMaxDim] = {};
  for (uint32_t i = 0; i < dim; ++i) {
    const uint32_t d = dim_order->Get(i);
    EMBER_CHECK_OR_RETURN(d < dim && !seen[d], Error::InvalidProgram,
                          "method '%s' value %zu: dim_order is not a permutation of 0..%u",
                          method, index, dim - 1);
    seen[d] = true;
  }
  const uint64_t esize = element_size(static_cast<ScalarType>(type));
  uint64_t n = 1;
  for (uint32_t i = 0; i < dim; ++i) {
    const int32_t s = sizes->Get(i);
    EMBER_CHECK_OR_RETURN(s >= 0, Error::InvalidProgram,
                          "method '%s' value %zu: negative size %d in dim %u", method, index, s,
                          i);
    if (s == 0) {
      n = 0;
    } else {
      EMBER_CHECK_OR_RETURN(n <= kMaxTensorBytes / esize / static_cast<uint64_t>(s),
                            Error::InvalidProgram,
                            "method '%s' value %zu: tensor byte size overflows", method, index);
      n *= static_cast<uint64_t>(s);
    }
  }
  *nbytes = n * esize;
  return Error::Ok;
}

Error verify_tensor(const ember_fb::Program* program, const ember_fb::ExecutionPlan* plan,
                    size_t index, const ember_fb::Tensor* t, size_t constant_segment_size,
                    size_t mutable_segment_size) {
  const char* method = plan_name(plan);
  uint64_t nbytes = 0;
  EMBER_TRY(tensor_nbytes(method, index, t, &nbytes));
  EMBER_CHECK_OR_RETURN(t->storage_offset() == 0, Error::InvalidProgram,
                        "method '%s' value %zu: storage_offset %d is not 0", method, index,
                        t->storage_offset());
  const auto* info = t->extra_tensor_info();
  if (info != nullptr && info->location() == ember_fb::TensorDataLocation::EXTERNAL) {
    // Bound at load_method from the named-data map, by this name.
    EMBER_CHECK_OR_RETURN(info->fully_qualified_name() != nullptr &&
                              info->fully_qualified_name()->size() > 0,
                          Error::InvalidProgram,
                          "method '%s' value %zu: external tensor without a fully qualified name",
                          method, index);
    EMBER_CHECK_OR_RETURN(t->allocation_info() == nullptr, Error::InvalidProgram,
                          "method '%s' value %zu: external tensor '%s' also has planned memory",
                          method, index, info->fully_qualified_name()->c_str());
    const auto* inputs = plan->inputs();
    for (uint32_t i = 0; inputs != nullptr && i < inputs->size(); ++i) {
      EMBER_CHECK_OR_RETURN(inputs->Get(i) != static_cast<int32_t>(index), Error::InvalidProgram,
                            "method '%s' value %zu: input %u is an external tensor", method,
                            index, i);
    }
    return Error::Ok;
  }
  const auto* alloc = t->allocation_info();
  const uint32_t buffer_idx = t->data_buffer_idx();
  if (alloc != nullptr) {
    const auto* buffer_sizes = plan->non_const_buffer_sizes();
    const uint32_t id = alloc->memory_id();
    EMBER_CHECK_OR_RETURN(buffer_sizes != nullptr && id >= 1 && id < buffer_sizes->size(),
                          Error::InvalidProgram,
                          "method '%s' value %zu: memory_id %u names no planned buffer (the "
                          "plan has %u)",
                          method, index, id,
                          buffer_sizes != nullptr && buffer_sizes->size() > 0
                              ? buffer_sizes->size() - 1
                              : 0u);
    const int64_t buffer_size = buffer_sizes->Get(id);
    const uint64_t offset =
        uint64_t{alloc->memory_offset_low()} | (uint64_t{alloc->memory_offset_high()} << 32);
    EMBER_CHECK_OR_RETURN(buffer_size >= 0 && !add_overflows(offset, nbytes) &&
                              offset + nbytes <= static_cast<uint64_t>(buffer_size),
                          Error::InvalidProgram,
                          "method '%s' value %zu: planned offset %llu + %llu bytes is past the "
                          "end of buffer %u (%lld bytes)",
                          method, index, static_cast<unsigned long long>(offset),
                          static_cast<unsigned long long>(nbytes), id,
                          static_cast<long long>(buffer_size));
    if (buffer_idx > 0) {
      // A mutable buffer: planned memory that load_method fills with its
      // initial value, entry `buffer_idx` of mutable_data_segments[0].
      const auto* segs = program->mutable_data_segments();
      const auto* offsets =
          segs != nullptr && segs->size() > 0 ? segs->Get(0)->offsets() : nullptr;
      EMBER_CHECK_OR_RETURN(offsets != nullptr && buffer_idx < offsets->size(),
                            Error::InvalidProgram,
                            "method '%s' value %zu: initial value %u of a mutable buffer is out "
                            "of range (%u in mutable_data_segments[0])",
                            method, index, buffer_idx,
                            offsets != nullptr && offsets->size() > 0 ? offsets->size() - 1 : 0u);
      const uint64_t data_offset = offsets->Get(buffer_idx);
      EMBER_CHECK_OR_RETURN(!add_overflows(data_offset, nbytes) &&
                                data_offset + nbytes <= mutable_segment_size,
                            Error::InvalidProgram,
                            "method '%s' value %zu: initial value %u (%llu bytes at %llu) lies "
                            "past the end of the mutable data segment (%zu bytes)",
                            method, index, buffer_idx, static_cast<unsigned long long>(nbytes),
                            static_cast<unsigned long long>(data_offset), mutable_segment_size);
    }
  } else if (buffer_idx == 0 && nbytes > 0) {
    // No memory in the file: only a method input can get its data at run
    // time (through set_input); anything else would run on a null pointer.
    bool is_input = false;
    const auto* inputs = plan->inputs();
    for (uint32_t i = 0; inputs != nullptr && i < inputs->size(); ++i) {
      is_input = is_input || inputs->Get(i) == static_cast<int32_t>(index);
    }
    EMBER_CHECK_OR_RETURN(is_input, Error::InvalidProgram,
                          "method '%s' value %zu: tensor of %llu bytes has neither planned nor "
                          "constant memory and is not a method input",
                          method, index, static_cast<unsigned long long>(nbytes));
  } else if (buffer_idx > 0) {
    const auto* cs = program->constant_segment();
    if (cs != nullptr && cs->offsets() != nullptr) {
      const auto* offsets = cs->offsets();
      EMBER_CHECK_OR_RETURN(buffer_idx < offsets->size(), Error::InvalidProgram,
                            "method '%s' value %zu: constant index %u is out of range (%u "
                            "constants)",
                            method, index, buffer_idx, offsets->size());
      const uint64_t offset = offsets->Get(buffer_idx);
      EMBER_CHECK_OR_RETURN(!add_overflows(offset, nbytes) &&
                                offset + nbytes <= constant_segment_size,
                            Error::InvalidProgram,
                            "method '%s' value %zu: constant %u (%llu bytes at %llu) lies past "
                            "the end of the constant segment (%zu bytes)",
                            method, index, buffer_idx, static_cast<unsigned long long>(nbytes),
                            static_cast<unsigned long long>(offset), constant_segment_size);
    } else {
      const auto* legacy = program->constant_buffer();
      EMBER_CHECK_OR_RETURN(legacy != nullptr && buffer_idx < legacy->size(),
                            Error::InvalidProgram,
                            "method '%s' value %zu: constant index %u is out of range", method,
                            index, buffer_idx);
      const auto* storage = legacy->Get(buffer_idx)->storage();
      EMBER_CHECK_OR_RETURN(storage != nullptr && storage->size() >= nbytes,
                            Error::InvalidProgram,
                            "method '%s' value %zu: constant buffer %u is smaller than the "
                            "tensor (%llu bytes)",
                            method, index, buffer_idx, static_cast<unsigned long long>(nbytes));
    }
    // A constant is read-only (an mmapped file, packed copies made at load):
    // set_input must never write into one.
    const auto* inputs = plan->inputs();
    for (uint32_t i = 0; inputs != nullptr && i < inputs->size(); ++i) {
      EMBER_CHECK_OR_RETURN(inputs->Get(i) != static_cast<int32_t>(index), Error::InvalidProgram,
                            "method '%s' value %zu: input %u has constant data (buffer %u); a "
                            "method input must be planned or caller-provided",
                            method, index, i, buffer_idx);
    }
  }
  return Error::Ok;
}

// Every entry of `list` must index a value of kind `want` (or be -1 when allowed).
template <typename Vec>
Error verify_value_refs(const char* method, size_t index, const char* what, const Vec* list,
                        const ember_fb::ExecutionPlan* plan, KernelTypes want, bool allow_none) {
  if (list == nullptr) return Error::Ok;
  const auto* values = plan->values();
  const uint32_t n = values->size();
  for (uint32_t j = 0; j < list->size(); ++j) {
    const auto item = list->Get(j);
    if (allow_none && item == -1) continue;
    EMBER_CHECK_OR_RETURN(item >= 0 && static_cast<uint64_t>(item) < n, Error::InvalidProgram,
                          "method '%s' value %zu: %s item %u refers to value %lld, out of range "
                          "(%u values)",
                          method, index, what, j, static_cast<long long>(item), n);
    const auto got = values->Get(static_cast<uint32_t>(item))->val_type();
    EMBER_CHECK_OR_RETURN(got == want, Error::InvalidProgram,
                          "method '%s' value %zu: %s item %u refers to value %lld of kind %s",
                          method, index, what, j, static_cast<long long>(item),
                          ember_fb::EnumNameKernelTypes(got));
  }
  return Error::Ok;
}

Error verify_index(const char* method, const char* what, size_t where, int64_t index,
                   size_t limit, const char* of_what) {
  EMBER_CHECK_OR_RETURN(index >= 0 && static_cast<uint64_t>(index) < limit,
                        Error::InvalidProgram,
                        "method '%s' %s %zu: %s index %lld is out of range (%zu %s)", method,
                        what, where, of_what, static_cast<long long>(index), limit, of_what);
  return Error::Ok;
}

}  // namespace

Error verify_program(const ember_fb::Program* program, const ProgramLayout& layout) {
  const auto* segments = program->segments();
  if (segments != nullptr) {
    for (uint32_t i = 0; i < segments->size(); ++i) {
      const auto* seg = segments->Get(i);
      const uint64_t start = layout.segment_base_offset;
      EMBER_CHECK_OR_RETURN(
          !add_overflows(start, seg->offset()) && !add_overflows(start + seg->offset(), seg->size()) &&
              start + seg->offset() + seg->size() <= layout.file_size,
          Error::InvalidProgram,
          "segment %u (%llu bytes at %llu) lies past the end of the file (%zu bytes)", i,
          static_cast<unsigned long long>(seg->size()),
          static_cast<unsigned long long>(start + seg->offset()), layout.file_size);
    }
  }
  const uint32_t num_segments = segments != nullptr ? segments->size() : 0;
  const auto* cs = program->constant_segment();
  EMBER_CHECK_OR_RETURN(cs == nullptr || aligned8(cs->offsets()), Error::InvalidProgram,
                        "constant segment offsets are not 8-byte aligned");
  if (cs != nullptr && cs->offsets() != nullptr && cs->offsets()->size() > 1) {
    EMBER_CHECK_OR_RETURN(cs->segment_index() < num_segments, Error::InvalidProgram,
                          "constant segment index %u is out of range (%u segments)",
                          cs->segment_index(), num_segments);
  }
  // (Program::load checks the mutable data segment's index before loading it.)
  const auto* mutable_segments = program->mutable_data_segments();
  EMBER_CHECK_OR_RETURN(mutable_segments == nullptr || mutable_segments->size() == 0 ||
                            aligned8(mutable_segments->Get(0)->offsets()),
                        Error::InvalidProgram, "mutable data segment offsets are not 8-byte aligned");
  const auto* plans = program->execution_plan();
  EMBER_CHECK_OR_RETURN(plans != nullptr && plans->size() > 0, Error::InvalidProgram,
                        "program has no execution plans");
  for (uint32_t i = 0; i < plans->size(); ++i) {
    const auto* plan = plans->Get(i);
    EMBER_CHECK_OR_RETURN(plan->name() != nullptr, Error::InvalidProgram,
                          "execution plan %u has no name", i);
    const auto* delegates = plan->delegates();
    if (delegates == nullptr) continue;
    for (uint32_t d = 0; d < delegates->size(); ++d) {
      const auto* del = delegates->Get(d);
      const auto* ref = del->processed();
      EMBER_CHECK_OR_RETURN(del->id() != nullptr && ref != nullptr, Error::InvalidProgram,
                            "method '%s' delegate %u: missing backend id or processed data",
                            plan->name()->c_str(), d);
      const uint32_t limit =
          ref->location() == ember_fb::DataLocation::INLINE
              ? (program->backend_delegate_data() != nullptr ? program->backend_delegate_data()->size() : 0)
              : num_segments;
      EMBER_CHECK_OR_RETURN(ref->index() < limit, Error::InvalidProgram,
                            "method '%s' delegate %u ('%s'): data index %u is out of range (%u)",
                            plan->name()->c_str(), d, del->id()->c_str(), ref->index(), limit);
    }
  }
  return Error::Ok;
}

Error verify_plan(const ember_fb::Program* program, const ember_fb::ExecutionPlan* plan,
                  size_t constant_segment_size, size_t mutable_segment_size) {
  const char* method = plan_name(plan);
  const auto* values = plan->values();
  EMBER_CHECK_OR_RETURN(values != nullptr, Error::InvalidProgram, "method '%s' has no values",
                        method);
  const size_t n_values = values->size();
  const auto* buffer_sizes = plan->non_const_buffer_sizes();
  EMBER_CHECK_OR_RETURN(aligned8(buffer_sizes), Error::InvalidProgram,
                        "method '%s': planned buffer sizes are not 8-byte aligned", method);
  const auto* cs = program->constant_segment();
  EMBER_CHECK_OR_RETURN(cs == nullptr || aligned8(cs->offsets()), Error::InvalidProgram,
                        "constant segment offsets are not 8-byte aligned");
  if (buffer_sizes != nullptr) {
    // Bounded one by one and in total, so no caller summing them (to
    // allocate) can overflow: a fuzzed plan once asked for 2^62-byte buffers.
    constexpr int64_t kMaxPlannedBytes = int64_t{1} << 48;
    int64_t total = 0;
    for (uint32_t i = 0; i < buffer_sizes->size(); ++i) {
      const int64_t size = buffer_sizes->Get(i);
      EMBER_CHECK_OR_RETURN(size >= 0, Error::InvalidProgram,
                            "method '%s': planned buffer %u has negative size %lld", method, i,
                            static_cast<long long>(size));
      EMBER_CHECK_OR_RETURN(size <= kMaxPlannedBytes - total, Error::InvalidProgram,
                            "method '%s': planned buffer %u (%lld bytes) takes the plan past "
                            "2^48 bytes",
                            method, i, static_cast<long long>(size));
      total += size;
    }
  }
  for (uint32_t i = 0; i < n_values; ++i) {
    const auto* v = values->Get(i);
    // The FlatBuffer verifier accepts a union tag whose table is absent.
    EMBER_CHECK_OR_RETURN(v->val() != nullptr, Error::InvalidProgram,
                          "method '%s' value %u: kind %d has no data", method, i,
                          static_cast<int>(v->val_type()));
    switch (v->val_type()) {
      case KernelTypes::Null:
      case KernelTypes::Int:
      case KernelTypes::Bool:
      case KernelTypes::Double:
        break;
      case KernelTypes::String:
        EMBER_CHECK_OR_RETURN(v->val_as_String()->string_val() != nullptr, Error::InvalidProgram,
                              "method '%s' value %u: string without data", method, i);
        break;
      case KernelTypes::Tensor:
        EMBER_TRY(verify_tensor(program, plan, i, v->val_as_Tensor(), constant_segment_size,
                                  mutable_segment_size));
        break;
      case KernelTypes::IntList:
        EMBER_CHECK_OR_RETURN(aligned8(v->val_as_IntList()->items()), Error::InvalidProgram,
                              "method '%s' value %u: IntList items are not 8-byte aligned",
                              method, i);
        EMBER_TRY(verify_value_refs(method, i, "IntList", v->val_as_IntList()->items(), plan,
                                    KernelTypes::Int, false));
        break;
      case KernelTypes::DoubleList:
        EMBER_CHECK_OR_RETURN(aligned8(v->val_as_DoubleList()->items()), Error::InvalidProgram,
                              "method '%s' value %u: DoubleList items are not 8-byte aligned",
                              method, i);
        break;
      case KernelTypes::BoolList:
        break;
      case KernelTypes::TensorList:
        EMBER_TRY(verify_value_refs(method, i, "TensorList", v->val_as_TensorList()->items(),
                                    plan, KernelTypes::Tensor, false));
        break;
      case KernelTypes::OptionalTensorList:
        EMBER_TRY(verify_value_refs(method, i, "OptionalTensorList",
                                    v->val_as_OptionalTensorList()->items(), plan,
                                    KernelTypes::Tensor, true));
        break;
      default:
        return set_error(Error::InvalidProgram, "method '%s' value %u: unknown value kind %d",
                         method, i, static_cast<int>(v->val_type()));
    }
  }
  const auto check_io = [&](const auto* list, const char* what) -> Error {
    if (list == nullptr) return Error::Ok;
    for (uint32_t i = 0; i < list->size(); ++i) {
      EMBER_TRY(verify_index(method, what, i, list->Get(i), n_values, "values"));
    }
    return Error::Ok;
  };
  EMBER_TRY(check_io(plan->inputs(), "input"));
  EMBER_TRY(check_io(plan->outputs(), "output"));

  const size_t n_ops = plan->operators() != nullptr ? plan->operators()->size() : 0;
  for (uint32_t i = 0; i < n_ops; ++i) {
    const auto* op = plan->operators()->Get(i);
    EMBER_CHECK_OR_RETURN(op->name() != nullptr, Error::InvalidProgram,
                          "method '%s' operator %u has no name", method, i);
  }
  const size_t n_delegates = plan->delegates() != nullptr ? plan->delegates()->size() : 0;
  const auto* chains = plan->chains();
  EMBER_CHECK_OR_RETURN(chains != nullptr && chains->size() > 0, Error::InvalidProgram,
                        "method '%s' has no chain of instructions", method);
  for (uint32_t c = 0; c < chains->size(); ++c) {
    const auto* chain = chains->Get(c);
    EMBER_TRY(check_io(chain->inputs(), "chain input"));
    EMBER_TRY(check_io(chain->outputs(), "chain output"));
    const auto* instrs = chain->instructions();
    if (instrs == nullptr) continue;
    const size_t n_instr = instrs->size();
    for (uint32_t k = 0; k < n_instr; ++k) {
      const auto* ins = instrs->Get(k);
      EMBER_CHECK_OR_RETURN(ins->instr_args() != nullptr, Error::InvalidProgram,
                            "method '%s' instruction %u: kind %d has no arguments", method, k,
                            static_cast<int>(ins->instr_args_type()));
      switch (ins->instr_args_type()) {
        case ember_fb::InstructionArguments::KernelCall: {
          const auto* call = ins->instr_args_as_KernelCall();
          EMBER_TRY(verify_index(method, "instruction", k, call->op_index(), n_ops, "operators"));
          if (call->args() != nullptr) {
            for (uint32_t a = 0; a < call->args()->size(); ++a) {
              EMBER_TRY(verify_index(method, "instruction", k, call->args()->Get(a), n_values,
                                     "values"));
            }
          }
          break;
        }
        case ember_fb::InstructionArguments::DelegateCall: {
          const auto* call = ins->instr_args_as_DelegateCall();
          EMBER_TRY(verify_index(method, "instruction", k, call->delegate_index(), n_delegates,
                                 "delegates"));
          if (call->args() != nullptr) {
            for (uint32_t a = 0; a < call->args()->size(); ++a) {
              EMBER_TRY(verify_index(method, "instruction", k, call->args()->Get(a), n_values,
                                     "values"));
            }
          }
          break;
        }
        case ember_fb::InstructionArguments::MoveCall: {
          const auto* mv = ins->instr_args_as_MoveCall();
          EMBER_TRY(verify_index(method, "instruction", k, mv->move_from(), n_values, "values"));
          EMBER_TRY(verify_index(method, "instruction", k, mv->move_to(), n_values, "values"));
          break;
        }
        case ember_fb::InstructionArguments::JumpFalseCall: {
          const auto* jf = ins->instr_args_as_JumpFalseCall();
          EMBER_TRY(verify_index(method, "instruction", k, jf->cond_value_index(), n_values,
                                 "values"));
          // Jumping to n_instr ends the chain; anything else must be inside it.
          EMBER_TRY(verify_index(method, "instruction", k, jf->destination_instruction(),
                                 n_instr + 1, "instructions"));
          break;
        }
        case ember_fb::InstructionArguments::FreeCall:
          EMBER_TRY(verify_index(method, "instruction", k,
                                 ins->instr_args_as_FreeCall()->value_index(), n_values,
                                 "values"));
          break;
        default:
          return set_error(Error::InvalidProgram,
                           "method '%s' instruction %u: unknown instruction kind %d", method, k,
                           static_cast<int>(ins->instr_args_type()));
      }
    }
  }
  return Error::Ok;
}

}  // namespace ember
