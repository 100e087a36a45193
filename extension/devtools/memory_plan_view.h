// A method's memory plan as the `.pte` holds it: each planned region
// (buffer, offset, bytes) with the instructions it is live over, what it
// holds (input, output, mutable state, intermediate) and the node that writes
// it. The picture (ember-inspect --plot, ember.devtools.plot_memory_plan) and
// ember-inspect's lower bound come from it, so they need the file alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schema/program_generated.h"

namespace ember::extension {

struct PlannedRegion {
  uint32_t buffer = 0;
  uint64_t offset = 0;
  uint64_t nbytes = 0;
  // Inclusive instruction range; inputs and mutable state start at -1 (set
  // before the first instruction), outputs and mutable state end at the
  // instruction count (read after the last).
  int64_t first = 0;
  int64_t last = 0;
  std::string kind;   // "input", "output", "mutable" or "intermediate"
  std::string label;  // "input 0", or the writing node ("aten_mm_default")
  std::string type;   // "float32[3, 4]"
  std::vector<int32_t> values;  // the values sharing this region's bytes
};

/// Values that alias one region (same buffer, offset and size) count once.
std::vector<PlannedRegion> memory_plan_view(const ember_fb::ExecutionPlan* plan);

/// Most bytes live at one instruction (aligned as the planner aligns): the
/// plan's lower bound.
uint64_t memory_plan_lower_bound(const std::vector<PlannedRegion>& regions, uint64_t alignment = 16);

/// The view as JSON: {"method", "num_instructions", "buffers" (sizes by
/// memory id), "lower_bound", "tensors": [{buffer, offset, nbytes, first,
/// last, kind, label, type, values}]}.
std::string memory_plan_json(const ember_fb::ExecutionPlan* plan);

}  // namespace ember::extension
