// Semantic verification of an untrusted program, after the FlatBuffer's own
// structural verifier: every index in range, every union tag known, every
// size and offset free of overflow and inside its buffer or segment.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"

namespace ember_fb {
struct Program;
struct ExecutionPlan;
}  // namespace ember_fb

namespace ember {

struct ProgramLayout {
  size_t file_size = 0;
  uint64_t segment_base_offset = 0;  // 0 when the file has no segments.
};

/// Checks the program-level tables (segments, constant offsets, delegate data).
Error verify_program(const ember_fb::Program* program, const ProgramLayout& layout);

/// Checks one execution plan against the program. `constant_segment_size` and
/// `mutable_segment_size` are the byte sizes of the constant segment and of
/// the segment mutable_data_segments[0] names (0 when there is none).
Error verify_plan(const ember_fb::Program* program, const ember_fb::ExecutionPlan* plan,
                  size_t constant_segment_size, size_t mutable_segment_size = 0);

}  // namespace ember
