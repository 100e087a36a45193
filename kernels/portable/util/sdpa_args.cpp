// sdpa_args.h.
#include "kernels/portable/util/sdpa_args.h"

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/sdpa_tiled_f32.h"

namespace ember::kernels::portable {

Error sdpa_check_tensors(KernelPrepareContext& ctx, const Tensor& query, const Tensor& key,
                         const Tensor& value, const Tensor* attn_mask, const Tensor& out,
                         int32_t mask_min_dim) {
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
    EMBER_PREPARE_CHECK(ctx, attn_mask->dim >= mask_min_dim && attn_mask->dim <= 4,
                        "attn_mask: must have %d to 4 dims, got %d", static_cast<int>(mask_min_dim),
                        attn_mask->dim);
    EMBER_PREPARE_CHECK(ctx, attn_mask->is_contiguous_dim_order(),
                        "attn_mask: must be contiguous");
  }
  return Error::Ok;
}

SdpaF32Problem sdpa_shape_problem(const Tensor& query, const Tensor& key, bool causal) {
  SdpaF32Problem p;
  p.batch = query.sizes[0];
  p.heads = query.sizes[1];
  p.seq = query.sizes[2];
  p.head_dim = query.sizes[3];
  p.kv_heads = key.sizes[1];
  p.cache_len = key.sizes[2];
  p.kv_len = key.sizes[2];
  p.causal = causal;
  return p;
}

bool sdpa_set_mask(KernelContext& ctx, const Tensor& m, SdpaF32Problem& p) {
  const int32_t r = m.dim;
  const int64_t cols = m.sizes[r - 1];
  const int64_t want[3] = {p.batch, p.heads, p.seq};
  int64_t stride = cols;
  for (int32_t d = 2; d >= 0; --d) {
    const int32_t md = r - 4 + d;  // the mask's dim for problem dim d (< 0: absent)
    const int64_t size = md >= 0 ? m.sizes[md] : 1;
    if (size != want[d] && size != 1) {
      ctx.fail(Error::InvalidArgument,
               "attn_mask: shape %s does not broadcast to [%lld, %lld, %lld, M]",
               ShapeStr(m.shape()).c_str(), static_cast<long long>(p.batch),
               static_cast<long long>(p.heads), static_cast<long long>(p.seq));
      return false;
    }
    p.mask_strides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
  p.mask = m.data;
  p.mask_is_bool = m.dtype == ScalarType::Bool;
  return true;
}

void sdpa_reserve_scratch(KernelPrepareContext& ctx, const SdpaF32Problem& p) {
  if (sdpa_tiled_f32_applies(p)) {
    ctx.reserve_scratch(sdpa_tiled_f32_scratch_bytes(cpu_isa(), p, ctx.threads()));
  }
}

void sdpa_run(KernelContext& ctx, const SdpaF32Problem& p) {
  if (sdpa_tiled_f32_applies(p)) {
    // Reserved at prepare for the largest shapes, so present unless the
    // method was loaded without scratch; then the row kernel below.
    if (void* scratch = ctx.scratch(sdpa_tiled_f32_scratch_bytes(cpu_isa(), p, ctx.threads()))) {
      sdpa_tiled_f32(ctx, p, scratch);
      return;
    }
  }
  // A unit is one tile: kSdpaTileRows rows over up to keys() positions.
  const int64_t unit_work = kSdpaTileRows * p.keys() * p.head_dim;
  parallel_range(ctx, p.units(), kParallelMinElements / (unit_work + 1) + 1, 1,
                 [&](int64_t begin, int64_t end) { sdpa_f32(p, begin, end); });
}

}  // namespace ember::kernels::portable
