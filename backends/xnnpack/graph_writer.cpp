#include "backends/xnnpack/graph_writer.h"

#include <flatbuffers/flatbuffers.h>

#include "backends/xnnpack/xnnpack_graph_generated.h"

namespace ember::backends::xnnpack {
namespace {

constexpr uint32_t kNoValue = 0xFFFFFFFFu;

bool kind_from_name(std::string_view name, ember_xnn::NodeKind* kind) {
  for (auto k : ember_xnn::EnumValuesNodeKind()) {
    if (k != ember_xnn::NodeKind::Invalid && name == ember_xnn::EnumNameNodeKind(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<uint8_t> write_graph(const GraphDesc& g, std::string* error) {
  const auto n_values = static_cast<uint32_t>(g.values.size());
  auto fail = [&](std::string message) {
    *error = std::move(message);
    return std::vector<uint8_t>();
  };
  for (size_t i = 0; i < g.values.size(); ++i) {
    const ValueDesc& v = g.values[i];
    if (v.constant < 0) continue;
    if (static_cast<size_t>(v.constant) >= g.constants.size()) {
      return fail("value " + std::to_string(i) + " names a missing constant");
    }
    uint64_t numel = 1;
    for (uint32_t d : v.dims) numel *= d;
    if (g.constants[static_cast<size_t>(v.constant)].size() != numel * 4) {
      return fail("constant of value " + std::to_string(i) + " has the wrong size");
    }
  }
  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  // Constants first (largest), each 64-byte aligned by the schema.
  std::vector<flatbuffers::Offset<ember_xnn::ConstantData>> constants;
  for (const auto& bytes : g.constants) {
    fbb.ForceVectorAlignment(bytes.size(), 1, 64);
    auto data = fbb.CreateVector(bytes.data(), bytes.size());
    constants.push_back(ember_xnn::CreateConstantData(fbb, data));
  }
  std::vector<flatbuffers::Offset<ember_xnn::Value>> values;
  for (const ValueDesc& v : g.values) {
    values.push_back(ember_xnn::CreateValue(fbb, fbb.CreateVector(v.dims), v.constant));
  }
  std::vector<flatbuffers::Offset<ember_xnn::Node>> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const NodeDesc& n = g.nodes[i];
    ember_xnn::NodeKind kind;
    if (!kind_from_name(n.kind, &kind)) {
      return fail("node " + std::to_string(i) + " has unknown kind '" + n.kind + "'");
    }
    for (uint32_t id : n.inputs) {
      if (id != kNoValue && id >= n_values) {
        return fail("node " + std::to_string(i) + " (" + n.kind + ") reads missing value " +
                    std::to_string(id));
      }
    }
    for (uint32_t id : n.outputs) {
      if (id >= n_values) return fail("node " + std::to_string(i) + " writes a missing value");
    }
    auto list = [&](const std::vector<uint32_t>& v) {
      return v.empty() ? flatbuffers::Offset<flatbuffers::Vector<uint32_t>>() : fbb.CreateVector(v);
    };
    nodes.push_back(ember_xnn::CreateNode(
        fbb, kind, fbb.CreateVector(n.inputs), fbb.CreateVector(n.outputs), list(n.padding),
        list(n.pooling), list(n.stride), list(n.dilation), n.groups, n.depth_multiplier,
        n.output_min, n.output_max, n.alpha, list(n.pre_paddings), list(n.post_paddings),
        n.padding_value, list(n.new_shape), n.flags));
  }
  auto externals = [&](const std::vector<ExternalDesc>& list) {
    std::vector<flatbuffers::Offset<ember_xnn::ExternalValue>> out;
    for (const ExternalDesc& e : list) out.push_back(ember_xnn::CreateExternalValue(fbb, e.value, e.nchw));
    return fbb.CreateVector(out);
  };
  for (const auto* list : {&g.inputs, &g.outputs}) {
    for (const ExternalDesc& e : *list) {
      if (e.value >= n_values) return fail("a delegate argument names a missing value");
    }
  }
  auto inputs = externals(g.inputs);
  auto outputs = externals(g.outputs);
  auto graph = ember_xnn::CreateGraph(fbb, 1, fbb.CreateVector(values), fbb.CreateVector(constants),
                                      fbb.CreateVector(nodes), inputs, outputs);
  ember_xnn::FinishGraphBuffer(fbb, graph);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

}  // namespace ember::backends::xnnpack
