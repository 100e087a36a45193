// llama::custom_sdpa.out(Tensor query, Tensor key, Tensor value, SymInt start_pos,
//     Tensor? attn_mask=None, float drop_p=0.0, bool is_causal=False, float? scale=None,
//     *, Tensor(a!) out) -> Tensor(a!)
//
// Attention of S new query positions over a KV cache, without a score matrix
// and without repeating the cache for grouped-query attention. Layout (the
// one of torch's SDPA and transformers' static cache; ExecuTorch's kernel of
// the same name takes [B, S, H, D]): query and out [B, H, S, D], key and
// value [B, Hkv, L, D] with H a multiple of Hkv; query head h reads cache
// head h / (H / Hkv). Query row i is at position start_pos + i and only
// positions < start_pos + S are read (is_causal: <= start_pos + i). attn_mask
// (bool: attend where true, or float: added) is [S, M] or [B|1, H|1, S|1, M],
// M >= start_pos + S; with is_causal both apply. float32, contiguous tensors;
// drop_p must be 0; scale defaults to 1/sqrt(D). The reference is
// python/ember/exir/operator/custom_sdpa.py; the tiles are util/sdpa_f32.h
// (decode, a few rows) and util/sdpa_tiled_f32.h (prefill, GEMM tiles).
#include <cmath>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/sdpa_args.h"
#include "kernels/generated/functions/portable/op_custom_sdpa.h"

namespace ember::kernels::portable {

Error custom_sdpa_out_prepare(KernelPrepareContext& ctx, const Tensor& query, const Tensor& key,
                              const Tensor& value, int64_t start_pos, const Tensor* attn_mask,
                              double drop_p, bool is_causal, std::optional<double> scale,
                              Tensor& out) {
  (void)start_pos;  // computed at run time
  (void)scale;
  // [S, M] or [B|1, H|1, S|1, M] masks (2-D, 3-D: right-aligned as 4-D).
  if (const Error e = sdpa_check_tensors(ctx, query, key, value, attn_mask, out, 2);
      e != Error::Ok) {
    return e;
  }
  EMBER_PREPARE_CHECK(ctx, drop_p == 0.0, "drop_p: must be 0 (no dropout), got %g", drop_p);
  // Prefill of many positions runs the tiled kernel: its scratch for the
  // upper-bound shapes (sizes at load), every cache position readable.
  sdpa_reserve_scratch(ctx, sdpa_shape_problem(query, key, is_causal));
  return Error::Ok;
}

void custom_sdpa_out(KernelContext& ctx, const Tensor& query, const Tensor& key,
                     const Tensor& value, int64_t start_pos, const Tensor* attn_mask,
                     double drop_p, bool is_causal, std::optional<double> scale, Tensor& out) {
  (void)drop_p;  // 0, checked at prepare
  const int64_t batch = query.sizes[0], heads = query.sizes[1], seq = query.sizes[2],
                head_dim = query.sizes[3];
  const int64_t kv_heads = key.sizes[1], cache_len = key.sizes[2];
  EMBER_KERNEL_CHECK(ctx, key.sizes[0] == batch && key.sizes[3] == head_dim,
                     "key: shape %s does not fit query %s ([B, Hkv, L, D] for [B, H, S, D])",
                     ShapeStr(key.shape()).c_str(), ShapeStr(query.shape()).c_str());
  if (!check_same_shape(ctx, value, "value", key, "key")) return;
  EMBER_KERNEL_CHECK(ctx, kv_heads > 0 && heads % kv_heads == 0,
                     "key: %lld cache heads do not divide query's %lld heads",
                     static_cast<long long>(kv_heads), static_cast<long long>(heads));
  EMBER_KERNEL_CHECK(ctx, head_dim <= kSdpaMaxHeadDim, "query: head dim %lld exceeds %lld",
                     static_cast<long long>(head_dim), static_cast<long long>(kSdpaMaxHeadDim));
  EMBER_KERNEL_CHECK(ctx, start_pos >= 0 && start_pos + seq <= cache_len,
                     "start_pos: %lld + %lld query positions exceeds the cache's %lld",
                     static_cast<long long>(start_pos), static_cast<long long>(seq),
                     static_cast<long long>(cache_len));
  SdpaF32Problem p = sdpa_shape_problem(query, key, is_causal);
  if (attn_mask != nullptr) {
    // [S, M] is [1, 1, S, M]; size-1 dims broadcast (stride 0).
    if (!sdpa_set_mask(ctx, *attn_mask, p)) return;
    const int64_t cols = attn_mask->sizes[attn_mask->dim - 1];
    EMBER_KERNEL_CHECK(ctx, cols >= start_pos + seq,
                       "attn_mask: %lld columns, needs start_pos + S = %lld",
                       static_cast<long long>(cols), static_cast<long long>(start_pos + seq));
  }
  if (!resize_out(ctx, out, query.shape())) return;
  if (out.numel == 0) return;
  p.q = query.data_ptr<const float>();
  p.k = key.data_ptr<const float>();
  p.v = value.data_ptr<const float>();
  p.out = out.data_ptr<float>();
  p.start = start_pos;
  p.scale = static_cast<float>(scale.has_value() ? *scale
                                                 : 1.0 / std::sqrt(static_cast<double>(head_dim)));
  p.kv_len = start_pos + seq;
  sdpa_run(ctx, p);  // prefill: the GEMM tiles; decode: the row kernel
}

}  // namespace ember::kernels::portable
