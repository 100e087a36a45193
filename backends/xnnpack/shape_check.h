// Shape inference over an "EXN1" graph before XNNPACK sees it.
//
// XNNPACK (2022) sizes buffers from the dims a graph declares but computes
// operator outputs from inputs and parameters; a crafted blob whose declared
// output is smaller than what the operator writes would overflow a buffer.
// So every node's output dims must equal what its inputs and parameters
// give, every operand must be defined (input, constant or an earlier node's
// output) before use, and each value is written by one node only.
#pragma once

#include <cstdint>

#include "runtime/backend/backend_interface.h"

namespace ember_xnn {
struct Graph;
}

namespace ember::backends::xnnpack {

/// Checks node `index` of `graph`; `defined[v]` marks values available so
/// far and is updated with the node's output. Value ids are in range (the
/// caller checked). Fails through ctx with the node, kind and dims.
Error check_node_shapes(BackendInitContext& ctx, const ember_xnn::Graph& graph, uint32_t index,
                        uint8_t* defined);

}  // namespace ember::backends::xnnpack
