// One output row of a stride-2 2-D max pool, values only (ember_fused::max_pool2d
// over NCHW rows: ResNet's stem pool, float32 and int8), in AVX-512 and AVX2.
// The generic row loop (op_max_pool.cpp) reads every other input column, which
// the compiler does not vectorise: these gather a tap's columns with a
// permute (float32) or as the low/high bytes of 16-bit words (int8).
//
// float32 keeps eager's order per window (taps row by row, the first maximum
// wins, a NaN wins over numbers and the last NaN stays): each tap is
// max(v, best), which on x86 returns best unless v > best, then NaN lanes of v
// replace it. int8 has one maximum whatever the order, so its windows take
// the maximum over rows first (bytes), then over the kw columns (words).
#pragma once

#include <cstdint>

namespace ember::kernels::portable {

/// y[j] = max over r < nrows, k < kw of rows[r][2·j + k], for j < len, in the
/// order above. Reads rows[r][0, 2·(len − 1) + kw) only. Call the AVX-512
/// forms only when cpu_has_avx512f(), the AVX2 ones when cpu_has_avx2_fma().
void max_pool_row_s2_f32_avx512(const float* const* rows, int nrows, int64_t kw, int64_t len,
                                float* y);
void max_pool_row_s2_f32_avx2(const float* const* rows, int nrows, int64_t kw, int64_t len,
                              float* y);
void max_pool_row_s2_i8_avx512(const int8_t* const* rows, int nrows, int64_t kw, int64_t len,
                               int8_t* y);
void max_pool_row_s2_i8_avx2(const int8_t* const* rows, int nrows, int64_t kw, int64_t len,
                             int8_t* y);

}  // namespace ember::kernels::portable
