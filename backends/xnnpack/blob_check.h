// Everything `init` does to an "EXN1" blob, short of keeping the runtime.
//
// `init` and the ahead-of-time check (`ember._C.check_xnnpack_graph`, called
// at the end of the Python preprocess) share these steps, so a blob the
// runtime would refuse at load fails at `to_backend` with the same reason.
#pragma once

#include <xnnpack.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "backends/xnnpack/subgraph_builder.h"

namespace ember::backends::xnnpack {

/// Initialises XNNPACK once per process; false on a CPU it does not support.
bool xnnpack_ready();

/// Creates the XNNPACK runtime of `built.subgraph` on `pool` (null: the
/// caller's thread only) and deletes the subgraph either way, leaving
/// `built.subgraph` null. The runtime reads constants from the blob, which
/// must outlive it. Fails through ctx when XNNPACK refuses the subgraph.
Result<xnn_runtime_t> create_runtime(BackendInitContext& ctx, BuiltSubgraph& built,
                                     pthreadpool_t pool);

/// Verifies `blob` (FlatBuffer, counts, ids, shapes), defines it in XNNPACK
/// and creates its runtime, then deletes everything XNNPACK made. Tables
/// come from ctx.allocator. `dim_orders`, when not empty, holds the dim
/// order of every delegate argument as the program will hand it (inputs,
/// then outputs): one `execute` could not read (`argument_layout`) fails
/// here, naming the argument. Returns Ok, or the error after ctx.fail().
Error check_graph_blob(BackendInitContext& ctx, const void* blob, size_t size,
                       std::span<const std::span<const uint8_t>> dim_orders = {});

}  // namespace ember::backends::xnnpack
