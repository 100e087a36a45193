// A FlatBuffer-aware mutator: half the time libFuzzer's byte mutations, half
// the time one field of the unpacked Program changes (an index, a size, an
// offset, a dtype, an operator) and the program writer re-packs it. Byte
// flips alone rarely get past the FlatBuffer verifier; these do, and then
// exercise the semantic checks and the kernels.
#include <cstring>
#include <random>
#include <vector>

#include "program/program_writer.h"
#include "runtime/executor/extended_header.h"
#include "runtime/executor/program.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using ember::program::WriteResult;

const char* const kOperators[] = {"aten::add", "aten::mm", "aten::convolution", "aten::relu",
                                  "aten::view_copy", "aten::permute_copy", "aten::addmm",
                                  "aten::clamp", "aten::sin", "aten::randn",
                                  "executorch_prim::add", "aten::sym_size"};

int64_t interesting(std::mt19937& rng, int64_t current) {
  switch (rng() % 8) {
    case 0: return static_cast<int64_t>(static_cast<uint64_t>(current) + 1u);
    case 1: return static_cast<int64_t>(static_cast<uint64_t>(current) - 1u);
    case 2: return 0;
    case 3: return -1;
    case 4: return INT32_MAX;
    case 5: return static_cast<int64_t>(static_cast<uint64_t>(current) * 2u);  // Wraps, no UB.
    case 6: return static_cast<int64_t>(rng() % 64);
    default: return static_cast<int64_t>(rng());
  }
}

void mutate_tensor(ember_fb::TensorT& t, std::mt19937& rng) {
  switch (rng() % 6) {
    case 0:
      if (!t.sizes.empty()) {
        auto& s = t.sizes[rng() % t.sizes.size()];
        s = static_cast<int32_t>(interesting(rng, s));
      }
      break;
    case 1:
      if (!t.dim_order.empty()) t.dim_order[rng() % t.dim_order.size()] = static_cast<uint8_t>(rng() % 5);
      break;
    case 2: t.scalar_type = static_cast<ember_fb::ScalarType>(rng() % 32); break;
    case 3:
      if (t.allocation_info) t.allocation_info->memory_offset_low = static_cast<uint32_t>(interesting(rng, t.allocation_info->memory_offset_low));
      break;
    case 4:
      if (t.allocation_info) t.allocation_info->memory_id = static_cast<uint32_t>(interesting(rng, t.allocation_info->memory_id));
      break;
    default: t.data_buffer_idx = static_cast<uint32_t>(interesting(rng, t.data_buffer_idx)); break;
  }
}

void mutate_plan(ember_fb::ExecutionPlanT& plan, std::mt19937& rng) {
  auto pick = [&](auto& vec) -> auto& { return vec[rng() % vec.size()]; };
  switch (rng() % 7) {
    case 0:
      if (!plan.values.empty()) {
        auto& v = pick(plan.values);
        if (auto* t = v->val.AsTensor()) mutate_tensor(*t, rng);
        else if (auto* l = v->val.AsIntList(); l && !l->items.empty()) pick(l->items) = interesting(rng, 0);
        else if (auto* i = v->val.AsInt()) i->int_val = interesting(rng, i->int_val);
      }
      break;
    case 1:
      if (!plan.chains.empty() && !plan.chains[0]->instructions.empty()) {
        auto& ins = pick(plan.chains[0]->instructions);
        if (auto* k = ins->instr_args.AsKernelCall()) {
          if (!k->args.empty() && rng() % 2) pick(k->args) = static_cast<int32_t>(interesting(rng, 0));
          else k->op_index = static_cast<int32_t>(interesting(rng, k->op_index));
        } else if (auto* d = ins->instr_args.AsDelegateCall()) {
          if (!d->args.empty()) pick(d->args) = static_cast<int32_t>(interesting(rng, 0));
        }
      }
      break;
    case 2:
      if (!plan.inputs.empty()) pick(plan.inputs) = static_cast<int32_t>(interesting(rng, 0));
      break;
    case 3:
      if (!plan.outputs.empty()) pick(plan.outputs) = static_cast<int32_t>(interesting(rng, 0));
      break;
    case 4:
      if (!plan.non_const_buffer_sizes.empty()) {
        auto& s = pick(plan.non_const_buffer_sizes);
        s = interesting(rng, s);
      }
      break;
    case 5:
      if (!plan.operators.empty()) pick(plan.operators)->name = kOperators[rng() % std::size(kOperators)];
      break;
    default:
      if (!plan.chains.empty() && plan.chains[0]->instructions.size() > 1) {
        auto& ins = plan.chains[0]->instructions;
        std::swap(ins[rng() % ins.size()], ins[rng() % ins.size()]);
      }
      break;
  }
}

// Splits the file back into the writer's inputs: the Program table, its
// constants and its delegate blobs.
bool unpack(const uint8_t* data, size_t size, ember_fb::ProgramT* program,
            std::vector<std::vector<uint8_t>>* constants, std::vector<std::vector<uint8_t>>* blobs) {
  // Only programs the runtime accepts are unpacked: UnPack reads every field.
  ember::BufferDataLoader loader(data, size);
  if (!ember::Program::load(&loader).ok()) return false;
  ember::Result<ember::ExtendedHeader> header = ember::ExtendedHeader::parse(data, size);
  if (!header.ok() || header->program_size > size) return false;
  flatbuffers::Verifier verifier(data, header->program_size);
  if (!ember_fb::VerifyProgramBuffer(verifier)) return false;
  const ember_fb::Program* fb = ember_fb::GetProgram(data);
  fb->UnPackTo(program);
  const uint64_t base = header->segment_base_offset;
  auto segment = [&](uint32_t index, uint64_t* start, uint64_t* length) {
    if (index >= program->segments.size()) return false;
    *start = base + program->segments[index]->offset;
    *length = program->segments[index]->size;
    return *start <= size && *length <= size - *start;
  };
  if (program->constant_segment && program->constant_segment->offsets.size() > 1) {
    uint64_t start = 0, length = 0;
    if (!segment(program->constant_segment->segment_index, &start, &length)) return false;
    const auto& offsets = program->constant_segment->offsets;
    for (size_t i = 1; i < offsets.size(); ++i) {
      const uint64_t end = i + 1 < offsets.size() ? offsets[i + 1] : length;
      if (offsets[i] > end || end > length) return false;
      constants->emplace_back(data + start + offsets[i], data + start + end);
    }
  }
  for (auto& plan : program->execution_plan) {
    for (auto& d : plan->delegates) {
      if (!d->processed) return false;
      if (d->processed->location == ember_fb::DataLocation::INLINE) {
        if (d->processed->index >= program->backend_delegate_data.size()) return false;
        blobs->push_back(program->backend_delegate_data[d->processed->index]->data);
      } else {
        uint64_t start = 0, length = 0;
        if (!segment(d->processed->index, &start, &length)) return false;
        blobs->emplace_back(data + start, data + start + length);
      }
      d->processed->index = static_cast<uint32_t>(blobs->size() - 1);
    }
  }
  return true;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::mt19937 rng(seed);
  if (rng() % 2 == 0) return LLVMFuzzerMutate(data, size, max_size);
  // libFuzzer's buffer has no alignment; FlatBuffers reads need it.
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size > 0) std::memcpy(aligned.data(), data, size);
  ember_fb::ProgramT program;
  std::vector<std::vector<uint8_t>> constants, blobs;
  if (!unpack(reinterpret_cast<const uint8_t*>(aligned.data()), size, &program, &constants, &blobs) ||
      program.execution_plan.empty()) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  mutate_plan(*program.execution_plan[rng() % program.execution_plan.size()], rng);
  std::vector<std::span<const uint8_t>> c, b;
  for (const auto& x : constants) c.emplace_back(x.data(), x.size());
  for (const auto& x : blobs) b.emplace_back(x.data(), x.size());
  WriteResult out = ember::program::write_program(std::move(program), c, b);
  if (!out.ok() || out.bytes.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.bytes.data(), out.bytes.size());
  return out.bytes.size();
}
