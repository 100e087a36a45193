// libFuzzer target: Program::load + load_method + execute on arbitrary bytes.
//   make fuzz FUZZ_SECONDS=600
#include <cstddef>
#include <cstdint>

#include "fuzz/run_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ember::fuzz::run_program_bytes(data, size);
  return 0;
}
