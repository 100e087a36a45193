// Weight-only int4 linear layers decoded with integer dot products: the
// weight repacked at prepare in blocks of 16 rows, the activations turned
// into fixed point once per call. VPDPBUSD on AVX-512 VNNI hosts, VPMADDUBSW
// + VPMADDWD on AVX2 ones.
//
// Why: the float kernel (qweight_int4.h) spends a VPERMPS, a shift and an FMA
// per 16 weights (AVX2: two VPERMPS, a blend, a shift and an FMA per 8). On a
// core whose 512-bit operations are two 256-bit halves (Zen 4) that
// saturates the vector pipes at about 26 G weights/s, below the DRAM's 40
// (0.625 bytes per weight). VPDPBUSD multiplies 64 byte pairs per
// instruction; three of them per 64 weights carry a float activation's 23
// bits.
//
// Activations (Int4FixedInput): each row's x in chunks of 32 k. A chunk's
// values are v = round(x · 2^(22−E)) with 2^E > max |x| of the chunk, so
// |v| ≤ 2^22 and x − v·2^(E−22) is at most 2^(E−23) ≤ max |x| · 2^−22 (a few
// float32 ulps of the chunk's largest value). v is split into three signed
// bytes (v = l2·2^16 + l1·2^8 + l0). Per weight row the kernel sums
// u·l (u = q + 8, the stored nibble) per limb in int32, combines the limbs,
// subtracts 8·Σv (the +8) and scales by s·2^(E−22): Σ q·v is at most
// 32 · 8 · 2^22 = 2^30 per chunk, so the int32 sums are exact (intermediate
// wraparound cancels). A row of x with a NaN or infinity cannot be written
// this way: the input conversion says so and the op uses the float GEMM.
//
// Packed layout: rows in blocks of kInt4FixedRows (16; the last padded with
// zero scales). Per block and group: a header line of s[16] (float) and, when
// some zero term c = −z·s is not 0, a line of c[16]; then the group's 32-wide
// tiles, four 64-byte lines each. In line i of a tile starting at k0, byte
// 4L + j holds row L's weight k0 + 8i + j (+ 8) in its low nibble and
// k0 + 8i + 4 + j in its high one: one AND gives 16 rows × 4 k as VPDPBUSD's
// unsigned operand, a shift and an AND the next 4 k.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::quantized {

inline constexpr int64_t kInt4FixedRows = 16;
inline constexpr int64_t kInt4FixedChunk = 32;  // k per activation chunk and weight tile

struct Int4FixedWeights {
  int64_t n = 0, k = 0, group = 0, groups = 0;
  bool zero_term = false;
  int64_t block_bytes = 0;  // 16 rows: every group's header lines and tiles
  const uint8_t* data = nullptr;
};

/// True when the host runs VPDPBUSD on 512-bit vectors (AVX-512 VNNI + BW).
bool qweight_int4_fixed_vnni_host();

/// The layout takes groups that are a multiple of 32 (and k a multiple of
/// the group).
bool qweight_int4_fixed_supports(int64_t k, int64_t group);

/// Bytes qweight_int4_fixed_pack writes (64-aligned memory expected).
size_t qweight_int4_fixed_packed_bytes(int64_t n, int64_t k, int64_t group, bool zero_term);

/// Packs w (n × k int8, values in [−8, 7]), scales and zeros (n × k / group
/// floats; zeros may be null); zero_term as qweight_int4_has_zero_term says.
Int4FixedWeights qweight_int4_fixed_pack(const int8_t* w, const float* scales, const float* zeros,
                                       int64_t n, int64_t k, int64_t group, void* mem);

/// The same from int4 values two per byte (uint8 [n, k / 2]; byte j holds
/// value 2j + 8 in its low nibble, 2j + 1 + 8 in its high one).
Int4FixedWeights qweight_int4_fixed_pack_nibbles(const uint8_t* w, const float* scales,
                                               const float* zeros, int64_t n, int64_t k,
                                               int64_t group, void* mem);

/// W[row][k0 + i] = q·s + c for i in [0, count) into dst[i · stride] (the
/// prompt GEMM's panels; the same values as qweight_int4_dequantize).
void qweight_int4_fixed_dequantize(const Int4FixedWeights& w, int64_t row, int64_t k0,
                                  int64_t count, float* dst, int64_t stride,
                                  portable::Isa isa = portable::cpu_isa());

/// `rows` rows of x (k floats each) in fixed point.
struct Int4FixedInput {
  int64_t rows = 0, k = 0;
  const int8_t* limbs = nullptr;   // [rows][k / 32][3][32]: l0, l1, l2
  const float* step = nullptr;     // [rows][k / 32]: 2^(E−22)
  const int32_t* sum_v = nullptr;  // [rows][k / 32]: Σ v
  const float* sum_x = nullptr;    // [rows][k / 32]: Σ x (for zero terms)
};

/// Bytes qweight_int4_fixed_input writes for rows × k (k a multiple of 32).
size_t qweight_int4_fixed_input_bytes(int64_t rows, int64_t k);

/// Writes x (rows × k) into mem (64-aligned); false, with *out unset, when
/// some value is NaN or infinite (the caller runs the float kernel). `isa`
/// below AVX-512 (or a host without VNNI) takes the plain loops; every build
/// writes the same bytes.
bool qweight_int4_fixed_input(const float* x, int64_t rows, int64_t k, void* mem,
                             Int4FixedInput* out, portable::Isa isa = portable::cpu_isa());

/// y[m·n + r] = Σ_k x[m][k] · W[r][k] + bias[r] for the input's rows m (1 to
/// 4) and weight rows r in [first, last): first a multiple of 16, last too
/// unless it is n. `isa`: AVX-512 (with VNNI on the host) runs VPDPBUSD, AVX2
/// VPMADDUBSW, baseline the reference below; every build gives the same
/// sums up to float32 rounding.
void qweight_int4_fixed_gemv(const Int4FixedWeights& w, const Int4FixedInput& x, int64_t first,
                             int64_t last, const float* bias, float* y,
                             portable::Isa isa = portable::cpu_isa());

/// True when the op should pack int4 weights for these kernels at `isa`:
/// AVX-512 with VNNI, or AVX2 (where the float kernel's lookups are slower
/// still). AVX-512 without VNNI keeps the float layout.
bool qweight_int4_fixed_preferred(portable::Isa isa);

/// The same sums in plain loops (double), from the input's fixed-point
/// values: the tests' reference for what the kernel computes.
void qweight_int4_fixed_gemv_reference(const Int4FixedWeights& w, const Int4FixedInput& x,
                                      int64_t first, int64_t last, const float* bias, float* y);

}  // namespace ember::kernels::quantized
