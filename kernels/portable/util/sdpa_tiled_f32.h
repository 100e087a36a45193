// Float32 scaled dot-product attention for many query rows at once (encoder
// self-attention, cross-attention, LLM prefill): the score and value products
// run on the GEMM microkernels (gemm.h) in blocks of kSdpaTiledQueries query
// rows × kSdpaTiledKeys keys, with an online softmax between them, so the
// full score matrix never exists. The problem is sdpa_f32.h's (same layout,
// masks, grouping, causal rule); sdpa_f32 stays the kernel for a few rows
// (decode), where a GEMM tile would be mostly padding.
//
// Two phases, each split over the thread pool:
//   1. every key/value head is packed once into `scratch`: keys as the
//      GEMM's A strips (the score product is computed transposed, Sᵀ = K·Qᵀ,
//      so each key row is read in its own layout), values as B strips;
//   2. every (batch, head, block of query rows) computes its block: Qᵀ packed
//      as B, Sᵀ = scale·K·Qᵀ per key block, mask and causal limit, the online
//      softmax down each column (one query row; vectors across queries), P
//      packed as A (a copy of contiguous runs of Sᵀ), O += P·V, and at the end
//      O / l into `out`.
// A query row's result depends only on its block, never on the thread split.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/sdpa_f32.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

/// Query rows of one block (a multiple of every build's B strip width).
inline constexpr int64_t kSdpaTiledQueries = 64;
/// Largest head dim the tiled kernel takes (its panels' depth).
inline constexpr int64_t kSdpaTiledMaxHeadDim = 256;
/// Fewest query rows per head for which the tiled kernel beats sdpa_f32.
inline constexpr int64_t kSdpaTiledMinRows = 16;

/// True when `p` suits the tiled kernel: enough query rows per cache head
/// (grouped heads count) and head_dim <= kSdpaTiledMaxHeadDim.
bool sdpa_tiled_f32_applies(const SdpaF32Problem& p);

/// Scratch bytes sdpa_tiled_f32_at(isa, ...) needs for `p` with `threads`
/// threads (packed keys and values of every head, and one block's buffers
/// per thread), 64-byte aligned inside.
size_t sdpa_tiled_f32_scratch_bytes(Isa isa, const SdpaF32Problem& p, size_t threads);

/// Runs `p` in the build for `isa` over ctx's thread pool, using `scratch`
/// (at least sdpa_tiled_f32_scratch_bytes(isa, p, ctx.threads()) bytes,
/// 64-byte aligned). Requires sdpa_tiled_f32_applies(p). Never fails.
void sdpa_tiled_f32_at(Isa isa, KernelContext& ctx, const SdpaF32Problem& p, void* scratch);

/// sdpa_tiled_f32_at for cpu_isa().
void sdpa_tiled_f32(KernelContext& ctx, const SdpaF32Problem& p, void* scratch);

}  // namespace ember::kernels::portable
