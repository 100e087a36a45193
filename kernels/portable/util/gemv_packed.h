// GEMM for m ≤ 4 rows with B packed at prepare (a decoding step's linear
// layers, whose weights prepare packed for the prompt's GEMM). The row stream
// of gemv.h reads B itself, row by row: two copies of every weight would then
// stay in memory, and two threads splitting its columns would each read half
// of every row. This reads the panels instead, in memory order: each thread's
// share of the columns is whole 32-KiB panel blocks, and B itself is never
// read again after prepare (its pages go back to the data loader).
//
// Every column is summed exactly as gemm_blocked_packed_b sums it: a chain of
// multiply-adds from zero per kKCPacked-deep block (the microkernel's), then
// alpha·sum + beta·c with beta for the first block and 1 after. So a row's
// bits equal that row's in a prompt's GEMM, on any thread split.
#pragma once

#include <cstdint>

#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/gemv.h"

namespace ember::kernels::portable {

/// acc[i·32 + j] = Σ_p a[i·a_rs + p·a_cs] · panel[p·32 + j] for i < m ≤
/// kGemvMaxM, j < 32, p < kc: fused multiply-adds from zero in p order, as
/// f32_gemm_8x32_avx512f (gemm_f32_avx512.cpp). Only when cpu_has_avx512f().
void f32_panel_sums_32_avx512f(int64_t m, int64_t kc, const float* a, int64_t a_rs,
                               int64_t a_cs, const float* panel, float* acc);

/// The same for a 16-column panel, as f32_gemm_6x16_avx2_fma
/// (gemm_f32_avx2.cpp). Only when cpu_has_avx2_fma().
void f32_panel_sums_16_avx2_fma(int64_t m, int64_t kc, const float* a, int64_t a_rs,
                                int64_t a_cs, const float* panel, float* acc);

/// True when f32_gemv_packed takes panels of this tile here: the tile of
/// a microkernel this CPU runs (what prepare packed for, gemm_nr).
bool f32_gemv_packed_takes(const PackedPanels<float>& b);

/// C[m×n] columns [j_first, j_last) = alpha·A·B + beta·C, 1 ≤ m ≤
/// kGemvMaxM, B (k×n) read from `b` (pack_b_for_gemm's panels, kKCPacked
/// deep). j_first is a multiple of b.tile. C may have any strides.
void f32_gemv_packed(int64_t m, int64_t j_first, int64_t j_last, int64_t k, const float* a,
                     int64_t a_rs, int64_t a_cs, const PackedPanels<float>& b, float alpha,
                     float beta, float* c, int64_t c_rs, int64_t c_cs);

}  // namespace ember::kernels::portable
