// What an instruction of a method is, for pictures and reports: its label
// ("aten::add.out", "delegate XnnpackBackend", "move", "jump_false", "free"),
// the FX node it came from (Chain.stacktrace's node frame) and the values it
// reads and writes. Reads the verified FlatBuffer of a loaded Program.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/program_generated.h"

namespace ember::extension {

std::string instruction_label(const ember_fb::ExecutionPlan* plan, uint32_t k);

/// The node name the exporter wrote for instruction `k`, or "".
std::string instruction_node(const ember_fb::ExecutionPlan* plan, uint32_t k);

/// The first "file:line" frame of instruction `k` (file name only), or "".
std::string instruction_source(const ember_fb::ExecutionPlan* plan, uint32_t k);

/// Every value index instruction `k` names (kernel and delegate arguments,
/// a move's source and target, a jump's condition, a freed value).
std::vector<int32_t> instruction_values(const ember_fb::ExecutionPlan* plan, uint32_t k);

/// The number of instructions of the method's (first) chain.
uint32_t num_instructions(const ember_fb::ExecutionPlan* plan);

/// "float32[3, 4]" for a tensor value, the kind ("Int", ...) otherwise.
std::string value_type(const ember_fb::ExecutionPlan* plan, int32_t value);

}  // namespace ember::extension
