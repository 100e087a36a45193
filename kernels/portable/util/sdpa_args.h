// What the two attention ops (op_sdpa.cpp: ember_fused::sdpa, op_custom_sdpa.cpp:
// llama::custom_sdpa) share around their kernels: the problem's shapes from
// the tensors, the mask's broadcast strides, the tiled kernel's scratch at
// prepare and the choice of kernel at execute.
#pragma once

#include "kernels/portable/util/sdpa_f32.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

/// The load-time checks both ops share: query, key, value and out float32,
/// 4-D and contiguous; the mask (if any) bool or float32, contiguous, with
/// `mask_min_dim` to 4 dims. Fails ctx and returns its error otherwise.
Error sdpa_check_tensors(KernelPrepareContext& ctx, const Tensor& query, const Tensor& key,
                         const Tensor& value, const Tensor* attn_mask, const Tensor& out,
                         int32_t mask_min_dim);

/// The shapes of query [B, H, S, D] and key [B, Hkv, L, D]: every key
/// position readable (kv_len = L, start 0), no data pointers, no mask.
SdpaF32Problem sdpa_shape_problem(const Tensor& query, const Tensor& key, bool causal);

/// p's mask from `mask` (bool or float, 1 to 4 dims, right-aligned against
/// [B, H, S, M], size-1 dims broadcast with stride 0). False after failing
/// ctx when a dim neither matches nor is 1.
bool sdpa_set_mask(KernelContext& ctx, const Tensor& mask, SdpaF32Problem& p);

/// Reserves the tiled kernel's scratch for `p` (the upper-bound shapes at
/// load) when it would run it.
void sdpa_reserve_scratch(KernelPrepareContext& ctx, const SdpaF32Problem& p);

/// Runs `p` over ctx's pool: the tiled kernel for many rows when the scratch
/// is there, else the row kernel. Never fails.
void sdpa_run(KernelContext& ctx, const SdpaF32Problem& p);

}  // namespace ember::kernels::portable
