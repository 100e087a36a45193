// Loads a program from bytes and runs every method on zero inputs, with all
// memory from bounded, caller-owned buffers. Shared by the fuzzer and the
// regression test that replays the fuzzer's findings: whatever the bytes,
// this must return (an error or Ok), never crash.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::fuzz {

/// Returns the number of methods that executed successfully.
int run_program_bytes(const uint8_t* data, size_t size);

}  // namespace ember::fuzz
