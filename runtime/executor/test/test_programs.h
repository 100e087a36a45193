// Hand-built programs for runtime tests, made with the real program writer.
#pragma once

#include <cstdint>
#include <vector>

#include "program/program_writer.h"
#include "runtime/core/data_loader.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/executor/memory_manager.h"

namespace ember::testing {

/// "out = x + y * 2" over float32 [2, 3] using the test kernel "test::axpy.out"
/// (args: x, y, alpha, out, out). Inputs and output are planned in buffer 1.
ember_fb::ProgramT make_axpy_program();

/// Writes a ProgramT with no constants; fails the test on a writer error.
std::vector<uint8_t> write(ember_fb::ProgramT program,
                           const std::vector<std::vector<uint8_t>>& constants = {});

/// "out = x + c" where c is a float32 [2, 3] constant (1..6) in the constant segment.
std::vector<uint8_t> make_constant_program_bytes();

/// "state = state + x" with a mutable buffer `state` (float32 [2, 3], planned
/// in buffer 2, initial value 1..6 in the mutable data); input x in buffer 1;
/// output: state. The raw ProgramT, and the bytes written with that initial value.
ember_fb::ProgramT make_accumulator_program();
std::vector<uint8_t> write_with_mutable_data(ember_fb::ProgramT program,
                                             const std::vector<std::vector<uint8_t>>& mutable_data);
std::vector<uint8_t> make_accumulator_program_bytes();

/// A program's bytes with a loader over them, a method allocator and one
/// planned buffer: what load_method needs for the small test programs.
struct MethodFixture {
  explicit MethodFixture(std::vector<uint8_t> b)
      : bytes(std::move(b)), loader(bytes.data(), bytes.size()) {}
  std::vector<uint8_t> bytes;
  BufferDataLoader loader;
  alignas(64) uint8_t pool[16384];
  alignas(64) uint8_t arena[256];
  std::span<uint8_t> arena_span{arena, sizeof(arena)};
  MemoryAllocator allocator{pool, sizeof(pool)};
  MemoryManager mm{&allocator, std::span<std::span<uint8_t>>(&arena_span, 1)};
};

/// Helpers for building values.
std::unique_ptr<ember_fb::EValueT> tensor_value(ember_fb::ScalarType type,
                                                std::vector<int32_t> sizes, uint32_t memory_id,
                                                uint64_t offset, uint32_t data_buffer_idx = 0);
std::unique_ptr<ember_fb::EValueT> int_value(int64_t v);

}  // namespace ember::testing
