// Writes the "EXN1" blob (schema/xnnpack_graph.fbs) ahead of time. The
// Python preprocess fills a GraphDesc; the runtime reads what this writes.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember::backends::xnnpack {

struct ValueDesc {
  std::vector<uint32_t> dims;  // XNNPACK dims (NHWC for rank 4)
  int32_t constant = -1;       // index into GraphDesc::constants
};

struct NodeDesc {
  std::string kind;  // a NodeKind name, e.g. "Convolution2d"
  std::vector<uint32_t> inputs, outputs;
  std::vector<uint32_t> padding, pooling, stride, dilation;
  std::vector<uint32_t> pre_paddings, post_paddings, new_shape;
  uint32_t groups = 1;
  uint32_t depth_multiplier = 1;
  uint32_t flags = 0;
  float output_min = -std::numeric_limits<float>::infinity();
  float output_max = std::numeric_limits<float>::infinity();
  float alpha = 0.0f;
  float padding_value = 0.0f;
};

struct ExternalDesc {
  uint32_t value = 0;
  bool nchw = false;
};

struct GraphDesc {
  std::vector<ValueDesc> values;
  std::vector<std::span<const uint8_t>> constants;  // float32 bytes, not owned
  std::vector<NodeDesc> nodes;
  std::vector<ExternalDesc> inputs, outputs;
};

/// The blob, or an empty vector with `error` set (an unknown node kind, a
/// value id out of range, a constant whose size does not match its dims).
std::vector<uint8_t> write_graph(const GraphDesc& graph, std::string* error);

}  // namespace ember::backends::xnnpack
