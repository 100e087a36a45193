// Serialises a ProgramT so that other readers of the format can index it
// without presence checks.
//
// FlatBuffers' generated `Program::Pack` leaves out every empty vector and
// empty string; readers of the format index several of them unchecked
// (docs/pte-format.md, "What other runtimes of the format expect from a
// writer"). This packer writes every vector and string field present, empty
// or not. Two fields stay absent when empty because their absence has a
// meaning: `Chain.stacktrace` (a present vector promises one FrameList per
// instruction) and `ExecutionPlan.non_const_buffer_device` (absent: every
// buffer on the CPU). Optional tables (`allocation_info`,
// `extra_tensor_info`) are written only when set, as the format's table of
// where a tensor's bytes live requires.
#pragma once

#include "schema/program_generated.h"

namespace ember::program {

/// Packs `program` into `fbb` (not finished); returns the root offset.
flatbuffers::Offset<ember_fb::Program> pack_program(flatbuffers::FlatBufferBuilder& fbb,
                                                    const ember_fb::ProgramT& program);

}  // namespace ember::program
