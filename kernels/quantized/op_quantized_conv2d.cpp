// ember_quantized::conv2d.out(Tensor input, float input_scale, int input_zero_point,
//     Tensor weight, Tensor weight_scales, Tensor? bias, int[] stride, int[] padding,
//     int[] dilation, int groups, float output_scale, int output_zero_point,
//     int output_min, int output_max, *, Tensor(a!) out) -> Tensor(a!)
//
// What ember.exir.passes.fuse_quantized_ops makes of pt2e's
//   quantize([relu|hardtanh](convolution(dequantize(x), dequantize(w), dequantize(bias))))
// for 2-d convolutions: input int8 NCHW with (input_scale, input_zero_point),
// weight int8 [C_out, C_in/groups, kh, kw] symmetric with one scale per output
// channel, bias float32 [C_out]; out int8 NCHW, requantised as in
// op_quantized_linear.cpp (padding reads the input's zero point, i.e. 0).
//
// An ungrouped convolution other than 1×1 stride 1 is an implicit GEMM over a
// padded, channel-grouped copy of the input (qconv_implicit.h): no im2col.
// Otherwise each group is a GEMM of its packed weights (C_out/groups ×
// C_in/groups·kh·kw) with the input's windows, packed per call straight from
// NCHW (qgemm.h); a 1×1 stride-1 unpadded convolution reads its rows in place.
// Depthwise convolutions (one input channel per group) run a direct loop per
// channel plane instead (qdepthwise.h), with the weights rearranged at
// prepare: a GEMM with one row per group would waste the tile.
#include <cstring>

#include "kernels/generated/functions/quantized/op_quantized_conv2d.h"
#include "kernels/portable/util/args.h"
#include "kernels/quantized/util/qconv_implicit.h"
#include "kernels/quantized/util/qdepthwise.h"
#include "kernels/quantized/util/qdepthwise_blocked.h"
#include "kernels/quantized/util/qgemm.h"
#include "kernels/quantized/util/qlinear_params.h"

namespace ember::kernels::quantized {
namespace {

using portable::resize_out;

struct Conv2dState {
  QChannelFactors f;
  QPackedWeights* groups = nullptr;  // Null for depthwise.
  bool implicit = false;             // groups[0] packed for qconv_run.
  bool depthwise = false;
  QDepthwiseWeights dw_weights;  // Depthwise: the weights in the plane loop's pairs.
  // Depthwise read in place (qdepthwise_reads_in_place): the masks of the
  // prepared input size; another size at execute takes the phase planes.
  const uint32_t* dw_masks = nullptr;
  int64_t dw_ih = 0, dw_iw = 0;
  // Depthwise on small planes, 16 channels at a time (qdepthwise_blocked.h).
  const float* dw_blocked = nullptr;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t pb, pr;  // Bottom and right padding (padding with 4 values; else ph, pw).
};

// padding: [p], [top/bottom, left/right] or [top, left, bottom, right].
bool padding4(IntSpan v, int64_t* t, int64_t* l, int64_t* b, int64_t* r) {
  if (v.size() == 4) {
    *t = v[0];
    *l = v[1];
    *b = v[2];
    *r = v[3];
    return true;
  }
  if (v.size() == 1) {
    *t = *l = *b = *r = v[0];
    return true;
  }
  if (v.size() != 2) return false;
  *t = *b = v[0];
  *l = *r = v[1];
  return true;
}

bool pair(IntSpan v, int64_t* a, int64_t* b) {
  if (v.size() == 1) {
    *a = *b = v[0];
    return true;
  }
  if (v.size() != 2) return false;
  *a = v[0];
  *b = v[1];
  return true;
}

int64_t out_extent(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1, int64_t d) {
  return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

QDepthwiseGeometry depthwise_geometry(const Conv2dState& st, int64_t ih, int64_t iw, int64_t kh,
                                      int64_t kw, int64_t oh, int64_t ow) {
  return {ih, iw, kh, kw, oh, ow, st.sh, st.sw, st.ph, st.pw, st.dh, st.dw, st.pb, st.pr};
}

QConvGeometry implicit_geometry(const Conv2dState& st, int64_t cin, int64_t ih, int64_t iw,
                                int64_t kh, int64_t kw, int64_t oh, int64_t ow) {
  return {cin, ih, iw, kh, kw, oh, ow, st.sh, st.sw, st.ph, st.pw, st.dh, st.dw};
}

size_t round64(size_t n) { return (n + 63) / 64 * 64; }

// One task's depthwise scratch: a plane's, or a block's of 16 channels.
size_t depthwise_task_bytes(const QDepthwiseGeometry& g, bool blocked) {
  const size_t plane = round64(qdepthwise_scratch_bytes(g));
  const size_t block = blocked ? round64(qdepthwise_blocked_scratch_bytes(g)) : 0;
  return plane > block ? plane : block;
}

// Depthwise scratch: the tap offsets every task reads, then one task's
// scratch per task.
size_t depthwise_scratch_bytes(const QDepthwiseGeometry& g, bool blocked, size_t tasks) {
  return round64(static_cast<size_t>(qdepthwise_offset_count(g)) * sizeof(int64_t)) +
         depthwise_task_bytes(g, blocked) * tasks;
}

}  // namespace

Error conv2d_out_prepare(KernelPrepareContext& ctx, const Tensor& input, double input_scale,
                         int64_t input_zero_point, const Tensor& weight,
                         const Tensor& weight_scales, const Tensor* bias, IntSpan stride,
                         IntSpan padding, IntSpan dilation, int64_t groups, double output_scale,
                         int64_t output_zero_point, int64_t output_min, int64_t output_max,
                         Tensor& out) {
  if (Error e = check_static_qargs(ctx, input, "input", input_scale, input_zero_point, out,
                                   output_scale, output_zero_point, output_min, output_max);
      e != Error::Ok) {
    return e;
  }
  if (input.dim != 4 || out.dim != 4) {
    return ctx.fail(Error::InvalidProgram, "input and out must be 4-d (NCHW), got %d-d and %d-d",
                    static_cast<int>(input.dim), static_cast<int>(out.dim));
  }
  if (!input.is_contiguous_dim_order() || !out.is_contiguous_dim_order()) {
    return ctx.fail(Error::InvalidProgram, "input and out must have contiguous (NCHW) dim "
                    "order");
  }
  auto* st = ctx.allocate_state<Conv2dState>();
  if (st == nullptr) return ctx.failure();
  if (!pair(stride, &st->sh, &st->sw) || !padding4(padding, &st->ph, &st->pw, &st->pb, &st->pr) ||
      !pair(dilation, &st->dh, &st->dw) || st->sh < 1 || st->sw < 1 || st->ph < 0 ||
      st->pw < 0 || st->pb < 0 || st->pr < 0 || st->dh < 1 || st->dw < 1) {
    return ctx.fail(Error::InvalidProgram, "stride and dilation must have 1 or 2 values "
                    "(>= 1), padding 1, 2 or 4 ([top, left, bottom, right]; >= 0)");
  }
  if (Error e = prepare_channel_factors(ctx, weight, 4, weight_scales, bias, input_scale,
                                        output_scale, &st->f);
      e != Error::Ok) {
    return e;
  }
  const int64_t c_out = weight.sizes[0], cpg = weight.sizes[1];
  const int64_t kh = weight.sizes[2], kw = weight.sizes[3];
  if (groups < 1 || c_out % groups != 0 || input.sizes[1] != cpg * groups) {
    return ctx.fail(Error::InvalidProgram, "groups %lld must divide the %lld output "
                    "channels, and the input's %d channels must be %lld per group",
                    static_cast<long long>(groups), static_cast<long long>(c_out),
                    static_cast<int>(input.sizes[1]), static_cast<long long>(cpg));
  }
  const int64_t oh = out_extent(input.sizes[2], kh, st->sh, st->ph, st->pb, st->dh);
  const int64_t ow = out_extent(input.sizes[3], kw, st->sw, st->pw, st->pr, st->dw);
  if (oh < 1 || ow < 1) {
    return ctx.fail(Error::InvalidProgram, "the kernel %lldx%lld (dilated) does not fit the "
                    "padded input %dx%d", static_cast<long long>(kh),
                    static_cast<long long>(kw), static_cast<int>(input.sizes[2]),
                    static_cast<int>(input.sizes[3]));
  }
  if (cpg == 1 && c_out == groups) {
    st->depthwise = true;
    void* memory = ctx.allocate(qdepthwise_weights_bytes(c_out, kh * kw));
    if (memory == nullptr) return ctx.failure();
    st->dw_weights = qdepthwise_weights(weight.data_ptr<const int8_t>(), c_out, kh * kw,
                                        static_cast<int32_t>(input_zero_point), memory);
    const QDepthwiseGeometry g =
        depthwise_geometry(*st, input.sizes[2], input.sizes[3], kh, kw, oh, ow);
    const bool blocked = qdepthwise_blocked_applies(g, c_out);
    if (blocked) {
      void* bw = ctx.allocate(qdepthwise_blocked_weights_bytes(c_out, kh * kw));
      if (bw == nullptr) return ctx.failure();
      st->dw_blocked = qdepthwise_blocked_weights(weight.data_ptr<const int8_t>(), c_out, kh * kw, bw);
    }
    ctx.reserve_scratch(depthwise_scratch_bytes(g, blocked, ctx.threads()));
    if (qdepthwise_reads_in_place(g)) {
      auto* masks = static_cast<uint32_t*>(
          ctx.allocate(static_cast<size_t>(qdepthwise_mask_count(g)) * sizeof(uint32_t)));
      if (masks == nullptr) return ctx.failure();
      qdepthwise_in_place_masks(g, masks);
      st->dw_masks = masks;
      st->dw_ih = g.ih;
      st->dw_iw = g.iw;
    }
    ctx.set_state(st);
    ctx.mark_packed(weight);
    return Error::Ok;
  }
  const int64_t ocg = c_out / groups, k = cpg * kh * kw;
  const bool pointwise = kh == 1 && kw == 1 && st->sh == 1 && st->sw == 1 && st->ph == 0 &&
                         st->pw == 0 && st->pb == 0 && st->pr == 0;
  // On AMX hosts the GEMM path runs the tiles (qgemm.h's kAmx) and takes
  // the 1×1 layers whose padding to tiles costs little (qgemm_amx_pays),
  // strided ones too (ResNet-50 int8's 1×1 layers: 1.5–2.6× faster; the
  // narrow ones of MobileNetV2 stay on VNNI). Larger kernels stay implicit:
  // on the tiles when their channels are whole 64s (qconv_amx_applies;
  // ResNet-50's 3×3 layers 3.3× faster), else on VNNI. As an explicit GEMM on
  // the tiles, im2col packing made those 3×3 layers 1.5–2.2× slower than
  // VNNI's implicit one.
  const bool amx = groups == 1 && kh == 1 && kw == 1 && qgemm_amx_pays(c_out, cpg);
  const QGemmKind kind = qgemm_kind();
  if (groups == 1 && !pointwise && !amx) {
    st->implicit = true;
    st->groups = ctx.allocate_state<QPackedWeights>();
    auto* sums = static_cast<int32_t*>(ctx.allocate(static_cast<size_t>(c_out) * sizeof(int32_t)));
    // On AMX, channels in whole tiles run the tiles too (qconv_amx_applies).
    const QGemmKind implicit_kind = qconv_amx_applies(cpg) ? QGemmKind::kAmx : kind;
    void* data = ctx.allocate(qconv_packed_bytes(implicit_kind, c_out, cpg, kh, kw));
    if (st->groups == nullptr || sums == nullptr || data == nullptr) return ctx.failure();
    *st->groups = qconv_pack_weights(implicit_kind, weight.data_ptr<const int8_t>(), c_out, cpg,
                                     kh, kw, data, sums);
    ctx.reserve_scratch(qconv_scratch_bytes(
        *st->groups, implicit_geometry(*st, cpg, input.sizes[2], input.sizes[3], kh, kw, oh, ow),
        ctx.threads()));
    ctx.set_state(st);
    ctx.mark_packed(weight);
    return Error::Ok;
  }
  st->groups = static_cast<QPackedWeights*>(
      ctx.allocate(static_cast<size_t>(groups) * sizeof(QPackedWeights), alignof(QPackedWeights)));
  if (st->groups == nullptr) return ctx.failure();
  const int8_t* w = weight.data_ptr<const int8_t>();
  auto* sums = static_cast<int32_t*>(ctx.allocate(static_cast<size_t>(c_out) * sizeof(int32_t)));
  if (sums == nullptr) return ctx.failure();
  const QGemmKind gemm_kind = amx ? QGemmKind::kAmx : kind;
  for (int64_t g = 0; g < groups; ++g) {
    void* data = ctx.allocate(qgemm_packed_bytes(gemm_kind, ocg, k));
    if (data == nullptr) return ctx.failure();
    st->groups[g] =
        qgemm_pack_weights(gemm_kind, w + g * ocg * k, ocg, k, k, data, sums + g * ocg);
  }
  ctx.reserve_scratch(qgemm_scratch_bytes(st->groups[0], oh * ow, ctx.threads()));
  ctx.set_state(st);
  ctx.mark_packed(weight);
  return Error::Ok;
}

void conv2d_out(KernelContext& ctx, const Tensor& input, double, int64_t input_zero_point,
                const Tensor& weight, const Tensor&, const Tensor*, IntSpan, IntSpan, IntSpan,
                int64_t groups, double, int64_t output_zero_point, int64_t output_min,
                int64_t output_max, Tensor& out) {
  const auto* st = static_cast<const Conv2dState*>(ctx.state());
  EMBER_KERNEL_CHECK(ctx, st != nullptr, "not prepared");
  EMBER_KERNEL_CHECK(ctx, input.dtype == ScalarType::Char && input.dim == 4,
                     "input must be 4-d int8, got %d-d %s", static_cast<int>(input.dim),
                     scalar_type_name(input.dtype));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous_dim_order(),
                     "input must have contiguous (NCHW) dim order");
  const int64_t c_out = weight.sizes[0], cpg = weight.sizes[1];
  const int64_t kh = weight.sizes[2], kw = weight.sizes[3];
  const int64_t batch = input.sizes[0], ih = input.sizes[2], iw = input.sizes[3];
  EMBER_KERNEL_CHECK(ctx, input.sizes[1] == cpg * groups,
                     "input has %d channels, the weight takes %lld",
                     static_cast<int>(input.sizes[1]), static_cast<long long>(cpg * groups));
  const int64_t oh = out_extent(ih, kh, st->sh, st->ph, st->pb, st->dh);
  const int64_t ow = out_extent(iw, kw, st->sw, st->pw, st->pr, st->dw);
  EMBER_KERNEL_CHECK(ctx, oh >= 1 && ow >= 1, "the kernel does not fit the input %lldx%lld",
                     static_cast<long long>(ih), static_cast<long long>(iw));
  const int32_t shape[4] = {static_cast<int32_t>(batch), static_cast<int32_t>(c_out),
                            static_cast<int32_t>(oh), static_cast<int32_t>(ow)};
  if (!resize_out(ctx, out, shape)) return;
  if (out.numel == 0) return;
  const auto* x = input.data_ptr<const int8_t>();
  auto* y = out.data_ptr<int8_t>();
  const auto zx = static_cast<int32_t>(input_zero_point);
  const auto zy = static_cast<int32_t>(output_zero_point);
  if (st->depthwise) {
    const float lo = static_cast<float>(output_min - zy), hi = static_cast<float>(output_max - zy);
    const QDepthwiseGeometry g = depthwise_geometry(*st, ih, iw, kh, kw, oh, ow);
    // Whole blocks of 16 channels per image go blocked (when prepare set
    // them up and this size allows it), the channels after them by plane.
    const bool blocked = st->dw_blocked != nullptr && qdepthwise_blocked_applies(g, c_out);
    const int64_t blocks = blocked ? c_out / 16 : 0, rest = c_out - 16 * blocks;
    const int64_t units = batch * (blocks + rest);
    int64_t tasks = static_cast<int64_t>(ctx.threads());
    if (tasks > units) tasks = units;
    const size_t need = depthwise_scratch_bytes(g, blocked, static_cast<size_t>(tasks));
    auto* scratch = static_cast<uint8_t*>(ctx.scratch(need));
    EMBER_KERNEL_CHECK(ctx, scratch != nullptr, "%zu bytes of scratch memory needed, %zu "
                       "reserved", need, ctx.scratch_size());
    auto* offsets = reinterpret_cast<int64_t*>(scratch);
    const bool in_place = st->dw_masks != nullptr && ih == st->dw_ih && iw == st->dw_iw;
    const QDepthwiseLayout layout =
        qdepthwise_layout(g, offsets, in_place ? st->dw_masks : nullptr);
    uint8_t* planes_scratch =
        scratch + round64(static_cast<size_t>(qdepthwise_offset_count(g)) * sizeof(int64_t));
    const size_t per_task = depthwise_task_bytes(g, blocked);
    const int64_t taps = kh * kw;
    // Unit u of image n: block u (channels 16u..16u+15) while u < blocks,
    // then plane 16·blocks + (u − blocks).
    auto task = [&](size_t t) {
      const int64_t begin = units * static_cast<int64_t>(t) / tasks;
      const int64_t end = units * (static_cast<int64_t>(t) + 1) / tasks;
      uint8_t* mine = planes_scratch + t * per_task;
      for (int64_t i = begin; i < end; ++i) {
        const int64_t n = i / (blocks + rest), u = i % (blocks + rest);
        if (u < blocks) {
          const int64_t c = 16 * u, p = n * c_out + c;
          qdepthwise_block16(g, st->dw_blocked + u * taps * 16, x + p * ih * iw, zx,
                             st->f.scale + c, st->f.offset ? st->f.offset + c : nullptr, lo, hi,
                             zy, y + p * oh * ow, mine);
          continue;
        }
        const int64_t c = 16 * blocks + (u - blocks), p = n * c_out + c;
        qdepthwise_plane(layout, st->dw_weights, c, x + p * ih * iw, st->f.scale[c],
                         st->f.offset ? st->f.offset[c] : 0.0f, lo, hi, zy, y + p * oh * ow,
                         mine);
      }
    };
    if (tasks <= 1) {
      task(0);
    } else {
      ctx.parallel_for(static_cast<size_t>(tasks), task);
    }
    return;
  }
  if (st->implicit) {
    const QConvGeometry g = implicit_geometry(*st, cpg, ih, iw, kh, kw, oh, ow);
    const size_t need = qconv_scratch_bytes(*st->groups, g, ctx.threads());
    void* scratch = ctx.scratch(need);
    EMBER_KERNEL_CHECK(ctx, scratch != nullptr, "%zu bytes of scratch memory needed, %zu "
                       "reserved", need, ctx.scratch_size());
    QEpilogue e;
    e.scale = st->f.scale;
    e.offset = st->f.offset;
    e.zp = zy;
    e.lo = static_cast<int32_t>(output_min);
    e.hi = static_cast<int32_t>(output_max);
    e.c_rs = oh * ow;
    e.c_cs = 1;
    for (int64_t b = 0; b < batch; ++b) {
      e.c = y + b * c_out * oh * ow;
      qconv_run(ctx, *st->groups, g, x + b * cpg * ih * iw, zx, e, scratch);
    }
    return;
  }
  const int64_t ocg = c_out / groups;
  const size_t need = qgemm_scratch_bytes(st->groups[0], oh * ow, ctx.threads());
  void* scratch = ctx.scratch(need);
  EMBER_KERNEL_CHECK(ctx, scratch != nullptr, "%zu bytes of scratch memory needed, %zu "
                     "reserved", need, ctx.scratch_size());
  QActivations a;
  a.kind = QActivations::Kind::kConv;
  a.zx = zx;
  a.n = oh * ow;
  a.channels = cpg;
  a.ih = ih;
  a.iw = iw;
  a.kh = kh;
  a.kw = kw;
  a.oh = oh;
  a.ow = ow;
  a.stride_h = st->sh;
  a.stride_w = st->sw;
  a.pad_h = st->ph;
  a.pad_w = st->pw;
  a.dil_h = st->dh;
  a.dil_w = st->dw;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t g = 0; g < groups; ++g) {
      a.x = x + (b * cpg * groups + g * cpg) * ih * iw;
      QEpilogue e;
      e.scale = st->f.scale + g * ocg;
      e.offset = st->f.offset ? st->f.offset + g * ocg : nullptr;
      e.zp = zy;
      e.lo = static_cast<int32_t>(output_min);
      e.hi = static_cast<int32_t>(output_max);
      e.c = y + (b * c_out + g * ocg) * oh * ow;
      e.c_rs = oh * ow;
      e.c_cs = 1;
      qgemm_run(ctx, st->groups[g], a, e, scratch);
    }
  }
}

}  // namespace ember::kernels::quantized
