// The memory plan view and the graph of a method, read from the tutorial's
// program M (tests/programs/m.pte: add -> addmm -> clamp, one input, one
// output): every planned tensor once, with its live range and kind; the
// lower bound; the DOT graph's nodes and edges.
#include <gtest/gtest.h>

#include <string>

#include "extension/devtools/memory_plan_view.h"
#include "extension/devtools/program_graph.h"
#include "extension/module/module.h"

using namespace ember;

namespace {

const ember_fb::ExecutionPlan* forward(extension::Module& module) {
  return module.program().flatbuffer()->execution_plan()->Get(0);
}

TEST(ProgramViews, MemoryPlanOfTheTutorialProgram) {
  auto module = extension::Module::load(std::string(EMBER_SOURCE_DIR) + "/tests/programs/m.pte");
  ASSERT_TRUE(module.ok()) << last_error_message();
  const auto regions = extension::memory_plan_view(forward(*module.get()));
  ASSERT_EQ(regions.size(), 4u);
  // Sorted by start: the input (set before instruction 0, live to the end),
  // then what add, addmm and clamp write; clamp's result is the output.
  EXPECT_EQ(regions[0].kind, "input");
  EXPECT_EQ(regions[0].first, -1);
  EXPECT_EQ(regions[0].last, 3);
  EXPECT_EQ(regions[0].nbytes, 48u);
  EXPECT_EQ(regions[0].type, "float32[3, 4]");
  EXPECT_EQ(regions[1].label, "aten::add.out #0");
  EXPECT_EQ(regions[1].first, 0);
  EXPECT_EQ(regions[1].last, 1);
  EXPECT_EQ(regions[2].first, 1);
  EXPECT_EQ(regions[2].last, 2);
  EXPECT_EQ(regions[3].kind, "output");
  EXPECT_EQ(regions[3].last, 3);
  EXPECT_EQ(regions[3].nbytes, 60u);
  // add's result and clamp's start at one offset, live at different times:
  // two tensors, not one.
  EXPECT_EQ(regions[1].offset, regions[3].offset);
  // Most live at once: input + addmm's + clamp's result at instruction 2.
  EXPECT_EQ(extension::memory_plan_lower_bound(regions), 48u + 64u + 64u);
  const std::string json = extension::memory_plan_json(forward(*module.get()));
  EXPECT_NE(json.find("\"buffers\": [0, 176]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"lower_bound\": 176"), std::string::npos) << json;
}

TEST(ProgramViews, GraphOfTheTutorialProgram) {
  auto module = extension::Module::load(std::string(EMBER_SOURCE_DIR) + "/tests/programs/m.pte");
  ASSERT_TRUE(module.ok()) << last_error_message();
  const std::string dot = extension::program_graph_dot(forward(*module.get()));
  for (const char* part : {"digraph \"forward\"", "label=\"0: aten::add.out", "1: aten::addmm.out",
                           "2: aten::clamp.out", "input0 -> i0;", "i0 -> i1;", "i1 -> i2;",
                           "i2 -> output0;", "label=\"output 0\\nfloat32[3, 5]\""}) {
    EXPECT_NE(dot.find(part), std::string::npos) << part << "\n" << dot;
  }
  // The constants (addmm's weight and bias) are not drawn.
  size_t into_addmm = 0;
  for (size_t at = dot.find("-> i1;"); at != std::string::npos; at = dot.find("-> i1;", at + 1)) {
    ++into_addmm;
  }
  EXPECT_EQ(into_addmm, 1u) << dot;
}

}  // namespace
