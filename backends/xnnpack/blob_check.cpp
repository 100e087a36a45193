// See blob_check.h.
#include "backends/xnnpack/blob_check.h"

#include <cstdio>

#include "backends/xnnpack/layout.h"

namespace ember::backends::xnnpack {

bool xnnpack_ready() {
  static const xnn_status status = xnn_initialize(/*allocator=*/nullptr);
  return status == xnn_status_success;
}

Result<xnn_runtime_t> create_runtime(BackendInitContext& ctx, BuiltSubgraph& built,
                                     pthreadpool_t pool) {
  xnn_runtime_t runtime = nullptr;
  const xnn_status s = xnn_create_runtime_v2(built.subgraph, pool, /*flags=*/0, &runtime);
  xnn_delete_subgraph(built.subgraph);
  built.subgraph = nullptr;
  if (s != xnn_status_success) {
    ctx.fail("xnn_create_runtime_v2 failed (status %d): the subgraph is inconsistent",
             static_cast<int>(s));
    return Error::DelegateInvalidCompatibility;
  }
  return runtime;
}

namespace {

Error check_dim_orders(BackendInitContext& ctx, const BuiltSubgraph& built,
                       std::span<const std::span<const uint8_t>> dim_orders) {
  const uint32_t n = built.num_inputs + built.num_outputs;
  if (dim_orders.size() != n) {
    ctx.fail("%zu argument dim orders for a delegate of %u inputs and %u outputs",
             dim_orders.size(), built.num_inputs, built.num_outputs);
    return Error::DelegateInvalidCompatibility;
  }
  for (uint32_t k = 0; k < n; ++k) {
    const bool in = k < built.num_inputs;
    const uint32_t index = in ? k : k - built.num_inputs;
    const ExternalTensor& t = in ? built.inputs[index] : built.outputs[index];
    const std::span<const uint8_t> order = dim_orders[k];
    if (order.size() != static_cast<size_t>(t.rank)) {
      ctx.fail("%s %u: dim order of %zu entries for a rank-%d value", in ? "input" : "output",
               index, order.size(), t.rank);
      return Error::DelegateInvalidCompatibility;
    }
    if (argument_layout(t.nchw, t.rank, order.data()) == ArgumentLayout::kUnreadable) {
      char text[64];
      int used = 0;
      for (size_t d = 0; d < order.size() && used < 48; ++d) {
        used += std::snprintf(text + used, sizeof(text) - static_cast<size_t>(used), "%s%u",
                              d == 0 ? "" : ", ", order[d]);
      }
      if (order.empty()) text[0] = '\0';
      ctx.fail("%s %u has dim order (%s), which the delegate cannot read (%s)",
               in ? "input" : "output", index, text,
               t.nchw ? "contiguous or channels-last only" : "contiguous only");
      return Error::DelegateInvalidCompatibility;
    }
  }
  return Error::Ok;
}

}  // namespace

Error check_graph_blob(BackendInitContext& ctx, const void* blob, size_t size,
                       std::span<const std::span<const uint8_t>> dim_orders) {
  if (!xnnpack_ready()) {
    ctx.fail("xnn_initialize failed: this CPU is not supported by XNNPACK");
    return Error::DelegateInvalidCompatibility;
  }
  EMBER_TRY_ASSIGN(const ember_xnn::Graph* graph, verify_graph_blob(ctx, blob, size));
  EMBER_TRY_ASSIGN(BuiltSubgraph built, build_subgraph(ctx, *graph));
  if (!dim_orders.empty()) {
    const Error err = check_dim_orders(ctx, built, dim_orders);
    if (err != Error::Ok) {
      xnn_delete_subgraph(built.subgraph);
      return err;
    }
  }
  EMBER_TRY_ASSIGN(xnn_runtime_t runtime, create_runtime(ctx, built, /*pool=*/nullptr));
  xnn_delete_runtime(runtime);
  return Error::Ok;
}

}  // namespace ember::backends::xnnpack
