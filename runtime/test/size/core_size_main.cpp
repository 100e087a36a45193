// The size-check binary: the runtime core and nothing else (no kernels, no
// delegates, no STL containers of its own). It loads a program from a file,
// loads its first method into static memory and executes it; with no kernels
// linked, a method with kernel calls fails at load_method (OperatorMissing),
// which is what a program with no kernels does. `make size-check` builds it
// size-optimised with -fno-exceptions -fno-rtti and fails when the stripped
// binary passes the gate (runtime/test/size/check_size.py).
#include <cstdint>
#include <cstdio>

#include "extension/data_loader/file_data_loader.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/program.h"

using namespace ember;

namespace {
alignas(64) uint8_t g_method_pool[256 * 1024];
alignas(64) uint8_t g_planned[1024 * 1024];
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PROGRAM.pte\n", argv[0]);
    return 2;
  }
  Result<extension::FileDataLoader> loader = extension::FileDataLoader::from(argv[1]);
  if (!loader.ok()) return 1;
  Result<Program> program = Program::load(&loader.get());
  if (!program.ok()) {
    std::fprintf(stderr, "%s\n", last_error_message());
    return 1;
  }
  Result<const char*> name = program->get_method_name(0);
  if (!name.ok()) return 1;
  MemoryAllocator allocator(g_method_pool, sizeof(g_method_pool));
  std::span<uint8_t> planned(g_planned, sizeof(g_planned));
  MemoryManager memory(&allocator, std::span<std::span<uint8_t>>(&planned, 1));
  Result<Method> method = program->load_method(name.get(), &memory);
  if (!method.ok()) {
    std::fprintf(stderr, "%s\n", last_error_message());
    return 3;
  }
  const Error err = method->execute();
  std::printf("%s\n", err == Error::Ok ? "ok" : last_error_message());
  return err == Error::Ok ? 0 : 4;
}
