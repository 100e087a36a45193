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
#include "kernels/portable/util/sdpa_args.h"
#include "kernels/generated/functions/portable/op_sdpa.h"

namespace ember::kernels::portable {

Error sdpa_out_prepare(KernelPrepareContext& ctx, const Tensor& query, const Tensor& key,
                       const Tensor& value, const Tensor* attn_mask, bool is_causal,
                       std::optional<double> scale, Tensor& out) {
  (void)scale;
  if (const Error e = sdpa_check_tensors(ctx, query, key, value, attn_mask, out, 1);
      e != Error::Ok) {
    return e;
  }
  // Scratch for the tiled kernel at the upper-bound shapes (sizes at load).
  sdpa_reserve_scratch(ctx, sdpa_shape_problem(query, key, is_causal));
  return Error::Ok;
}

void sdpa_out(KernelContext& ctx, const Tensor& query, const Tensor& key, const Tensor& value,
              const Tensor* attn_mask, bool is_causal, std::optional<double> scale,
              Tensor& out) {
  SdpaF32Problem p = sdpa_shape_problem(query, key, is_causal);
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
    const int64_t cols = attn_mask->sizes[attn_mask->dim - 1];
    EMBER_KERNEL_CHECK(ctx, cols == p.cache_len,
                       "attn_mask: shape %s, its last dim must be the %lld keys",
                       ShapeStr(attn_mask->shape()).c_str(), static_cast<long long>(p.cache_len));
    if (!sdpa_set_mask(ctx, *attn_mask, p)) return;
  }
  if (!resize_out(ctx, out, query.shape())) return;
  if (out.numel == 0) return;
  p.q = query.data_ptr<const float>();
  p.k = key.data_ptr<const float>();
  p.v = value.data_ptr<const float>();
  p.out = out.data_ptr<float>();
  p.scale = static_cast<float>(
      scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(p.head_dim)));
  sdpa_run(ctx, p);
}

}  // namespace ember::kernels::portable
