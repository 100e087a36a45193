// The XNNPACK delegate (backend id "EmberXnnpackBackend"): builds an XNNPACK
// runtime from the "EXN1" blob at init and runs it at execute.
//
// init allocates from the method allocator first (handle, staging buffers),
// then lets XNNPACK build and pack weights on its own heap; execute only
// converts layouts at the boundary, binds pointers and invokes the runtime.
//
// Profiling (#19): while the method is profiled, execute logs its phases as
// events inside the delegate call (BackendExecutionContext::log_event): the
// layout conversions in and out, xnn_setup_runtime and xnn_invoke_runtime
// (named with the subgraph's node count). Debian's XNNPACK (a 2022 snapshot)
// has no per-operator profiling (XNN_FLAG_BASIC_PROFILING and
// xnn_get_runtime_profiling_info came later), so the XNNPACK operators inside
// one invoke are not timed one by one.
#include <xnnpack.h>

#include <cstdio>
#include <cstring>
#include <new>

#include "backends/xnnpack/blob_check.h"
#include "backends/xnnpack/layout.h"
#include "backends/xnnpack/subgraph_builder.h"
#include "runtime/kernel/thread_pool_pthreadpool.h"
#include "backends/xnnpack/xnnpack_graph_generated.h"

namespace ember::backends::xnnpack {
namespace {

constexpr const char* kBackendId = "EmberXnnpackBackend";

struct Delegate {
  xnn_runtime_t runtime = nullptr;
  BuiltSubgraph io;
  xnn_external_value* bindings = nullptr;
  // The blob holds the static data of constants XNNPACK does not copy.
  FreeableBuffer blob;
  // The invoke event's name in profiles ("xnn_invoke_runtime (12 nodes)").
  char invoke_name[48] = {};
};

// Profile event names (BackendExecutionContext::log_event).
constexpr const char* kEventInputs = "inputs NCHW->NHWC";
constexpr const char* kEventSetup = "xnn_setup_runtime";
constexpr const char* kEventOutputs = "outputs NHWC->NCHW";
// The most events one execute logs: the four above.
constexpr uint32_t kEventsPerExecute = 4;

// Checks a delegate argument against the tensor the blob was built for and
// returns how to bind it (kUnreadable: unusable, ctx says why). The dim
// order rule is `argument_layout`, which preprocess already applied to the
// dim orders the program hands the delegate (check_graph_blob).
ArgumentLayout check_argument(BackendExecutionContext& ctx, const ExternalTensor& want,
                              const EValue* arg, const char* role, uint32_t index) {
  if (arg == nullptr || !arg->is_tensor()) {
    ctx.fail("%s %u is not a tensor", role, index);
    return ArgumentLayout::kUnreadable;
  }
  const Tensor& t = arg->to_tensor();
  if (t.dtype != ScalarType::Float) {
    ctx.fail("%s %u has dtype %s; the delegate was built for float32", role, index,
             scalar_type_name(t.dtype));
    return ArgumentLayout::kUnreadable;
  }
  bool same = t.dim == want.rank;
  for (int32_t d = 0; same && d < t.dim; ++d) {
    same = t.sizes[d] == want.sizes[d];
  }
  if (!same) {
    char got[96];
    ctx.fail("%s %u has shape %s, not the one the delegate was built for", role, index,
             format_shape(t.shape(), got, sizeof(got)));
    return ArgumentLayout::kUnreadable;
  }
  if (t.data == nullptr && want.numel > 0) {
    ctx.fail("%s %u has no data", role, index);
    return ArgumentLayout::kUnreadable;
  }
  const ArgumentLayout layout = argument_layout(want.nchw, t.dim, t.dim_order);
  if (layout == ArgumentLayout::kUnreadable) {
    ctx.fail("%s %u has a dim order the delegate cannot read", role, index);
  }
  return layout;
}

class XnnpackBackend final : public BackendInterface {
 public:
  bool is_available() const override { return xnnpack_ready(); }

  Result<DelegateHandle*> init(BackendInitContext& ctx, FreeableBuffer* processed,
                               std::span<const CompileSpec>) const override {
    if (!xnnpack_ready()) {
      ctx.fail("xnn_initialize failed: this CPU is not supported by XNNPACK");
      return Error::DelegateInvalidCompatibility;
    }
    auto* delegate = ctx.allocator->allocate_array<Delegate>(1);
    if (delegate == nullptr) return Error::MemoryAllocationFailed;
    new (delegate) Delegate();
    EMBER_TRY_ASSIGN(const ember_xnn::Graph* graph,
                     verify_graph_blob(ctx, processed->data(), processed->size()));
    EMBER_TRY_ASSIGN(delegate->io, build_subgraph(ctx, *graph));
    const uint32_t n = delegate->io.num_inputs + delegate->io.num_outputs;
    delegate->bindings = ctx.allocator->allocate_array<xnn_external_value>(n + 1);
    if (delegate->bindings == nullptr) {
      xnn_delete_subgraph(delegate->io.subgraph);
      return Error::MemoryAllocationFailed;
    }
    EMBER_TRY_ASSIGN(delegate->runtime, create_runtime(ctx, delegate->io, native_pthreadpool(thread_pool())));
    // XNNPACK allocates its workspace at the first setup: do it here, with
    // placeholder pointers (setup only records them), so execute never
    // allocates. execute binds the real pointers before every invoke.
    for (uint32_t k = 0; k < n; ++k) {
      const bool in = k < delegate->io.num_inputs;
      const ExternalTensor& t =
          in ? delegate->io.inputs[k] : delegate->io.outputs[k - delegate->io.num_inputs];
      delegate->bindings[k] = xnn_external_value{t.xnn_id, delegate};
    }
    if (xnn_setup_runtime(delegate->runtime, n, delegate->bindings) != xnn_status_success) {
      xnn_delete_runtime(delegate->runtime);
      ctx.fail("xnn_setup_runtime failed at init");
      return Error::DelegateInvalidCompatibility;
    }
    const uint32_t nodes = graph->nodes() != nullptr ? graph->nodes()->size() : 0;
    std::snprintf(delegate->invoke_name, sizeof(delegate->invoke_name),
                  "xnn_invoke_runtime (%u nodes)", nodes);
    ctx.events_per_execute = kEventsPerExecute;
    delegate->blob = std::move(*processed);
    return delegate;
  }

  Error execute(BackendExecutionContext& ctx, DelegateHandle* handle,
                std::span<EValue* const> args) const override {
    auto* d = static_cast<Delegate*>(handle);
    const uint32_t n_in = d->io.num_inputs, n_out = d->io.num_outputs;
    if (args.size() != n_in + n_out) {
      ctx.fail("delegate call has %zu arguments; the blob has %u inputs and %u outputs",
               args.size(), n_in, n_out);
      return Error::InvalidArgument;
    }
    // Phase times while profiling (0 otherwise: no clock reads).
    const bool timed = ctx.profiling();
    const uint64_t t_start = timed ? ctx.now_ns() : 0;
    bool converted_in = false;
    for (uint32_t i = 0; i < n_in; ++i) {
      const ExternalTensor& want = d->io.inputs[i];
      const ArgumentLayout layout = check_argument(ctx, want, args[i], "input", i);
      if (layout == ArgumentLayout::kUnreadable) return Error::InvalidArgument;
      const Tensor& t = args[i]->to_tensor();
      void* data = t.data;
      if (layout == ArgumentLayout::kConvert) {
        nchw_to_nhwc(static_cast<const float*>(t.data), want.scratch, want.sizes[0], want.sizes[1],
                     int64_t{want.sizes[2]} * want.sizes[3]);
        data = want.scratch;
        converted_in = true;
      }
      d->bindings[i] = xnn_external_value{want.xnn_id, data};
    }
    for (uint32_t j = 0; j < n_out; ++j) {
      const ExternalTensor& want = d->io.outputs[j];
      const ArgumentLayout layout = check_argument(ctx, want, args[n_in + j], "output", j);
      if (layout == ArgumentLayout::kUnreadable) return Error::InvalidArgument;
      void* data = layout == ArgumentLayout::kConvert ? want.scratch
                                                      : args[n_in + j]->to_tensor().data;
      d->bindings[n_in + j] = xnn_external_value{want.xnn_id, data};
    }
    const uint64_t t_setup = timed ? ctx.now_ns() : 0;
    if (converted_in) ctx.log_event(kEventInputs, t_start, t_setup);
    xnn_status s = xnn_setup_runtime(d->runtime, n_in + n_out, d->bindings);
    const uint64_t t_invoke = timed ? ctx.now_ns() : 0;
    if (s == xnn_status_success) s = xnn_invoke_runtime(d->runtime);
    const uint64_t t_out = timed ? ctx.now_ns() : 0;
    if (s != xnn_status_success) {
      ctx.fail("XNNPACK runtime failed (status %d)", static_cast<int>(s));
      return Error::KernelFailed;
    }
    ctx.log_event(kEventSetup, t_setup, t_invoke);
    ctx.log_event(d->invoke_name, t_invoke, t_out);
    bool converted_out = false;
    for (uint32_t j = 0; j < n_out; ++j) {
      const ExternalTensor& want = d->io.outputs[j];
      const Tensor& t = args[n_in + j]->to_tensor();
      // Checked above: an NCHW output is either contiguous or channels-last.
      if (!want.nchw || !t.is_contiguous_dim_order()) continue;
      nhwc_to_nchw(want.scratch, static_cast<float*>(t.data),
                   want.sizes[0], want.sizes[1], int64_t{want.sizes[2]} * want.sizes[3]);
      converted_out = true;
    }
    if (converted_out) ctx.log_event(kEventOutputs, t_out, ctx.now_ns());
    return Error::Ok;
  }

  void destroy(DelegateHandle* handle) const override {
    auto* d = static_cast<Delegate*>(handle);
    if (d->runtime != nullptr) xnn_delete_runtime(d->runtime);
    d->~Delegate();
  }
};

const XnnpackBackend g_backend;
const BackendRegistration g_registration(kBackendId, &g_backend);

}  // namespace
}  // namespace ember::backends::xnnpack
