#include "extension/devtools/program_graph.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "extension/devtools/instruction_info.h"

namespace ember::extension {
namespace {

std::string dot_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// What an instruction writes: a kernel call's last argument (its return,
// with a TensorList's items), a move's target; a delegate's outputs are the
// arguments nothing wrote before it.
std::vector<int32_t> written_values(const ember_fb::ExecutionPlan* plan, uint32_t k,
                                     const std::map<int32_t, std::string>& producer) {
  const auto* ins = plan->chains()->Get(0)->instructions()->Get(k);
  std::vector<int32_t> out;
  if (const auto* call = ins->instr_args_as_KernelCall()) {
    if (call->args() == nullptr || call->args()->size() == 0) return out;
    const int32_t ret = call->args()->Get(call->args()->size() - 1);
    out.push_back(ret);
    if (ret >= 0 && static_cast<uint32_t>(ret) < plan->values()->size()) {
      if (const auto* list = plan->values()->Get(static_cast<uint32_t>(ret))->val_as_TensorList();
          list != nullptr && list->items() != nullptr) {
        out.insert(out.end(), list->items()->begin(), list->items()->end());
      }
    }
  } else if (const auto* move = ins->instr_args_as_MoveCall()) {
    out.push_back(move->move_to());
  } else if (ins->instr_args_as_DelegateCall() != nullptr) {
    for (int32_t v : instruction_values(plan, k)) {
      if (producer.count(v) == 0) out.push_back(v);
    }
  }
  return out;
}

bool is_constant(const ember_fb::ExecutionPlan* plan, int32_t v) {
  if (v < 0 || static_cast<uint32_t>(v) >= plan->values()->size()) return true;
  const auto* t = plan->values()->Get(static_cast<uint32_t>(v))->val_as_Tensor();
  return t == nullptr || (t->allocation_info() == nullptr && t->data_buffer_idx() > 0);
}

}  // namespace

std::string program_graph_dot(const ember_fb::ExecutionPlan* plan) {
  const std::string name = plan->name() != nullptr ? plan->name()->str() : "method";
  std::string s = "digraph " + dot_string(name) + " {\n  rankdir=TB;\n"
                  "  node [fontname=\"Helvetica\", fontsize=10];\n"
                  "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
  std::map<int32_t, std::string> producer;  // value -> DOT node that wrote it
  for (uint32_t i = 0; plan->inputs() && i < plan->inputs()->size(); ++i) {
    const int32_t v = plan->inputs()->Get(i);
    const std::string id = "input" + std::to_string(i);
    s += "  " + id + " [shape=oval, style=filled, fillcolor=\"#d6eaf8\", label=" +
         dot_string("input " + std::to_string(i) + "\n" + value_type(plan, v)) + "];\n";
    producer[v] = id;
  }
  const uint32_t n = num_instructions(plan);
  std::set<std::pair<std::string, std::string>> edges;
  for (uint32_t k = 0; k < n; ++k) {
    const std::string id = "i" + std::to_string(k);
    const std::vector<int32_t> writes = written_values(plan, k, producer);
    std::string label = std::to_string(k) + ": " + instruction_label(plan, k);
    const std::string node = instruction_node(plan, k);
    const std::string source = instruction_source(plan, k);
    if (!node.empty()) label += "\n" + node;
    if (!source.empty()) label += "\n" + source;
    if (!writes.empty() && plan->values()->Get(static_cast<uint32_t>(writes[0]))->val_as_Tensor()) {
      label += "\n-> " + value_type(plan, writes[0]);
    }
    const auto kind = plan->chains()->Get(0)->instructions()->Get(k)->instr_args_type();
    const char* fill = kind == ember_fb::InstructionArguments::DelegateCall ? "#fdebd0"
                       : kind == ember_fb::InstructionArguments::KernelCall ? "#eafaf1"
                                                                            : "#f2f3f4";
    s += "  " + id + " [shape=box, style=\"rounded,filled\", fillcolor=\"" + fill + "\", label=" +
         dot_string(label) + "];\n";
    for (int32_t v : instruction_values(plan, k)) {
      if (std::find(writes.begin(), writes.end(), v) != writes.end() || is_constant(plan, v)) continue;
      auto it = producer.find(v);
      if (it != producer.end() && edges.insert({it->second, id}).second) {
        s += "  " + it->second + " -> " + id + ";\n";
      }
    }
    for (int32_t v : writes) producer[v] = id;
    if (const auto* jump = plan->chains()->Get(0)->instructions()->Get(k)->instr_args_as_JumpFalseCall()) {
      s += "  " + id + " -> i" + std::to_string(jump->destination_instruction()) +
           " [style=dashed, label=\"if false\"];\n";
    }
  }
  for (uint32_t i = 0; plan->outputs() && i < plan->outputs()->size(); ++i) {
    const int32_t v = plan->outputs()->Get(i);
    const std::string id = "output" + std::to_string(i);
    s += "  " + id + " [shape=oval, style=filled, fillcolor=\"#fadbd8\", label=" +
         dot_string("output " + std::to_string(i) + "\n" + value_type(plan, v)) + "];\n";
    auto it = producer.find(v);
    if (it != producer.end()) s += "  " + it->second + " -> " + id + ";\n";
  }
  return s + "}\n";
}

}  // namespace ember::extension
