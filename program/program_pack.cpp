#include "program/program_pack.h"

#include <string>
#include <vector>

namespace ember::program {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

// A present string, empty or not.
Offset<flatbuffers::String> str(FlatBufferBuilder& fbb, const std::string& s) {
  // Shared: the source frames (Chain.stacktrace) repeat file names and lines
  // across instructions, operator names repeat across methods.
  return fbb.CreateSharedString(s);
}

// A present vector of tables, each packed by `pack`.
template <typename T, typename Pack>
auto tables(FlatBufferBuilder& fbb, const std::vector<std::unique_ptr<T>>& items, Pack pack) {
  std::vector<decltype(pack(fbb, *items.front()))> offsets;
  offsets.reserve(items.size());
  for (const auto& item : items) offsets.push_back(pack(fbb, *item));
  return fbb.CreateVector(offsets);
}

Offset<ember_fb::ExtraTensorInfo> pack_extra(FlatBufferBuilder& fbb,
                                             const ember_fb::ExtraTensorInfoT& e) {
  return ember_fb::CreateExtraTensorInfo(fbb, e.mutable_data_segments_idx,
                                         str(fbb, e.fully_qualified_name), e.location,
                                         e.device_type, e.device_index);
}

Offset<ember_fb::Tensor> pack_tensor(FlatBufferBuilder& fbb, const ember_fb::TensorT& t) {
  auto sizes = fbb.CreateVector(t.sizes);
  auto dim_order = fbb.CreateVector(t.dim_order);
  Offset<ember_fb::AllocationDetails> allocation = 0;
  if (t.allocation_info) allocation = ember_fb::CreateAllocationDetails(fbb, t.allocation_info.get());
  Offset<ember_fb::ExtraTensorInfo> extra = 0;
  if (t.extra_tensor_info) extra = pack_extra(fbb, *t.extra_tensor_info);
  return ember_fb::CreateTensor(fbb, t.scalar_type, t.storage_offset, sizes, dim_order,
                                t.requires_grad, t.data_buffer_idx, allocation, t.layout,
                                t.shape_dynamism, extra);
}

Offset<void> pack_kernel_type(FlatBufferBuilder& fbb, const ember_fb::KernelTypesUnion& u) {
  using K = ember_fb::KernelTypes;
  switch (u.type) {
    case K::Tensor:
      return pack_tensor(fbb, *u.AsTensor()).Union();
    case K::String:
      return ember_fb::CreateString(fbb, str(fbb, u.AsString()->string_val)).Union();
    case K::IntList:
      return ember_fb::CreateIntList(fbb, fbb.CreateVector(u.AsIntList()->items)).Union();
    case K::DoubleList:
      return ember_fb::CreateDoubleList(fbb, fbb.CreateVector(u.AsDoubleList()->items)).Union();
    case K::BoolList:
      return ember_fb::CreateBoolList(fbb, fbb.CreateVector(u.AsBoolList()->items)).Union();
    case K::TensorList:
      return ember_fb::CreateTensorList(fbb, fbb.CreateVector(u.AsTensorList()->items)).Union();
    case K::OptionalTensorList:
      return ember_fb::CreateOptionalTensorList(
                 fbb, fbb.CreateVector(u.AsOptionalTensorList()->items))
          .Union();
    default:
      return u.Pack(fbb);  // Null, Int, Bool, Double: no vectors or strings; NONE: 0.
  }
}

Offset<ember_fb::EValue> pack_evalue(FlatBufferBuilder& fbb, const ember_fb::EValueT& v) {
  return ember_fb::CreateEValue(fbb, v.val.type, pack_kernel_type(fbb, v.val));
}

Offset<ember_fb::Instruction> pack_instruction(FlatBufferBuilder& fbb,
                                               const ember_fb::InstructionT& instruction) {
  using I = ember_fb::InstructionArguments;
  const auto& u = instruction.instr_args;
  Offset<void> args;
  switch (u.type) {
    case I::KernelCall:
      args = ember_fb::CreateKernelCall(fbb, u.AsKernelCall()->op_index,
                                        fbb.CreateVector(u.AsKernelCall()->args))
                 .Union();
      break;
    case I::DelegateCall:
      args = ember_fb::CreateDelegateCall(fbb, u.AsDelegateCall()->delegate_index,
                                          fbb.CreateVector(u.AsDelegateCall()->args))
                 .Union();
      break;
    default:
      args = u.Pack(fbb);  // MoveCall, JumpFalseCall, FreeCall: scalars only.
  }
  return ember_fb::CreateInstruction(fbb, u.type, args);
}

Offset<ember_fb::FrameList> pack_frame_list(FlatBufferBuilder& fbb,
                                            const ember_fb::FrameListT& list) {
  std::vector<Offset<ember_fb::Frame>> frames;
  for (const auto& f : list.items) {
    frames.push_back(ember_fb::CreateFrame(fbb, str(fbb, f->filename), f->lineno,
                                           str(fbb, f->name), str(fbb, f->context)));
  }
  return ember_fb::CreateFrameList(fbb, fbb.CreateVector(frames));
}

Offset<ember_fb::Chain> pack_chain(FlatBufferBuilder& fbb, const ember_fb::ChainT& c) {
  auto inputs = fbb.CreateVector(c.inputs);
  auto outputs = fbb.CreateVector(c.outputs);
  std::vector<Offset<ember_fb::Instruction>> instructions;
  for (const auto& i : c.instructions) instructions.push_back(pack_instruction(fbb, *i));
  auto instructions_vec = fbb.CreateVector(instructions);
  Offset<flatbuffers::Vector<Offset<ember_fb::FrameList>>> stacktrace = 0;
  if (!c.stacktrace.empty()) stacktrace = tables(fbb, c.stacktrace, pack_frame_list);
  return ember_fb::CreateChain(fbb, inputs, outputs, instructions_vec, stacktrace);
}

Offset<ember_fb::BackendDelegate> pack_delegate(FlatBufferBuilder& fbb,
                                                const ember_fb::BackendDelegateT& d) {
  auto id = str(fbb, d.id);
  ember_fb::BackendDelegateDataReferenceT none;
  auto processed = ember_fb::CreateBackendDelegateDataReference(
      fbb, d.processed ? d.processed.get() : &none);
  std::vector<Offset<ember_fb::CompileSpec>> specs;
  for (const auto& s : d.compile_specs) {
    specs.push_back(ember_fb::CreateCompileSpec(fbb, str(fbb, s->key), fbb.CreateVector(s->value)));
  }
  return ember_fb::CreateBackendDelegate(fbb, id, processed, fbb.CreateVector(specs));
}

Offset<ember_fb::ExecutionPlan> pack_plan(FlatBufferBuilder& fbb,
                                          const ember_fb::ExecutionPlanT& p) {
  auto name = str(fbb, p.name);
  ember_fb::ContainerMetadataT empty_meta;
  const auto& meta = p.container_meta_type ? *p.container_meta_type : empty_meta;
  auto container = ember_fb::CreateContainerMetadata(fbb, str(fbb, meta.encoded_inp_str),
                                                     str(fbb, meta.encoded_out_str));
  std::vector<Offset<ember_fb::EValue>> values;
  for (const auto& v : p.values) values.push_back(pack_evalue(fbb, *v));
  auto values_vec = fbb.CreateVector(values);
  auto inputs = fbb.CreateVector(p.inputs);
  auto outputs = fbb.CreateVector(p.outputs);
  std::vector<Offset<ember_fb::Chain>> chains;
  for (const auto& c : p.chains) chains.push_back(pack_chain(fbb, *c));
  auto chains_vec = fbb.CreateVector(chains);
  std::vector<Offset<ember_fb::Operator>> operators;
  for (const auto& op : p.operators) {
    operators.push_back(ember_fb::CreateOperator(fbb, str(fbb, op->name), str(fbb, op->overload)));
  }
  auto operators_vec = fbb.CreateVector(operators);
  std::vector<Offset<ember_fb::BackendDelegate>> delegates;
  for (const auto& d : p.delegates) delegates.push_back(pack_delegate(fbb, *d));
  auto delegates_vec = fbb.CreateVector(delegates);
  auto buffer_sizes = fbb.CreateVector(p.non_const_buffer_sizes);
  Offset<flatbuffers::Vector<Offset<ember_fb::NonConstBufferDevice>>> devices = 0;
  if (!p.non_const_buffer_device.empty()) {
    std::vector<Offset<ember_fb::NonConstBufferDevice>> d;
    for (const auto& x : p.non_const_buffer_device) {
      d.push_back(ember_fb::CreateNonConstBufferDevice(fbb, x.get()));
    }
    devices = fbb.CreateVector(d);
  }
  return ember_fb::CreateExecutionPlan(fbb, name, container, values_vec, inputs, outputs,
                                       chains_vec, operators_vec, delegates_vec, buffer_sizes,
                                       devices);
}

Offset<ember_fb::SubsegmentOffsets> pack_subsegment(FlatBufferBuilder& fbb,
                                                    const ember_fb::SubsegmentOffsetsT& s) {
  return ember_fb::CreateSubsegmentOffsets(fbb, s.segment_index, fbb.CreateVector(s.offsets));
}

}  // namespace

Offset<ember_fb::Program> pack_program(FlatBufferBuilder& fbb, const ember_fb::ProgramT& program) {
  std::vector<Offset<ember_fb::ExecutionPlan>> plans;
  for (const auto& p : program.execution_plan) plans.push_back(pack_plan(fbb, *p));
  auto plans_vec = fbb.CreateVector(plans);
  std::vector<Offset<ember_fb::Buffer>> buffers;
  for (const auto& b : program.constant_buffer) {
    fbb.ForceVectorAlignment(b->storage.size(), sizeof(uint8_t), 16);
    buffers.push_back(ember_fb::CreateBuffer(fbb, fbb.CreateVector(b->storage)));
  }
  auto buffers_vec = fbb.CreateVector(buffers);
  std::vector<Offset<ember_fb::BackendDelegateInlineData>> inline_data;
  for (const auto& d : program.backend_delegate_data) {
    fbb.ForceVectorAlignment(d->data.size(), sizeof(uint8_t), 16);
    inline_data.push_back(ember_fb::CreateBackendDelegateInlineData(fbb, fbb.CreateVector(d->data)));
  }
  auto inline_vec = fbb.CreateVector(inline_data);
  std::vector<Offset<ember_fb::DataSegment>> segments;
  for (const auto& s : program.segments) segments.push_back(ember_fb::CreateDataSegment(fbb, s.get()));
  auto segments_vec = fbb.CreateVector(segments);
  ember_fb::SubsegmentOffsetsT empty_constants;
  empty_constants.offsets.push_back(0);
  auto constant_segment = pack_subsegment(
      fbb, program.constant_segment ? *program.constant_segment : empty_constants);
  std::vector<Offset<ember_fb::SubsegmentOffsets>> mutable_segments;
  for (const auto& s : program.mutable_data_segments) {
    mutable_segments.push_back(pack_subsegment(fbb, *s));
  }
  auto mutable_vec = fbb.CreateVector(mutable_segments);
  std::vector<Offset<ember_fb::NamedData>> named;
  for (const auto& n : program.named_data) {
    named.push_back(ember_fb::CreateNamedData(fbb, str(fbb, n->key), n->segment_index));
  }
  auto named_vec = fbb.CreateVector(named);
  return ember_fb::CreateProgram(fbb, program.version, plans_vec, buffers_vec, inline_vec,
                                 segments_vec, constant_segment, mutable_vec, named_vec);
}

}  // namespace ember::program
