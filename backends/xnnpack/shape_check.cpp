#include "backends/xnnpack/shape_check.h"

#include <xnnpack.h>

#include <cstdio>

#include "backends/xnnpack/xnnpack_graph_generated.h"

namespace ember::backends::xnnpack {
namespace {

using ember_xnn::NodeKind;
constexpr uint32_t kNoValue = 0xFFFFFFFFu;
constexpr uint64_t kMaxWindow = 1u << 16;  // kernel, stride, dilation bounds

struct Dims {
  uint32_t rank = 0;
  uint64_t d[8] = {};
  bool operator==(const Dims& o) const {
    if (rank != o.rank) return false;
    for (uint32_t i = 0; i < rank; ++i) {
      if (d[i] != o.d[i]) return false;
    }
    return true;
  }
};

Dims dims_of(const ember_xnn::Graph& g, uint32_t value) {
  Dims out;
  const auto* v = g.values()->Get(value)->dims();
  out.rank = v ? v->size() : 0;
  if (out.rank > 6) out.rank = 6;  // the builder refuses rank > 6 anyway
  for (uint32_t i = 0; i < out.rank; ++i) out.d[i] = v->Get(i);
  return out;
}

void format(const Dims& d, char* buf, size_t n) {
  size_t at = static_cast<size_t>(snprintf(buf, n, "["));
  for (uint32_t i = 0; i < d.rank && at < n; ++i) {
    at += static_cast<size_t>(
        snprintf(buf + at, n - at, i ? ", %llu" : "%llu", static_cast<unsigned long long>(d.d[i])));
  }
  if (at < n) snprintf(buf + at, n - at, "]");
}

uint32_t list_at(const flatbuffers::Vector<uint32_t>* v, uint32_t i, uint32_t fallback) {
  return v != nullptr && i < v->size() ? v->Get(i) : fallback;
}

// Output extent of a window op; 0 when the window does not fit.
uint64_t window_out(uint64_t in, uint64_t pad, uint64_t kernel, uint64_t stride, uint64_t dil) {
  const uint64_t span = dil * (kernel - 1) + 1;
  if (in + pad < span) return 0;
  return (in + pad - span) / stride + 1;
}

}  // namespace

Error check_node_shapes(BackendInitContext& ctx, const ember_xnn::Graph& g, uint32_t index,
                        uint8_t* defined) {
  const auto* node = g.nodes()->Get(index);
  const NodeKind kind = node->kind();
  const char* name = ember_xnn::EnumNameNodeKind(kind);
  const auto* ins = node->inputs();
  const uint32_t out_id = node->outputs()->Get(0);
  for (uint32_t k = 0; k < ins->size(); ++k) {
    const uint32_t v = ins->Get(k);
    if (v != kNoValue && !defined[v]) {
      ctx.fail("node %u (%s) reads value %u before anything defines it", index, name, v);
      return Error::DelegateInvalidCompatibility;
    }
  }
  if (defined[out_id]) {
    ctx.fail("node %u (%s) writes value %u, which is already defined", index, name, out_id);
    return Error::DelegateInvalidCompatibility;
  }
  const Dims x = dims_of(g, ins->Get(0));
  const Dims out = dims_of(g, out_id);
  Dims want = x;  // elementwise default
  bool ok = true;
  switch (kind) {
    case NodeKind::Convolution2d:
    case NodeKind::DepthwiseConvolution2d:
    case NodeKind::MaxPooling2d:
    case NodeKind::AveragePooling2d: {
      const uint64_t kh = list_at(node->pooling(), 0, 0), kw = list_at(node->pooling(), 1, 0);
      const uint64_t sh = list_at(node->stride(), 0, 0), sw = list_at(node->stride(), 1, 0);
      const uint64_t dh = list_at(node->dilation(), 0, 0), dw = list_at(node->dilation(), 1, 0);
      const uint64_t pad_h = uint64_t{list_at(node->padding(), 0, 0)} + list_at(node->padding(), 2, 0);
      const uint64_t pad_w = uint64_t{list_at(node->padding(), 1, 0)} + list_at(node->padding(), 3, 0);
      for (uint64_t p : {kh, kw, sh, sw, dh, dw}) ok = ok && p >= 1 && p <= kMaxWindow;
      ok = ok && x.rank == 4;
      if (!ok) break;
      want.d[1] = window_out(x.d[1], pad_h, kh, sh, dh);
      want.d[2] = window_out(x.d[2], pad_w, kw, sw, dw);
      ok = want.d[1] > 0 && want.d[2] > 0;
      if (kind == NodeKind::Convolution2d || kind == NodeKind::DepthwiseConvolution2d) {
        const Dims f = dims_of(g, ins->Get(1));
        ok = ok && f.rank == 4 && f.d[1] == kh && f.d[2] == kw;
        if (!ok) break;
        if (kind == NodeKind::Convolution2d) {
          const uint64_t groups = node->groups();
          ok = groups >= 1 && x.d[3] == groups * f.d[3] && f.d[0] % groups == 0;
          want.d[3] = f.d[0];
        } else {
          const uint64_t m = node->depth_multiplier();
          ok = m >= 1 && f.d[0] == 1 && f.d[3] == x.d[3] * m;
          want.d[3] = f.d[3];
        }
        if (ins->Get(2) != kNoValue) {
          const Dims b = dims_of(g, ins->Get(2));
          ok = ok && b.rank == 1 && b.d[0] == want.d[3];
        }
      }
      break;
    }
    case NodeKind::FullyConnected: {
      const Dims f = dims_of(g, ins->Get(1));
      const bool transposed = (node->flags() & XNN_FLAG_TRANSPOSE_WEIGHTS) != 0;
      ok = x.rank >= 1 && f.rank == 2 && x.d[x.rank - 1] == f.d[transposed ? 0 : 1] &&
           (node->flags() & ~uint32_t{XNN_FLAG_TRANSPOSE_WEIGHTS}) == 0;
      if (!ok) break;
      want.d[x.rank - 1] = f.d[transposed ? 1 : 0];
      if (ins->Get(2) != kNoValue) {
        const Dims b = dims_of(g, ins->Get(2));
        ok = b.rank == 1 && b.d[0] == want.d[x.rank - 1];
      }
      break;
    }
    case NodeKind::Add:
    case NodeKind::Subtract:
    case NodeKind::Multiply:
    case NodeKind::Divide:
    case NodeKind::Maximum:
    case NodeKind::Minimum: {
      const Dims y = dims_of(g, ins->Get(1));
      want.rank = x.rank > y.rank ? x.rank : y.rank;
      for (uint32_t i = 0; i < want.rank && ok; ++i) {
        const uint64_t a = i < want.rank - x.rank ? 1 : x.d[i - (want.rank - x.rank)];
        const uint64_t b = i < want.rank - y.rank ? 1 : y.d[i - (want.rank - y.rank)];
        ok = a == b || a == 1 || b == 1;
        want.d[i] = a == 1 ? b : a;
      }
      break;
    }
    case NodeKind::GlobalAveragePooling2d:
      ok = x.rank == 4;
      want.d[1] = want.d[2] = 1;
      break;
    case NodeKind::StaticConstantPad: {
      ok = node->pre_paddings() && node->post_paddings() &&
           node->pre_paddings()->size() == x.rank && node->post_paddings()->size() == x.rank;
      for (uint32_t i = 0; ok && i < x.rank; ++i) {
        want.d[i] = x.d[i] + node->pre_paddings()->Get(i) + node->post_paddings()->Get(i);
      }
      break;
    }
    case NodeKind::StaticReshape: {
      const auto* shape = node->new_shape();
      want.rank = shape ? shape->size() : 0;
      ok = want.rank <= 6;
      uint64_t a = 1, b = 1;
      for (uint32_t i = 0; ok && i < want.rank; ++i) want.d[i] = shape->Get(i);
      for (uint32_t i = 0; ok && i < x.rank; ++i) a *= x.d[i];
      for (uint32_t i = 0; ok && i < want.rank; ++i) b *= want.d[i];
      ok = ok && a == b;  // both bounded by the builder's 2^40 elements
      break;
    }
    case NodeKind::StaticResizeBilinear2d:
      ok = x.rank == 4 && list_at(node->pooling(), 0, 0) >= 1 && list_at(node->pooling(), 1, 0) >= 1;
      want.d[1] = list_at(node->pooling(), 0, 0);
      want.d[2] = list_at(node->pooling(), 1, 0);
      break;
    default:
      break;  // unary ops: same dims
  }
  if (!ok || !(want == out)) {
    char in_buf[96], out_buf[96];
    format(x, in_buf, sizeof(in_buf));
    format(out, out_buf, sizeof(out_buf));
    ctx.fail("node %u (%s): input %s and its parameters do not give the declared output %s",
             index, name, in_buf, out_buf);
    return Error::DelegateInvalidCompatibility;
  }
  defined[out_id] = 1;
  return Error::Ok;
}

}  // namespace ember::backends::xnnpack
