// ember-oplist: the kernels a set of programs needs, as the op list a
// selective build takes (CMake: EMBER_KERNEL_OPS=FILE, or
// ember_add_selective_runtime(...)).
//
//   ember-oplist model.pte [more.pte ...] [-o ops.txt]
//
// One operator per line ("aten::add.out"), sorted, with a comment naming the
// programs; operators run by a delegate need no kernel and are not listed.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "extension/data_loader/file_data_loader.h"
#include "runtime/executor/program.h"
#include "schema/program_generated.h"

using namespace ember;

namespace {

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: ember-oplist PROGRAM.pte [PROGRAM.pte ...] [-o FILE]\n"
               "  Writes the operators the programs' kernel calls use, one per line, as the\n"
               "  op list of a selective build (-DEMBER_KERNEL_OPS=FILE). Default: stdout.\n");
}

// Adds the operators of `plan` that an instruction calls.
void collect(const ember_fb::ExecutionPlan* plan, std::set<std::string>* ops) {
  if (plan->chains() == nullptr || plan->operators() == nullptr) return;
  for (const auto* chain : *plan->chains()) {
    if (chain->instructions() == nullptr) continue;
    for (const auto* ins : *chain->instructions()) {
      if (ins->instr_args_type() != ember_fb::InstructionArguments::KernelCall) continue;
      const auto index = static_cast<uint32_t>(ins->instr_args_as_KernelCall()->op_index());
      const auto* op = plan->operators()->Get(index);
      std::string name = op->name()->str();
      if (op->overload() != nullptr && op->overload()->size() > 0) {
        name += "." + op->overload()->str();
      }
      ops->insert(name);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string output;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    }
    if (a == "-o") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ember-oplist: -o needs a file\n");
        return 2;
      }
      output = argv[++i];
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "ember-oplist: unknown option '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty()) {
    usage(stderr);
    return 2;
  }
  std::set<std::string> ops;
  for (const std::string& path : inputs) {
    Result<extension::FileDataLoader> loader = extension::FileDataLoader::from(path.c_str());
    if (!loader.ok()) {
      std::fprintf(stderr, "ember-oplist: %s: %s\n", path.c_str(), last_error_message());
      return 1;
    }
    Result<Program> program = Program::load(&loader.get());
    if (!program.ok()) {
      std::fprintf(stderr, "ember-oplist: %s: %s\n", path.c_str(), last_error_message());
      return 1;
    }
    const ember_fb::Program* fb = program->flatbuffer();
    if (fb->execution_plan() == nullptr) continue;
    for (const auto* plan : *fb->execution_plan()) collect(plan, &ops);
  }
  std::FILE* out = stdout;
  if (!output.empty()) {
    out = std::fopen(output.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "ember-oplist: cannot write %s: %s\n", output.c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  std::fprintf(out, "# Operators used by:");
  for (const std::string& path : inputs) {
    const size_t slash = path.find_last_of('/');
    std::fprintf(out, " %s", slash == std::string::npos ? path.c_str() : path.c_str() + slash + 1);
  }
  std::fprintf(out, "\n# Written by ember-oplist; a selective build takes it as EMBER_KERNEL_OPS.\n");
  for (const std::string& op : ops) std::fprintf(out, "%s\n", op.c_str());
  if (out != stdout) std::fclose(out);
  return 0;
}
