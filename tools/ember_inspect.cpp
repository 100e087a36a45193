// ember-inspect: print what a .pte holds: methods, their inputs and outputs,
// operators, delegates, planned buffers and how close the plan is to the
// lower bound (most bytes live at any one instruction), and what loading
// each method prepares (packed weights and kernel state, per instruction).
#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include "extension/bundled_program/bundled_program.h"
#include "extension/data_loader/file_data_loader.h"
#include "extension/module/module.h"
#include "program/memory_planner.h"
#include "runtime/executor/program.h"
#include "schema/program_generated.h"
#include "tools/tensor_print.h"

using namespace ember;

namespace {

std::string tensor_desc(const ember_fb::Tensor* t) {
  std::vector<int32_t> sizes;
  if (t->sizes() != nullptr) sizes.assign(t->sizes()->begin(), t->sizes()->end());
  std::string s = std::string(scalar_type_name(static_cast<ScalarType>(t->scalar_type()))) +
                  tools::shape_string(sizes);
  const auto* extra = t->extra_tensor_info();
  if (extra != nullptr && extra->location() == ember_fb::TensorDataLocation::EXTERNAL) {
    s += "  external: '" +
         std::string(extra->fully_qualified_name() ? extra->fully_qualified_name()->c_str() : "") +
         "' in the .ptd";
  } else if (t->allocation_info() != nullptr) {
    const uint64_t off = uint64_t{t->allocation_info()->memory_offset_low()} |
                         (uint64_t{t->allocation_info()->memory_offset_high()} << 32);
    s += "  planned: buffer " + std::to_string(t->allocation_info()->memory_id()) + " @ " +
         std::to_string(off);
    // A mutable buffer: planned, and filled at load with its initial value.
    if (t->data_buffer_idx() > 0) {
      s += "  mutable, initial value #" + std::to_string(t->data_buffer_idx());
    }
  } else if (t->data_buffer_idx() > 0) {
    s += "  constant #" + std::to_string(t->data_buffer_idx());
  } else {
    s += "  caller-provided";
  }
  if (t->shape_dynamism() != ember_fb::TensorShapeDynamism::STATIC) s += "  (dynamic, bound)";
  return s;
}

// A scalar or list value as written in the file (a constant method's output).
std::string constant_desc(const ember_fb::ExecutionPlan* plan, const ember_fb::EValue* v) {
  const auto* values = plan->values();
  auto item = [&](int64_t i) -> const ember_fb::EValue* {
    return i >= 0 && static_cast<uint64_t>(i) < values->size() ? values->Get(static_cast<uint32_t>(i))
                                                             : nullptr;
  };
  char buf[64];
  switch (v->val_type()) {
    case ember_fb::KernelTypes::Int: return std::to_string(v->val_as_Int()->int_val());
    case ember_fb::KernelTypes::Bool: return v->val_as_Bool()->bool_val() ? "true" : "false";
    case ember_fb::KernelTypes::Double:
      std::snprintf(buf, sizeof(buf), "%.17g", v->val_as_Double()->double_val());
      return buf;
    case ember_fb::KernelTypes::String: {
      const auto* str = v->val_as_String()->string_val();
      return "\"" + std::string(str != nullptr ? str->c_str() : "") + "\"";
    }
    case ember_fb::KernelTypes::IntList: {
      std::string s = "[";
      const auto* items = v->val_as_IntList()->items();
      for (uint32_t i = 0; items != nullptr && i < items->size(); ++i) {
        const auto* e = item(items->Get(i));
        s += (i ? ", " : "") + (e != nullptr && e->val_type() == ember_fb::KernelTypes::Int
                                    ? std::to_string(e->val_as_Int()->int_val())
                                    : std::string("?"));
      }
      return s + "]";
    }
    case ember_fb::KernelTypes::DoubleList: {
      std::string s = "[";
      const auto* items = v->val_as_DoubleList()->items();
      for (uint32_t i = 0; items != nullptr && i < items->size(); ++i) {
        std::snprintf(buf, sizeof(buf), "%.17g", items->Get(i));
        s += (i ? ", " : "") + std::string(buf);
      }
      return s + "]";
    }
    case ember_fb::KernelTypes::BoolList: {
      std::string s = "[";
      const auto* items = v->val_as_BoolList()->items();
      for (uint32_t i = 0; items != nullptr && i < items->size(); ++i) {
        s += (i ? ", " : "") + std::string(items->Get(i) ? "true" : "false");
      }
      return s + "]";
    }
    default: return "";
  }
}

std::string value_desc(const ember_fb::ExecutionPlan* plan, int32_t idx) {
  const auto* v = plan->values()->Get(static_cast<uint32_t>(idx));
  if (v->val_type() == ember_fb::KernelTypes::Tensor) return tensor_desc(v->val_as_Tensor());
  const std::string value = constant_desc(plan, v);
  return std::string(ember_fb::EnumNameKernelTypes(v->val_type())) +
         (value.empty() ? "" : " " + value);
}

uint64_t tensor_bytes(const ember_fb::Tensor* t) {
  uint64_t n = element_size(static_cast<ScalarType>(t->scalar_type()));
  if (t->sizes() != nullptr) {
    for (int32_t s : *t->sizes()) n *= static_cast<uint64_t>(s);
  }
  return n;
}

void inspect_plan(const ember_fb::ExecutionPlan* plan) {
  std::printf("\nmethod '%s'\n", plan->name()->c_str());
  std::printf("  inputs:\n");
  for (uint32_t i = 0; plan->inputs() && i < plan->inputs()->size(); ++i) {
    std::printf("    %u  value %d: %s\n", i, plan->inputs()->Get(i),
                value_desc(plan, plan->inputs()->Get(i)).c_str());
  }
  std::printf("  outputs:\n");
  for (uint32_t i = 0; plan->outputs() && i < plan->outputs()->size(); ++i) {
    std::printf("    %u  value %d: %s\n", i, plan->outputs()->Get(i),
                value_desc(plan, plan->outputs()->Get(i)).c_str());
  }
  const auto* chain = plan->chains()->Get(0);
  const uint32_t n_instr = chain->instructions() ? chain->instructions()->size() : 0;
  std::map<std::string, int> op_counts;
  // Lifetimes of planned tensors from the instruction order.
  // Keyed by placement, so values that alias one planned region count once.
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, program::TensorLifetime> lifetimes;
  auto touch = [&](int32_t idx, int64_t when) {
    const auto* v = plan->values()->Get(static_cast<uint32_t>(idx));
    if (v->val_type() != ember_fb::KernelTypes::Tensor) return;
    const auto* t = v->val_as_Tensor();
    const auto* a = t->allocation_info();
    if (a == nullptr) return;
    const uint64_t offset = uint64_t{a->memory_offset_low()} | (uint64_t{a->memory_offset_high()} << 32);
    const auto key = std::make_tuple(a->memory_id(), offset, tensor_bytes(t));
    auto [it, inserted] = lifetimes.try_emplace(key, program::TensorLifetime{tensor_bytes(t), when, when});
    if (!inserted) {
      it->second.first = std::min(it->second.first, when);
      it->second.last = std::max(it->second.last, when);
    }
  };
  // Inputs live for the whole method (re-running without set_input stays
  // correct) and outputs until its end, as Ember's planner assumes.
  for (uint32_t i = 0; plan->inputs() && i < plan->inputs()->size(); ++i) {
    touch(plan->inputs()->Get(i), -1);
    touch(plan->inputs()->Get(i), n_instr);
  }
  std::printf("  instructions (%u):\n", n_instr);
  for (uint32_t k = 0; k < n_instr; ++k) {
    const auto* ins = chain->instructions()->Get(k);
    if (ins->instr_args_type() == ember_fb::InstructionArguments::KernelCall) {
      const auto* call = ins->instr_args_as_KernelCall();
      const auto* op = plan->operators()->Get(static_cast<uint32_t>(call->op_index()));
      std::string name = op->name()->str();
      if (op->overload() && op->overload()->size() > 0) name += "." + op->overload()->str();
      op_counts[name]++;
      std::string args;
      for (uint32_t a = 0; call->args() && a < call->args()->size(); ++a) {
        if (a > 0) args += ", ";
        args += std::to_string(call->args()->Get(a));
        touch(call->args()->Get(a), k);
      }
      std::printf("    %3u  %-36s (%s)\n", k, name.c_str(), args.c_str());
    } else if (ins->instr_args_type() == ember_fb::InstructionArguments::DelegateCall) {
      const auto* call = ins->instr_args_as_DelegateCall();
      std::printf("    %3u  delegate #%d\n", k, call->delegate_index());
      for (uint32_t a = 0; call->args() && a < call->args()->size(); ++a) touch(call->args()->Get(a), k);
    } else {
      std::printf("    %3u  %s\n", k, ember_fb::EnumNameInstructionArguments(ins->instr_args_type()));
    }
  }
  for (uint32_t i = 0; plan->outputs() && i < plan->outputs()->size(); ++i) {
    touch(plan->outputs()->Get(i), n_instr);  // Outputs live until the method ends.
  }
  std::printf("  operators:\n");
  for (const auto& [name, count] : op_counts) std::printf("    %-40s x%d\n", name.c_str(), count);
  if (plan->delegates() && plan->delegates()->size() > 0) {
    std::printf("  delegates:\n");
    for (uint32_t d = 0; d < plan->delegates()->size(); ++d) {
      const auto* del = plan->delegates()->Get(d);
      std::printf("    %u  backend '%s', data %s #%u, %u compile specs\n", d, del->id()->c_str(),
                  del->processed()->location() == ember_fb::DataLocation::INLINE ? "inline" : "segment",
                  del->processed()->index(), del->compile_specs() ? del->compile_specs()->size() : 0);
    }
  }
  std::printf("  planned buffers:\n");
  uint64_t planned = 0;
  for (uint32_t i = 1; plan->non_const_buffer_sizes() && i < plan->non_const_buffer_sizes()->size(); ++i) {
    const auto size = static_cast<uint64_t>(plan->non_const_buffer_sizes()->Get(i));
    planned += size;
    std::printf("    buffer %u: %s (%llu bytes)\n", i, tools::human_bytes(double(size)).c_str(),
                static_cast<unsigned long long>(size));
  }
  // Mutable buffers: state kept across runs (a KV cache), by value index.
  bool mutable_header = false;
  for (uint32_t i = 0; i < plan->values()->size(); ++i) {
    const auto* t = plan->values()->Get(i)->val_as_Tensor();
    if (t == nullptr || t->allocation_info() == nullptr || t->data_buffer_idx() == 0) continue;
    if (!mutable_header) std::printf("  mutable buffers (kept across runs):\n");
    mutable_header = true;
    std::printf("    value %u: %s\n", i, tensor_desc(t).c_str());
  }
  std::vector<program::TensorLifetime> all;
  for (const auto& [where, lt] : lifetimes) all.push_back(lt);
  const uint64_t bound = program::max_live_bytes(all, 16);  // The planner's alignment.
  std::printf("  plan efficiency: %llu planned bytes, lower bound %llu (max live), %s\n",
              static_cast<unsigned long long>(planned), static_cast<unsigned long long>(bound),
              planned == 0 ? "n/a"
                           : (std::to_string(static_cast<int>(100.0 * double(bound) / double(planned) + 0.5)) + "% of the plan is needed").c_str());
}

// Loads the method with the linked kernels and delegates and reports what
// their prepare steps took: the total, then the instructions that took most.
void inspect_prepared(extension::Module* module, const ember_fb::ExecutionPlan* plan) {
  const std::string name = plan->name()->str();
  if (module == nullptr) return;
  Result<Method*> method = module->method(name);
  if (!method.ok()) {
    std::printf("  prepared at load: not loaded here: %s (%s)\n", last_error_message(),
                error_name(method.error()));
    return;
  }
  const Method& m = *method.get();
  std::vector<std::pair<uint32_t, size_t>> steps;  // (bytes, instruction)
  for (size_t k = 0; k < m.num_steps(); ++k) {
    if (m.step(k).prepared_bytes > 0) steps.emplace_back(m.step(k).prepared_bytes, k);
  }
  std::printf("  prepared at load: %s (%zu bytes) by %zu of %zu instructions; "
              "%s of constants only prepare reads\n",
              tools::human_bytes(double(m.prepared_bytes())).c_str(), m.prepared_bytes(),
              steps.size(), m.num_steps(),
              tools::human_bytes(double(m.dropped_constant_bytes())).c_str());
  if (steps.empty()) return;
  std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  const size_t shown = std::min<size_t>(steps.size(), 10);
  std::printf("    | instruction | op | prepared |\n    |---:|---|---:|\n");
  for (size_t i = 0; i < shown; ++i) {
    const Step& step = m.step(steps[i].second);
    std::printf("    | %zu | %s | %s |\n", steps[i].second, step.op_name,
                tools::human_bytes(double(steps[i].first)).c_str());
  }
  if (shown < steps.size()) std::printf("    (%zu more)\n", steps.size() - shown);
}

}  // namespace

const char kHelp[] =
    "usage: ember-inspect model.pte|model.bpte [--data FILE.ptd]\n"
    "Prints what a program holds: per method its inputs and outputs, instructions,\n"
    "operators, delegates, mutable buffers, planned buffers and how close the plan is\n"
    "to its lower bound, constant methods' values, and what the kernels' prepare\n"
    "steps take at load.\n"
    "\n"
    "  --data FILE.ptd   the weights the program keeps outside itself (needed to load\n"
    "                    its methods and report what prepare takes)\n"
    "  -h, --help        this text\n";

int main(int argc, char** argv) {
  std::string path, data_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--data" && i + 1 < argc) {
      data_path = argv[++i];
    } else if (!a.empty() && a[0] != '-' && path.empty()) {
      path = a;
    } else {
      std::fprintf(stderr, "ember-inspect: unexpected argument '%s'\n%s", a.c_str(), kHelp);
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "ember-inspect: no program given\n%s", kHelp);
    return 2;
  }
  Result<extension::FileDataLoader> file = extension::FileDataLoader::from(path.c_str());
  if (!file.ok()) {
    std::fprintf(stderr, "ember-inspect: %s\n", last_error_message());
    return 1;
  }
  // A bundled program (.bpte): its test suites, then the program inside.
  std::string bundled_desc;
  {
    const size_t size = file->size().get();
    Result<FreeableBuffer> head = file->load(0, size < 8 ? size : 8);
    if (head.ok() && extension::is_bundled_program(head->data(), head->size())) {
      Result<FreeableBuffer> whole = file->load(0, size);
      Result<extension::BundledProgram> bundled =
          whole.ok() ? extension::BundledProgram::load(whole->data(), whole->size())
                     : Result<extension::BundledProgram>(whole.error());
      if (!bundled.ok()) {
        std::fprintf(stderr, "ember-inspect: %s: %s (%s)\n", path.c_str(), last_error_message(),
                     error_name(bundled.error()));
        return 1;
      }
      bundled_desc = "bundled program: " + std::to_string(bundled->program().size()) +
                     "-byte program at offset " + std::to_string(bundled->program_offset()) +
                     "; test cases:";
      for (size_t s = 0; s < bundled->num_suites(); ++s) {
        bundled_desc += std::string(s ? "," : "") + " '" + bundled->suite_method(s) + "' " +
                        std::to_string(bundled->num_test_cases(s));
      }
      if (bundled->num_suites() == 0) bundled_desc += " none";
    }
  }
  Result<std::unique_ptr<DataLoader>> loader = extension::program_data_loader(
      std::make_unique<extension::FileDataLoader>(std::move(file.get())));
  if (!loader.ok()) {
    std::fprintf(stderr, "ember-inspect: %s: %s\n", path.c_str(), last_error_message());
    return 1;
  }
  Result<Program> program = Program::load(loader.get().get());
  if (!program.ok()) {
    std::fprintf(stderr, "ember-inspect: %s: %s (%s)\n", path.c_str(), last_error_message(),
                 error_name(program.error()));
    return 1;
  }
  const ember_fb::Program* fb = program->flatbuffer();
  std::printf("%s: %s, format version %u, %u method(s), %u segment(s), constant segment %s\n", path.c_str(),
              tools::human_bytes(double(program->file_size())).c_str(), fb->version(),
              fb->execution_plan()->size(), fb->segments() ? fb->segments()->size() : 0,
              tools::human_bytes(double(program->constant_segment_size())).c_str());
  if (!bundled_desc.empty()) std::printf("%s\n", bundled_desc.c_str());
  // A second, module-owned copy of the program, for loading methods.
  Result<std::unique_ptr<extension::Module>> module = extension::Module::load(
      path.c_str(), extension::Module::LoadMode::Mmap, Program::Verification::Full, data_path);
  for (uint32_t i = 0; i < fb->execution_plan()->size(); ++i) {
    inspect_plan(fb->execution_plan()->Get(i));
    inspect_prepared(module.ok() ? module.get().get() : nullptr, fb->execution_plan()->Get(i));
  }
  return 0;
}
