#include "extension/devtools/intermediate_outputs.h"

#include <cstring>
#include <set>

#include "extension/devtools/instruction_info.h"

namespace ember::extension {
namespace {

constexpr size_t kAlignment = 16;

size_t aligned(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// Values whose contents come from the file: constants, and mutable buffers'
// initial values.
bool from_file(const ember_fb::ExecutionPlan* plan, int32_t v) {
  const auto* t = plan->values()->Get(static_cast<uint32_t>(v))->val_as_Tensor();
  return t != nullptr && t->data_buffer_idx() > 0;
}

// The tensors and scalars an output argument stands for.
template <typename Fn>
void for_each_output(const EValue& v, Fn&& fn) {
  if (v.tag == Tag::TensorList) {
    for (size_t i = 0; i < v.as_tensor_list.size; ++i) {
      if (v.as_tensor_list.items[i] != nullptr) {
        EValue item;
        item.tag = Tag::Tensor;
        item.as_tensor = v.as_tensor_list.items[i];
        fn(static_cast<uint32_t>(i), item);
      }
    }
  } else if (v.is_tensor() || v.is_scalar()) {
    fn(0u, v);
  }
}

}  // namespace

std::vector<std::vector<uint32_t>> instruction_output_args(const ember_fb::ExecutionPlan* plan) {
  const uint32_t n = num_instructions(plan);
  std::vector<std::vector<uint32_t>> out(n);
  std::set<int32_t> known;  // inputs and values an earlier instruction wrote
  for (uint32_t i = 0; plan->inputs() != nullptr && i < plan->inputs()->size(); ++i) {
    known.insert(plan->inputs()->Get(i));
  }
  const uint32_t num_values = plan->values() != nullptr ? plan->values()->size() : 0;
  for (uint32_t k = 0; k < n; ++k) {
    const auto* ins = plan->chains()->Get(0)->instructions()->Get(k);
    if (const auto* call = ins->instr_args_as_KernelCall()) {
      if (call->args() == nullptr || call->args()->size() == 0) continue;
      out[k].push_back(call->args()->size() - 1);
      const int32_t ret = call->args()->Get(call->args()->size() - 1);
      known.insert(ret);
      if (ret >= 0 && static_cast<uint32_t>(ret) < num_values) {
        const auto* list = plan->values()->Get(static_cast<uint32_t>(ret))->val_as_TensorList();
        if (list != nullptr && list->items() != nullptr) {
          known.insert(list->items()->begin(), list->items()->end());
        }
      }
    } else if (const auto* move = ins->instr_args_as_MoveCall()) {
      known.insert(move->move_to());
    } else if (const auto* call = ins->instr_args_as_DelegateCall()) {
      for (uint32_t p = 0; call->args() != nullptr && p < call->args()->size(); ++p) {
        const int32_t v = call->args()->Get(p);
        if (v < 0 || static_cast<uint32_t>(v) >= num_values || known.count(v) ||
            plan->values()->Get(static_cast<uint32_t>(v))->val_type() !=
                ember_fb::KernelTypes::Tensor ||
            from_file(plan, v)) {
          continue;
        }
        out[k].push_back(p);
      }
      for (uint32_t p : out[k]) known.insert(call->args()->Get(p));
    }
  }
  return out;
}

IntermediateOutputRecorder::IntermediateOutputRecorder(const Method& method,
                                                       std::span<CapturedOutput> records,
                                                       std::span<uint8_t> storage)
    : output_args_(instruction_output_args(method.execution_plan())),
      records_(records),
      storage_(storage) {}

CaptureSize IntermediateOutputRecorder::one_run(const Method& method) {
  const auto args = instruction_output_args(method.execution_plan());
  CaptureSize size;
  for (size_t k = 0; k < method.num_steps() && k < args.size(); ++k) {
    const Step& step = method.step(k);
    for (uint32_t p : args[k]) {
      if (p >= step.num_args) continue;
      for_each_output(*step.args[p], [&](uint32_t, const EValue& v) {
        ++size.records;
        if (v.is_tensor()) {
          const Tensor& t = v.to_tensor();
          size.bytes += aligned(t.capacity_bytes > t.nbytes() ? t.capacity_bytes : t.nbytes());
        }
      });
    }
  }
  return size;
}

void IntermediateOutputRecorder::log_instruction(uint32_t instruction,
                                                 std::span<EValue* const> args) {
  if (instruction >= output_args_.size()) return;
  const std::vector<uint32_t>& positions = output_args_[instruction];
  for (uint32_t j = 0; j < positions.size(); ++j) {
    if (positions[j] >= args.size()) continue;
    const EValue& arg = *args[positions[j]];
    // A delegate's outputs are numbered in order, a TensorList's by item.
    for_each_output(arg, [&](uint32_t item, const EValue& v) {
      capture(instruction, arg.tag == Tag::TensorList ? item : j, v);
    });
  }
}

void IntermediateOutputRecorder::capture(uint32_t instruction, uint32_t output,
                                         const EValue& value) {
  const size_t nbytes = value.is_tensor() ? value.to_tensor().nbytes() : 0;
  bytes_needed_ += aligned(nbytes);
  if (size_ >= records_.size() || used_ + nbytes > storage_.size()) {
    ++dropped_;
    return;
  }
  CapturedOutput& c = records_[size_++];
  c = CapturedOutput{};
  c.instruction = instruction;
  c.output = output;
  c.tag = value.tag;
  if (value.is_tensor()) {
    const Tensor& t = value.to_tensor();
    c.dtype = t.dtype;
    c.dim = t.dim;
    for (int32_t d = 0; d < t.dim && d < kTensorMaxDim; ++d) {
      c.sizes[d] = t.sizes[d];
      c.dim_order[d] = t.dim_order[d];
    }
    c.offset = used_;
    c.nbytes = nbytes;
    if (nbytes > 0) std::memcpy(storage_.data() + used_, t.data, nbytes);
    used_ += aligned(nbytes);
    if (used_ > storage_.size()) used_ = storage_.size();
  } else if (value.is_double()) {
    c.double_value = value.as_double;
  } else {
    c.int_value = value.scalar_as_int();
  }
}

}  // namespace ember::extension
