// ember_fused::sdpa.out(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None,
//     bool is_causal=False, float? scale=None, *, Tensor(a!) out) -> Tensor(a!)
//
// torch's scaled_dot_product_attention (no dropout) in one kernel, without
// the score matrix: what passes/fuse_attention.py makes of the SDPA calls of
// encoders and decoders, which to_edge would otherwise decompose into
// permute, expand, two bmm, a mask add and a softmax. query and out
// [B, H, Lq, D], key and value [B, Hkv, Lk, D] with H a multiple of Hkv
// (grouped-query attention: query head h reads key head h / (H / Hkv)).
// attn_mask (bool: attend where true, or float: added to the scaled scores)
// broadcasts to [B, H, Lq, Lk] with its last dim Lk. is_causal: row i reads
// keys j <= i (torch's top-left rule). A row with nothing to attend to gives
// zeros, as eager's SDPA on CPU. float32, contiguous tensors; scale defaults
// to 1/sqrt(D). The reference is python/ember/exir/operator/ember_fused.py.
// Many rows per head run util/sdpa_tiled_f32 (GEMM microkernels; its scratch
// is reserved at prepare for the upper-bound shapes), a few util/sdpa_f32.
#include <cmath>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/sdpa_f32.h"
#include "kernels/portable/util/sdpa_tiled_f32.h"
#include "kernels/generated/functions/portable/op_sdpa.h"

namespace ember::kernels::portable {
namespace {

// The problem, minus the data pointers and the mask (shapes only).
SdpaF32Problem shape_problem(const Tensor& query, const Tensor& key, bool is_causal) {
  SdpaF32Problem p;
  p.batch = query.sizes[0];
  p.heads = query.sizes[1];
  p.seq = query.sizes[2];
  p.head_dim = query.sizes[3];
  p.kv_heads = key.sizes[1];
  p.cache_len = key.sizes[2];
  p.kv_len = key.sizes[2];
  p.causal = is_causal;
  return p;
}

}  // namespace

Error sdpa_out_prepare(KernelPrepareContext& ctx, const Tensor& query, const Tensor& key,
                       const Tensor& value, const Tensor* attn_mask, bool is_causal,
                       std::optional<double> scale, Tensor& out) {
  (void)scale;
  const Tensor* four[] = {&query, &key, &value, &out};
  const char* names[] = {"query", "key", "value", "out"};
  for (int a = 0; a < 4; ++a) {
    EMBER_PREPARE_CHECK(ctx, four[a]->dtype == ScalarType::Float,
                        "%s: dtype %s, only float32 is supported", names[a],
                        scalar_type_name(four[a]->dtype));
    EMBER_PREPARE_CHECK(ctx, four[a]->dim == 4, "%s: must be 4-D [B, H, L, D], got %d dims",
                        names[a], four[a]->dim);
    EMBER_PREPARE_CHECK(ctx, four[a]->is_contiguous_dim_order(),
                        "%s: must be contiguous (dim order 0, 1, 2, 3)", names[a]);
  }
  if (attn_mask != nullptr) {
    EMBER_PREPARE_CHECK(
        ctx, attn_mask->dtype == ScalarType::Float || attn_mask->dtype == ScalarType::Bool,
        "attn_mask: dtype %s, must be float32 or bool", scalar_type_name(attn_mask->dtype));
    EMBER_PREPARE_CHECK(ctx, attn_mask->dim >= 1 && attn_mask->dim <= 4,
                        "attn_mask: must have 1 to 4 dims, got %d", attn_mask->dim);
    EMBER_PREPARE_CHECK(ctx, attn_mask->is_contiguous_dim_order(),
                        "attn_mask: must be contiguous");
  }
  // Scratch for the tiled kernel at the upper-bound shapes (sizes at load).
  const SdpaF32Problem p = shape_problem(query, key, is_causal);
  if (sdpa_tiled_f32_applies(p)) {
    ctx.reserve_scratch(sdpa_tiled_f32_scratch_bytes(cpu_isa(), p, ctx.threads()));
  }
  return Error::Ok;
}

void sdpa_out(KernelContext& ctx, const Tensor& query, const Tensor& key, const Tensor& value,
              const Tensor* attn_mask, bool is_causal, std::optional<double> scale,
              Tensor& out) {
  SdpaF32Problem p = shape_problem(query, key, is_causal);
  EMBER_KERNEL_CHECK(ctx, key.sizes[0] == p.batch && key.sizes[3] == p.head_dim,
                     "key: shape %s does not fit query %s ([B, Hkv, Lk, D] for [B, H, Lq, D])",
                     ShapeStr(key.shape()).c_str(), ShapeStr(query.shape()).c_str());
  if (!check_same_shape(ctx, value, "value", key, "key")) return;
  EMBER_KERNEL_CHECK(ctx, p.kv_heads > 0 && p.heads % p.kv_heads == 0,
                     "key: %lld heads do not divide query's %lld heads",
                     static_cast<long long>(p.kv_heads), static_cast<long long>(p.heads));
  EMBER_KERNEL_CHECK(ctx, p.head_dim <= kSdpaMaxHeadDim, "query: head dim %lld exceeds %lld",
                     static_cast<long long>(p.head_dim),
                     static_cast<long long>(kSdpaMaxHeadDim));
  if (attn_mask != nullptr) {
    // Right-aligned broadcasting to [B, H, Lq, Lk]; size-1 dims get stride 0.
    const Tensor& m = *attn_mask;
    const int32_t r = m.dim;
    const int64_t cols = m.sizes[r - 1];
    EMBER_KERNEL_CHECK(ctx, cols == p.cache_len,
                       "attn_mask: shape %s, its last dim must be the %lld keys",
                       ShapeStr(m.shape()).c_str(), static_cast<long long>(p.cache_len));
    const int64_t want[3] = {p.batch, p.heads, p.seq};
    int64_t stride = cols;
    for (int32_t d = 2; d >= 0; --d) {
      const int32_t md = r - 4 + d;  // the mask's dim for problem dim d (< 0: absent)
      const int64_t size = md >= 0 ? m.sizes[md] : 1;
      EMBER_KERNEL_CHECK(ctx, size == want[d] || size == 1,
                         "attn_mask: shape %s does not broadcast to [%lld, %lld, %lld, %lld]",
                         ShapeStr(m.shape()).c_str(), static_cast<long long>(p.batch),
                         static_cast<long long>(p.heads), static_cast<long long>(p.seq),
                         static_cast<long long>(cols));
      p.mask_strides[d] = size == 1 ? 0 : stride;
      stride *= size;
    }
    p.mask = m.data;
    p.mask_is_bool = m.dtype == ScalarType::Bool;
  }
  if (!resize_out(ctx, out, query.shape())) return;
  if (out.numel == 0) return;
  p.q = query.data_ptr<const float>();
  p.k = key.data_ptr<const float>();
  p.v = value.data_ptr<const float>();
  p.out = out.data_ptr<float>();
  p.scale = static_cast<float>(
      scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(p.head_dim)));
  if (sdpa_tiled_f32_applies(p)) {
    // Reserved at prepare for the largest shapes, so present unless the
    // method was loaded without scratch; then the row kernel below.
    if (void* scratch = ctx.scratch(sdpa_tiled_f32_scratch_bytes(cpu_isa(), p, ctx.threads()))) {
      sdpa_tiled_f32(ctx, p, scratch);
      return;
    }
  }
  const int64_t unit_work = kSdpaTileRows * p.kv_len * p.head_dim;
  parallel_range(ctx, p.units(), kParallelMinElements / (unit_work + 1) + 1, 1,
                 [&](int64_t begin, int64_t end) { sdpa_f32(p, begin, end); });
}

}  // namespace ember::kernels::portable
