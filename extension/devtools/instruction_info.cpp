#include "extension/devtools/instruction_info.h"

#include "runtime/core/scalar_type.h"

namespace ember::extension {
namespace {

const ember_fb::Instruction* instruction(const ember_fb::ExecutionPlan* plan, uint32_t k) {
  return plan->chains()->Get(0)->instructions()->Get(k);
}

const ember_fb::FrameList* frames(const ember_fb::ExecutionPlan* plan, uint32_t k) {
  const auto* chains = plan->chains();
  const auto* trace = chains != nullptr && chains->size() > 0 ? chains->Get(0)->stacktrace() : nullptr;
  return trace != nullptr && k < trace->size() ? trace->Get(k) : nullptr;
}

}  // namespace

uint32_t num_instructions(const ember_fb::ExecutionPlan* plan) {
  const auto* chains = plan->chains();
  if (chains == nullptr || chains->size() == 0 || chains->Get(0)->instructions() == nullptr) return 0;
  return chains->Get(0)->instructions()->size();
}

std::string instruction_label(const ember_fb::ExecutionPlan* plan, uint32_t k) {
  const auto* ins = instruction(plan, k);
  switch (ins->instr_args_type()) {
    case ember_fb::InstructionArguments::KernelCall: {
      const auto* op = plan->operators()->Get(
          static_cast<uint32_t>(ins->instr_args_as_KernelCall()->op_index()));
      std::string name = op->name()->str();
      if (op->overload() != nullptr && op->overload()->size() > 0) name += "." + op->overload()->str();
      return name;
    }
    case ember_fb::InstructionArguments::DelegateCall: {
      const auto* d = plan->delegates()->Get(
          static_cast<uint32_t>(ins->instr_args_as_DelegateCall()->delegate_index()));
      return "delegate " + std::string(d->id() != nullptr ? d->id()->c_str() : "?");
    }
    case ember_fb::InstructionArguments::MoveCall: return "move";
    case ember_fb::InstructionArguments::JumpFalseCall: return "jump_false";
    case ember_fb::InstructionArguments::FreeCall: return "free";
    default: return "?";
  }
}

std::string instruction_node(const ember_fb::ExecutionPlan* plan, uint32_t k) {
  const auto* f = frames(plan, k);
  for (uint32_t i = 0; f != nullptr && f->items() != nullptr && i < f->items()->size(); ++i) {
    const auto* frame = f->items()->Get(i);
    const bool has_file = frame->filename() != nullptr && frame->filename()->size() > 0;
    if (!has_file && frame->name() != nullptr) return frame->name()->str();
  }
  return "";
}

std::string instruction_source(const ember_fb::ExecutionPlan* plan, uint32_t k) {
  const auto* f = frames(plan, k);
  std::string where;
  for (uint32_t i = 0; f != nullptr && f->items() != nullptr && i < f->items()->size(); ++i) {
    const auto* frame = f->items()->Get(i);
    if (frame->filename() == nullptr || frame->filename()->size() == 0) continue;
    const std::string file = frame->filename()->str();
    const size_t slash = file.rfind('/');
    // The innermost frame is the last the exporter wrote.
    where = (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" +
            std::to_string(frame->lineno());
  }
  return where;
}

std::vector<int32_t> instruction_values(const ember_fb::ExecutionPlan* plan, uint32_t k) {
  const auto* ins = instruction(plan, k);
  std::vector<int32_t> v;
  const flatbuffers::Vector<int32_t>* args = nullptr;
  if (const auto* call = ins->instr_args_as_KernelCall()) args = call->args();
  if (const auto* call = ins->instr_args_as_DelegateCall()) args = call->args();
  if (args != nullptr) v.assign(args->begin(), args->end());
  if (const auto* move = ins->instr_args_as_MoveCall()) v = {move->move_from(), move->move_to()};
  if (const auto* jump = ins->instr_args_as_JumpFalseCall()) v = {jump->cond_value_index()};
  if (const auto* f = ins->instr_args_as_FreeCall()) v = {f->value_index()};
  return v;
}

std::string value_type(const ember_fb::ExecutionPlan* plan, int32_t value) {
  const auto* v = plan->values()->Get(static_cast<uint32_t>(value));
  if (v->val_type() != ember_fb::KernelTypes::Tensor) {
    return ember_fb::EnumNameKernelTypes(v->val_type());
  }
  const auto* t = v->val_as_Tensor();
  std::string s = scalar_type_name(static_cast<ScalarType>(t->scalar_type()));
  s += "[";
  for (uint32_t i = 0; t->sizes() != nullptr && i < t->sizes()->size(); ++i) {
    s += (i ? ", " : "") + std::to_string(t->sizes()->Get(i));
  }
  return s + "]";
}

}  // namespace ember::extension
