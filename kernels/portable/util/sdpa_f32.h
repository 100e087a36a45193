// Float32 scaled dot-product attention over a KV cache, in tiles with an
// online softmax (no score matrix), for llama::custom_sdpa.out
// (op_custom_sdpa.cpp). Three builds of one loop nest (baseline, AVX2+FMA,
// AVX-512; isa_target.h), chosen by cpu_isa().
#pragma once

#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::portable {

/// Largest head dim (D) the tiles hold on the stack.
inline constexpr int64_t kSdpaMaxHeadDim = 512;

/// Query rows one tile computes together (they share each key and value row
/// they read).
inline constexpr int64_t kSdpaTileRows = 8;

/// One attention call. Dense, contiguous tensors:
///   q, out [batch, heads, seq, head_dim]; k, v [batch, kv_heads, cache_len, head_dim].
/// Query row (b, h, i) sits at position start + i and reads cache head
/// h / (heads / kv_heads), positions [0, keys()) only (keys() = kv_len, or
/// start + seq when kv_len < 0): with `causal`, positions <= start + i too. `mask` (optional, null for none) is read at
/// mask + b·mask_strides[0] + h·mask_strides[1] + i·mask_strides[2] + j for
/// position j (a stride of 0 broadcasts); bool (`mask_is_bool`, one byte,
/// nonzero = attend) or float (added to the score).
struct SdpaF32Problem {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* out = nullptr;
  const void* mask = nullptr;
  bool mask_is_bool = false;
  int64_t mask_strides[3] = {0, 0, 0};
  int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0, cache_len = 0, start = 0;
  int64_t kv_len = -1;  // cache positions a row may read (<= cache_len); < 0: start + seq
  bool causal = false;
  float scale = 1.0f;

  int64_t keys() const { return kv_len < 0 ? start + seq : kv_len; }

  /// Tiles of kSdpaTileRows query rows per cache head: its heads / kv_heads
  /// query heads at each of the seq positions, ordered position-major.
  int64_t tiles_per_kv_head() const {
    const int64_t rows = (heads / kv_heads) * seq;
    return (rows + kSdpaTileRows - 1) / kSdpaTileRows;
  }
  /// Independent units of work: (batch, kv head, tile).
  int64_t units() const { return batch * kv_heads * tiles_per_kv_head(); }
};

/// Computes units [begin, end) of `p` (any split of [0, p.units()) over
/// threads gives the same bits). A row with no position to attend to (all
/// masked) gives zeros, as eager's CPU SDPA. Never fails; head_dim <=
/// kSdpaMaxHeadDim.
void sdpa_f32(const SdpaF32Problem& p, int64_t begin, int64_t end);

/// The build for `isa` (for tests; sdpa_f32 uses cpu_isa()).
void sdpa_f32_at(Isa isa, const SdpaF32Problem& p, int64_t begin, int64_t end);

}  // namespace ember::kernels::portable
