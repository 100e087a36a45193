// A float32 matrix transpose, dst[j][i] = src[i][j], for kernels that compute
// a product in the other orientation than their output's (convolution's
// small planes: outᵀ in scratch, then the planes). AVX2 moves 8×8 blocks
// through registers (8 loads, 24 shuffles, 8 stores); other builds and the
// edges copy 16×16 blocks element by element, so every cache line read is
// used 16 times before it leaves L1 (a column-at-a-time loop over a 196-row
// matrix is 5× slower).
#pragma once

#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::portable {

/// dst[j · dst_rs + i] = src[i · src_rs + j] for i < rows, j < cols. The two
/// must not overlap. `isa` picks the build (tests pass each level).
void transpose_f32(const float* src, int64_t src_rs, float* dst, int64_t dst_rs, int64_t rows,
                   int64_t cols, Isa isa = cpu_isa());

}  // namespace ember::kernels::portable
