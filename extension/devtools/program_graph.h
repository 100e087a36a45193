// A method's graph as Graphviz DOT, from the `.pte` alone: method inputs,
// one node per instruction (operator or delegate, node name, source line,
// output type) and the outputs; an edge per value an instruction reads from
// the instruction (or input) that wrote it; jumps as dashed edges.
// Constants (weights) are left out: they would double the picture.
#pragma once

#include <string>

#include "schema/program_generated.h"

namespace ember::extension {

std::string program_graph_dot(const ember_fb::ExecutionPlan* plan);

}  // namespace ember::extension
