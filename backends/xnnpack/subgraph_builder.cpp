// Blob verification and XNNPACK subgraph definition (see subgraph_builder.h).
#include "backends/xnnpack/subgraph_builder.h"

#include <cmath>
#include <cstring>

#include "backends/xnnpack/shape_check.h"
#include "backends/xnnpack/xnnpack_graph_generated.h"

namespace ember::backends::xnnpack {
namespace {

using ember_xnn::NodeKind;

constexpr uint32_t kMaxValues = 1u << 20;  // Bounds every table before allocation.
constexpr uint64_t kMaxElements = uint64_t{1} << 40;

// numel * size, or false when the product passes kMaxElements (checked by
// division first: a wrapped product could look small).
bool grow_numel(uint64_t* numel, uint64_t size) {
  if (size != 0 && *numel > kMaxElements / size) return false;
  *numel *= size;
  return true;
}

const char* status_name(xnn_status s) {
  switch (s) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "uninitialized";
    case xnn_status_invalid_parameter: return "invalid parameter";
    case xnn_status_invalid_state: return "invalid state";
    case xnn_status_unsupported_parameter: return "unsupported parameter";
    case xnn_status_unsupported_hardware: return "unsupported hardware";
    case xnn_status_out_of_memory: return "out of memory";
  }
  return "unknown status";
}

const char* kind_name(NodeKind kind) {
  const char* name = ember_xnn::EnumNameNodeKind(kind);
  return (name != nullptr && name[0] != '\0') ? name : "unknown";
}

// Inputs each node kind takes (bias counted; it may be kNoValue).
int expected_inputs(NodeKind kind) {
  switch (kind) {
    case NodeKind::Convolution2d:
    case NodeKind::DepthwiseConvolution2d:
    case NodeKind::FullyConnected: return 3;
    case NodeKind::Add:
    case NodeKind::Subtract:
    case NodeKind::Multiply:
    case NodeKind::Divide:
    case NodeKind::Maximum:
    case NodeKind::Minimum: return 2;
    case NodeKind::Invalid: return -1;
    default: return 1;
  }
}

// A fixed-size list field of a node: `count` entries, else the default.
template <typename T>
bool read_list(const flatbuffers::Vector<T>* v, uint32_t count, T* out) {
  if (v == nullptr || v->size() != count) return false;
  for (uint32_t i = 0; i < count; ++i) out[i] = v->Get(i);
  return true;
}

struct Builder {
  BackendInitContext& ctx;
  const ember_xnn::Graph& graph;
  xnn_subgraph_t subgraph = nullptr;
  uint32_t* xnn_ids = nullptr;  // blob value index -> XNNPACK id
  uint8_t* defined = nullptr;   // value is an input, a constant or an earlier output

  uint32_t num_values() const { return graph.values()->size(); }

  // The XNNPACK id of an operand, or false (with the reason) when bad.
  bool operand(uint32_t node, uint32_t value, bool optional, uint32_t* id) {
    if (value == kNoValue && optional) {
      *id = XNN_INVALID_VALUE_ID;
      return true;
    }
    if (value >= num_values()) {
      ctx.fail("node %u (%s) uses value %u; the graph has %u values", node,
               kind_name(graph.nodes()->Get(node)->kind()), value, num_values());
      return false;
    }
    *id = xnn_ids[value];
    return true;
  }

  Error define_values(const BuiltSubgraph& built) {
    const auto* values = graph.values();
    const auto* constants = graph.constants();
    const uint32_t num_constants = constants ? constants->size() : 0;
    for (uint32_t i = 0; i < values->size(); ++i) xnn_ids[i] = kNoValue;
    // External values first, at the ids the delegate binds them to.
    for (uint32_t k = 0; k < built.num_inputs + built.num_outputs; ++k) {
      const bool is_input = k < built.num_inputs;
      const auto* ext = is_input ? graph.inputs()->Get(k) : graph.outputs()->Get(k - built.num_inputs);
      // build_subgraph checked the id is in range.
      if (xnn_ids[ext->value()] != kNoValue) {
        ctx.fail("value %u is a delegate argument twice", ext->value());
        return Error::DelegateInvalidCompatibility;
      }
      xnn_ids[ext->value()] = k;
    }
    for (uint32_t i = 0; i < values->size(); ++i) {
      const auto* value = values->Get(i);
      const auto* dims = value->dims();
      const uint32_t rank = dims ? dims->size() : 0;
      if (rank > XNN_MAX_TENSOR_DIMS) {
        ctx.fail("value %u has rank %u; XNNPACK takes at most %d dims", i, rank,
                 XNN_MAX_TENSOR_DIMS);
        return Error::DelegateInvalidCompatibility;
      }
      size_t sizes[XNN_MAX_TENSOR_DIMS] = {};
      uint64_t numel = 1;
      for (uint32_t d = 0; d < rank; ++d) {
        sizes[d] = dims->Get(d);
        if (!grow_numel(&numel, sizes[d])) {
          ctx.fail("value %u has more than 2^40 elements", i);
          return Error::DelegateInvalidCompatibility;
        }
      }
      const void* data = nullptr;
      if (value->constant() >= 0) {
        const auto c = static_cast<uint32_t>(value->constant());
        if (c >= num_constants || constants->Get(c)->data() == nullptr) {
          ctx.fail("value %u names constant %d; the graph has %u constants", i,
                   value->constant(), num_constants);
          return Error::DelegateInvalidCompatibility;
        }
        const auto* bytes = constants->Get(c)->data();
        if (bytes->size() != numel * sizeof(float)) {
          ctx.fail("constant of value %u has %u bytes; its dims need %llu", i, bytes->size(),
                   static_cast<unsigned long long>(numel * sizeof(float)));
          return Error::DelegateInvalidCompatibility;
        }
        if (xnn_ids[i] != kNoValue) {
          ctx.fail("value %u is both constant and a delegate argument", i);
          return Error::DelegateInvalidCompatibility;
        }
        data = bytes->data();
      }
      uint32_t flags = 0;
      uint32_t external_id = XNN_INVALID_VALUE_ID;
      if (xnn_ids[i] != kNoValue) {
        external_id = xnn_ids[i];
        flags = external_id < built.num_inputs ? XNN_VALUE_FLAG_EXTERNAL_INPUT
                                               : XNN_VALUE_FLAG_EXTERNAL_OUTPUT;
      }
      uint32_t id = 0;
      const xnn_status s = xnn_define_tensor_value(subgraph, xnn_datatype_fp32, rank, sizes, data,
                                                   external_id, flags, &id);
      if (s != xnn_status_success) {
        ctx.fail("XNNPACK refused value %u: %s", i, status_name(s));
        return Error::DelegateInvalidCompatibility;
      }
      xnn_ids[i] = id;
      defined[i] = (data != nullptr || (flags & XNN_VALUE_FLAG_EXTERNAL_INPUT) != 0) ? 1 : 0;
    }
    return Error::Ok;
  }

  Error define_node(uint32_t index) {
    const auto* node = graph.nodes()->Get(index);
    const NodeKind kind = node->kind();
    const int want = expected_inputs(kind);
    const uint32_t n_in = node->inputs() ? node->inputs()->size() : 0;
    const uint32_t n_out = node->outputs() ? node->outputs()->size() : 0;
    if (want < 0 || kind > NodeKind::MAX) {
      ctx.fail("node %u has unknown kind %u", index, static_cast<unsigned>(kind));
      return Error::DelegateInvalidCompatibility;
    }
    if (n_in != static_cast<uint32_t>(want) || n_out != 1) {
      ctx.fail("node %u (%s) has %u inputs and %u outputs; expected %d and 1", index,
               kind_name(kind), n_in, n_out, want);
      return Error::DelegateInvalidCompatibility;
    }
    uint32_t in[3] = {XNN_INVALID_VALUE_ID, XNN_INVALID_VALUE_ID, XNN_INVALID_VALUE_ID};
    for (uint32_t k = 0; k < n_in; ++k) {
      // Only the bias (third input of conv / fully connected) is optional.
      if (!operand(index, node->inputs()->Get(k), k == 2, &in[k])) {
        return Error::DelegateInvalidCompatibility;
      }
    }
    uint32_t out = 0;
    if (!operand(index, node->outputs()->Get(0), false, &out)) {
      return Error::DelegateInvalidCompatibility;
    }
    uint32_t pad[4] = {0, 0, 0, 0}, pool[2] = {1, 1}, stride[2] = {1, 1}, dil[2] = {1, 1};
    const bool windowed = kind == NodeKind::Convolution2d ||
                          kind == NodeKind::DepthwiseConvolution2d ||
                          kind == NodeKind::MaxPooling2d || kind == NodeKind::AveragePooling2d;
    if (windowed && (!read_list(node->padding(), 4, pad) || !read_list(node->pooling(), 2, pool) ||
                     !read_list(node->stride(), 2, stride) ||
                     !read_list(node->dilation(), 2, dil))) {
      ctx.fail("node %u (%s) needs padding[4], pooling[2], stride[2] and dilation[2]", index,
               kind_name(kind));
      return Error::DelegateInvalidCompatibility;
    }
    const float lo = node->output_min(), hi = node->output_max();
    if (std::isnan(lo) || std::isnan(hi) || lo > hi) {
      ctx.fail("node %u (%s) has output range [%g, %g]", index, kind_name(kind), lo, hi);
      return Error::DelegateInvalidCompatibility;
    }
    EMBER_TRY(check_node_shapes(ctx, graph, index, defined));
    const auto* values = graph.values();
    auto dims_of = [&](uint32_t k) { return values->Get(node->inputs()->Get(k))->dims(); };
    xnn_status s = xnn_status_invalid_parameter;
    switch (kind) {
      case NodeKind::Convolution2d: {
        // Filter [O, kh, kw, I/groups]: channels come from its dims.
        const auto* f = dims_of(1);
        const uint32_t groups = node->groups();
        if (f == nullptr || f->size() != 4 || groups == 0 || f->Get(0) % groups != 0) {
          ctx.fail("node %u (Convolution2d): filter must be [O, kh, kw, I/groups] with O a "
                   "multiple of groups (%u)", index, groups);
          return Error::DelegateInvalidCompatibility;
        }
        s = xnn_define_convolution_2d(subgraph, pad[0], pad[1], pad[2], pad[3], pool[0], pool[1],
                                      stride[0], stride[1], dil[0], dil[1], groups, f->Get(3),
                                      f->Get(0) / groups, lo, hi, in[0], in[1], in[2], out,
                                      node->flags());
        break;
      }
      case NodeKind::DepthwiseConvolution2d: {
        const auto* f = dims_of(1);
        const uint32_t m = node->depth_multiplier();
        if (f == nullptr || f->size() != 4 || m == 0 || f->Get(3) % m != 0) {
          ctx.fail("node %u (DepthwiseConvolution2d): filter must be [1, kh, kw, C*multiplier]",
                   index);
          return Error::DelegateInvalidCompatibility;
        }
        s = xnn_define_depthwise_convolution_2d(subgraph, pad[0], pad[1], pad[2], pad[3], pool[0],
                                                pool[1], stride[0], stride[1], dil[0], dil[1], m,
                                                f->Get(3) / m, lo, hi, in[0], in[1], in[2], out,
                                                node->flags());
        break;
      }
      case NodeKind::FullyConnected:
        s = xnn_define_fully_connected(subgraph, lo, hi, in[0], in[1], in[2], out, node->flags());
        break;
      case NodeKind::Add: s = xnn_define_add2(subgraph, lo, hi, in[0], in[1], out, 0); break;
      case NodeKind::Subtract:
        s = xnn_define_subtract(subgraph, lo, hi, in[0], in[1], out, 0);
        break;
      case NodeKind::Multiply:
        s = xnn_define_multiply2(subgraph, lo, hi, in[0], in[1], out, 0);
        break;
      case NodeKind::Divide: s = xnn_define_divide(subgraph, lo, hi, in[0], in[1], out, 0); break;
      case NodeKind::Maximum: s = xnn_define_maximum2(subgraph, in[0], in[1], out, 0); break;
      case NodeKind::Minimum: s = xnn_define_minimum2(subgraph, in[0], in[1], out, 0); break;
      case NodeKind::Clamp: s = xnn_define_clamp(subgraph, lo, hi, in[0], out, 0); break;
      case NodeKind::Hardswish: s = xnn_define_hardswish(subgraph, in[0], out, 0); break;
      case NodeKind::Sigmoid: s = xnn_define_sigmoid(subgraph, in[0], out, 0); break;
      case NodeKind::Softmax: s = xnn_define_softmax(subgraph, in[0], out, 0); break;
      case NodeKind::Abs: s = xnn_define_abs(subgraph, in[0], out, 0); break;
      case NodeKind::Negate: s = xnn_define_negate(subgraph, in[0], out, 0); break;
      case NodeKind::Floor: s = xnn_define_floor(subgraph, in[0], out, 0); break;
      case NodeKind::Ceiling: s = xnn_define_ceiling(subgraph, in[0], out, 0); break;
      case NodeKind::Square: s = xnn_define_square(subgraph, in[0], out, 0); break;
      case NodeKind::SquareRoot: s = xnn_define_square_root(subgraph, in[0], out, 0); break;
      case NodeKind::Elu: s = xnn_define_elu(subgraph, node->alpha(), in[0], out, 0); break;
      case NodeKind::LeakyRelu:
        s = xnn_define_leaky_relu(subgraph, node->alpha(), in[0], out, 0);
        break;
      case NodeKind::MaxPooling2d:
        s = xnn_define_max_pooling_2d(subgraph, pad[0], pad[1], pad[2], pad[3], pool[0], pool[1],
                                      stride[0], stride[1], dil[0], dil[1], lo, hi, in[0], out, 0);
        break;
      case NodeKind::AveragePooling2d:
        s = xnn_define_average_pooling_2d(subgraph, pad[0], pad[1], pad[2], pad[3], pool[0],
                                          pool[1], stride[0], stride[1], lo, hi, in[0], out, 0);
        break;
      case NodeKind::GlobalAveragePooling2d:
        s = xnn_define_global_average_pooling_2d(subgraph, lo, hi, in[0], out, 0);
        break;
      case NodeKind::StaticConstantPad: {
        const auto* in_dims = dims_of(0);
        const uint32_t rank = in_dims ? in_dims->size() : 0;
        size_t pre[XNN_MAX_TENSOR_DIMS] = {}, post[XNN_MAX_TENSOR_DIMS] = {};
        const auto* a = node->pre_paddings();
        const auto* b = node->post_paddings();
        if (a == nullptr || b == nullptr || a->size() != rank || b->size() != rank) {
          ctx.fail("node %u (StaticConstantPad) needs %u pre and post paddings", index, rank);
          return Error::DelegateInvalidCompatibility;
        }
        for (uint32_t d = 0; d < rank; ++d) {
          pre[d] = a->Get(d);
          post[d] = b->Get(d);
        }
        s = xnn_define_static_constant_pad(subgraph, pre, post, node->padding_value(), in[0], out,
                                           0);
        break;
      }
      case NodeKind::StaticReshape: {
        const auto* shape = node->new_shape();
        const uint32_t rank = shape ? shape->size() : 0;
        if (rank > XNN_MAX_TENSOR_DIMS) {
          ctx.fail("node %u (StaticReshape) has a %u-dim shape", index, rank);
          return Error::DelegateInvalidCompatibility;
        }
        size_t dims[XNN_MAX_TENSOR_DIMS] = {};
        for (uint32_t d = 0; d < rank; ++d) dims[d] = shape->Get(d);
        s = xnn_define_static_reshape(subgraph, rank, dims, in[0], out, 0);
        break;
      }
      case NodeKind::StaticResizeBilinear2d: {
        uint32_t size[2] = {0, 0};
        if (!read_list(node->pooling(), 2, size)) {
          ctx.fail("node %u (StaticResizeBilinear2d) needs the new height and width", index);
          return Error::DelegateInvalidCompatibility;
        }
        s = xnn_define_static_resize_bilinear_2d(subgraph, size[0], size[1], in[0], out,
                                                 node->flags());
        break;
      }
      case NodeKind::Invalid: break;
    }
    if (s != xnn_status_success) {
      ctx.fail("XNNPACK refused node %u (%s): %s", index, kind_name(kind), status_name(s));
      return Error::DelegateInvalidCompatibility;
    }
    return Error::Ok;
  }
};

}  // namespace

Result<const ember_xnn::Graph*> verify_graph_blob(BackendInitContext& ctx, const void* blob,
                                                  size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(blob);
  if (size < 8 || !ember_xnn::GraphBufferHasIdentifier(bytes)) {
    ctx.fail("blob is not an Ember XNNPACK graph (no 'EXN1' identifier, %zu bytes)", size);
    return Error::DelegateInvalidCompatibility;
  }
  if (reinterpret_cast<uintptr_t>(bytes) % alignof(uint64_t) != 0) {
    ctx.fail("blob at %p is not 8-byte aligned", blob);
    return Error::DelegateInvalidCompatibility;
  }
  flatbuffers::Verifier::Options options;
  options.max_tables = 1u << 22;
  flatbuffers::Verifier verifier(bytes, size, options);
  if (!ember_xnn::VerifyGraphBuffer(verifier)) {
    ctx.fail("blob fails FlatBuffer verification (%zu bytes)", size);
    return Error::DelegateInvalidCompatibility;
  }
  const ember_xnn::Graph* graph = ember_xnn::GetGraph(bytes);
  if (graph->version() != 1) {
    ctx.fail("blob version %u is not supported (expected 1)", graph->version());
    return Error::DelegateInvalidCompatibility;
  }
  if (graph->values() == nullptr || graph->nodes() == nullptr || graph->inputs() == nullptr ||
      graph->outputs() == nullptr) {
    ctx.fail("blob lacks values, nodes, inputs or outputs");
    return Error::DelegateInvalidCompatibility;
  }
  if (graph->values()->size() > kMaxValues || graph->nodes()->size() > kMaxValues ||
      graph->inputs()->size() + graph->outputs()->size() > graph->values()->size()) {
    ctx.fail("blob has %u values, %u nodes, %u inputs, %u outputs: out of bounds",
             graph->values()->size(), graph->nodes()->size(), graph->inputs()->size(),
             graph->outputs()->size());
    return Error::DelegateInvalidCompatibility;
  }
  return graph;
}

Result<BuiltSubgraph> build_subgraph(BackendInitContext& ctx, const ember_xnn::Graph& graph) {
  BuiltSubgraph built;
  built.num_inputs = graph.inputs()->size();
  built.num_outputs = graph.outputs()->size();
  MemoryAllocator* alloc = ctx.allocator;
  built.inputs = alloc->allocate_array<ExternalTensor>(built.num_inputs + 1);
  built.outputs = alloc->allocate_array<ExternalTensor>(built.num_outputs + 1);
  auto* ids = alloc->allocate_array<uint32_t>(graph.values()->size() + 1);
  auto* defined = alloc->allocate_array<uint8_t>(graph.values()->size() + 1);
  if (built.inputs == nullptr || built.outputs == nullptr || ids == nullptr || defined == nullptr) {
    return Error::MemoryAllocationFailed;
  }
  // External tensors: shapes in program order; NHWC staging for NCHW ones.
  // Allocated before XNNPACK does any work, so a too-small allocator fails cheaply.
  for (uint32_t k = 0; k < built.num_inputs + built.num_outputs; ++k) {
    const bool is_input = k < built.num_inputs;
    const auto* ext = is_input ? graph.inputs()->Get(k) : graph.outputs()->Get(k - built.num_inputs);
    ExternalTensor& t = *new (is_input ? &built.inputs[k] : &built.outputs[k - built.num_inputs])
                            ExternalTensor();
    t.xnn_id = k;
    if (ext->value() >= graph.values()->size()) {
      ctx.fail("%s %u names value %u; the graph has %u values", is_input ? "input" : "output", k,
               ext->value(), graph.values()->size());
      return Error::DelegateInvalidCompatibility;
    }
    const auto* dims = graph.values()->Get(ext->value())->dims();
    t.rank = dims ? static_cast<int32_t>(dims->size()) : 0;
    if (t.rank > XNN_MAX_TENSOR_DIMS || (ext->nchw() && t.rank != 4)) {
      ctx.fail("%s %u has rank %d%s", is_input ? "input" : "output", k, t.rank,
               ext->nchw() ? "; only rank-4 values convert between NCHW and NHWC" : "");
      return Error::DelegateInvalidCompatibility;
    }
    uint64_t numel = 1;
    for (int32_t d = 0; d < t.rank; ++d) {
      const uint32_t size = dims->Get(static_cast<uint32_t>(d));
      if (size > 0x7FFFFFFFu) {
        ctx.fail("%s %u has dim %d of size %u", is_input ? "input" : "output", k, d, size);
        return Error::DelegateInvalidCompatibility;
      }
      t.sizes[d] = static_cast<int32_t>(size);
      if (!grow_numel(&numel, size)) {
        ctx.fail("%s %u has more than 2^40 elements", is_input ? "input" : "output", k);
        return Error::DelegateInvalidCompatibility;
      }
    }
    t.numel = static_cast<size_t>(numel);
    if (ext->nchw()) {
      t.nchw = true;
      // The program sees [N, C, H, W]; XNNPACK's dims are [N, H, W, C].
      const int32_t nhwc[4] = {t.sizes[0], t.sizes[1], t.sizes[2], t.sizes[3]};
      t.sizes[1] = nhwc[3];
      t.sizes[2] = nhwc[1];
      t.sizes[3] = nhwc[2];
      t.scratch = alloc->allocate_array<float>(t.numel > 0 ? t.numel : 1);
      if (t.scratch == nullptr) return Error::MemoryAllocationFailed;
    }
  }

  Builder b{ctx, graph};
  b.xnn_ids = ids;
  b.defined = defined;
  const xnn_status s =
      xnn_create_subgraph(built.num_inputs + built.num_outputs, /*flags=*/0, &b.subgraph);
  if (s != xnn_status_success) {
    ctx.fail("xnn_create_subgraph failed: %s", status_name(s));
    return Error::DelegateInvalidCompatibility;
  }
  Error err = b.define_values(built);
  for (uint32_t i = 0; err == Error::Ok && i < graph.nodes()->size(); ++i) {
    err = b.define_node(i);
  }
  for (uint32_t k = 0; err == Error::Ok && k < built.num_outputs; ++k) {
    const uint32_t v = graph.outputs()->Get(k)->value();
    if (!defined[v]) {
      ctx.fail("output %u (value %u) is not computed by any node", k, v);
      err = Error::DelegateInvalidCompatibility;
    }
  }
  if (err != Error::Ok) {
    xnn_delete_subgraph(b.subgraph);
    return err;
  }
  built.subgraph = b.subgraph;
  return built;
}

}  // namespace ember::backends::xnnpack
