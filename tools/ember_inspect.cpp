// ember-inspect: print what a .pte holds: methods, their inputs and outputs,
// operators, delegates, planned buffers and how close the plan is to the
// lower bound (most bytes live at any one instruction), and what loading
// each method prepares (packed weights and kernel state, per instruction).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "extension/bundled_program/bundled_program.h"
#include "extension/data_loader/file_data_loader.h"
#include "extension/devtools/memory_plan_view.h"
#include "extension/devtools/program_graph.h"
#include "extension/module/module.h"
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
      }
      std::printf("    %3u  %-36s (%s)\n", k, name.c_str(), args.c_str());
    } else if (ins->instr_args_type() == ember_fb::InstructionArguments::DelegateCall) {
      const auto* call = ins->instr_args_as_DelegateCall();
      std::printf("    %3u  delegate #%d\n", k, call->delegate_index());
    } else {
      std::printf("    %3u  %s\n", k, ember_fb::EnumNameInstructionArguments(ins->instr_args_type()));
    }
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
  // Lifetimes from the instruction order; values sharing a region count once.
  const uint64_t bound =
      extension::memory_plan_lower_bound(extension::memory_plan_view(plan), 16);  // The planner's alignment.
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

// Runs `argv` (searched on PATH); its exit status, or 127 when it cannot start.
int run(const std::vector<std::string>& argv) {
  std::fflush(stdout);  // Ours before the child's.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return 127;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// The Python that draws with matplotlib: $EMBER_PYTHON, else the one beside
// this tool (a venv's bin/), else python3 on PATH.
std::string python_for_plots() {
  if (const char* env = std::getenv("EMBER_PYTHON"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = self.parent_path() / "python3";
    if (access(beside.c_str(), X_OK) == 0) return beside.string();
  }
  return "python3";
}

std::string file_stem(const std::string& method) {
  std::string s;
  for (char c : method) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '_';
  return s;
}

// --plot DIR: per method the memory plan (JSON, drawn by ember.devtools.plot_cli
// with matplotlib into a PNG) and the graph (DOT, drawn by Graphviz's dot
// into an SVG); with --profile, the profile as a chart.
int plot(const ember_fb::Program* fb, const std::string& dir, const std::string& profile,
         const std::string& program_path) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "ember-inspect: cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
    return 1;
  }
  int status = 0;
  for (uint32_t i = 0; i < fb->execution_plan()->size(); ++i) {
    const auto* plan = fb->execution_plan()->Get(i);
    const std::string stem = dir + "/" + file_stem(plan->name()->str());
    std::ofstream(stem + ".memory_plan.json") << extension::memory_plan_json(plan);
    std::ofstream(stem + ".graph.dot") << extension::program_graph_dot(plan);
    const int rc = run({"dot", "-Tsvg", "-o", stem + ".graph.svg", stem + ".graph.dot"});
    if (rc == 127) {
      std::fprintf(stderr, "ember-inspect: Graphviz's dot was not found (Debian: apt-get install "
                   "graphviz); the graph is in %s.graph.dot\n", stem.c_str());
      status = 1;
    } else if (rc != 0) {
      std::fprintf(stderr, "ember-inspect: dot failed (exit %d) on %s.graph.dot\n", rc, stem.c_str());
      status = 1;
    } else {
      std::printf("wrote %s.graph.svg\n", stem.c_str());
    }
  }
  std::vector<std::string> draw = {python_for_plots(), "-m", "ember.devtools.plot_cli", dir};
  if (!profile.empty()) {
    draw.push_back("--profile");
    draw.push_back(profile);
    // A profile file of another program is refused (its size and hash).
    draw.push_back("--program");
    draw.push_back(program_path);
  }
  const int rc = run(draw);
  if (rc != 0) {
    std::fprintf(stderr, "ember-inspect: drawing with %s failed (exit %d): the pictures need Python "
                 "with ember and matplotlib (set EMBER_PYTHON); the data is in %s/*.json\n",
                 draw[0].c_str(), rc, dir.c_str());
    status = 1;
  }
  return status;
}

}  // namespace

const char kHelp[] =
    "usage: ember-inspect model.pte|model.bpte [--data FILE.ptd] [--plot DIR [--profile P]]\n"
    "Prints what a program holds: per method its inputs and outputs, instructions,\n"
    "operators, delegates, mutable buffers, planned buffers and how close the plan is\n"
    "to its lower bound, constant methods' values, and what the kernels' prepare\n"
    "steps take at load.\n"
    "\n"
    "  --data FILE.ptd   the weights the program keeps outside itself (needed to load\n"
    "                    its methods and report what prepare takes)\n"
    "  --plot DIR        also draw pictures into DIR, per method: the memory plan\n"
    "                    (<method>.memory_plan.png: tensors as rectangles over\n"
    "                    instruction x offset; matplotlib) and the graph\n"
    "                    (<method>.graph.svg; Graphviz's dot), with their data\n"
    "                    (.memory_plan.json, .graph.dot)\n"
    "  --profile P       with --plot: a profile of the program as a chart (profile.png:\n"
    "                    time per operator, one run's timeline): the profile file\n"
    "                    ember-run --profile-out P.eprof wrote (refused when it is of\n"
    "                    another program), or the trace of ember-run --profile P.json\n"
    "  -h, --help        this text\n";

int main(int argc, char** argv) {
  std::string path, data_path, plot_dir, profile_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (a == "--data" && i + 1 < argc) {
      data_path = argv[++i];
    } else if (a == "--plot" && i + 1 < argc) {
      plot_dir = argv[++i];
    } else if (a == "--profile" && i + 1 < argc) {
      profile_path = argv[++i];
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
  if (!profile_path.empty() && plot_dir.empty()) {
    std::fprintf(stderr, "ember-inspect: --profile goes with --plot DIR\n%s", kHelp);
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
  if (!plot_dir.empty()) {
    std::printf("\n");
    std::fflush(stdout);
    return plot(fb, plot_dir, profile_path, path);
  }
  return 0;
}
