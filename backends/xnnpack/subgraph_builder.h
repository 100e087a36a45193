// Turns a verified "EXN1" blob into an XNNPACK subgraph.
//
// The blob is untrusted: `build_subgraph` checks every count, id, dim and
// constant size before XNNPACK sees it, and names what is wrong through
// `ctx.fail` (the backend's init error). It allocates its tables from the
// init allocator; the subgraph itself lives on XNNPACK's heap until the
// caller turns it into a runtime and deletes it.
#pragma once

#include <xnnpack.h>

#include <cstddef>
#include <cstdint>

#include "runtime/backend/backend_interface.h"

namespace ember_xnn {
struct Graph;
}

namespace ember::backends::xnnpack {

inline constexpr uint32_t kNoValue = 0xFFFFFFFFu;

/// One delegate argument as the program sees it.
struct ExternalTensor {
  uint32_t xnn_id = 0;        // XNNPACK's external value id
  bool nchw = false;          // rank 4, NCHW in the program, NHWC inside
  int32_t rank = 0;
  int32_t sizes[XNN_MAX_TENSOR_DIMS] = {};  // program (PyTorch) order
  size_t numel = 0;
  float* scratch = nullptr;   // NHWC staging for nchw tensors
};

struct BuiltSubgraph {
  xnn_subgraph_t subgraph = nullptr;
  ExternalTensor* inputs = nullptr;
  uint32_t num_inputs = 0;
  ExternalTensor* outputs = nullptr;
  uint32_t num_outputs = 0;
};

/// Verifies `blob` as a Graph and returns it, or fails with the reason.
Result<const ember_xnn::Graph*> verify_graph_blob(BackendInitContext& ctx, const void* blob,
                                                  size_t size);

/// Defines every value and node of `graph` in a new XNNPACK subgraph.
/// Static data points into the blob, which must outlive the runtime.
Result<BuiltSubgraph> build_subgraph(BackendInitContext& ctx, const ember_xnn::Graph& graph);

}  // namespace ember::backends::xnnpack
