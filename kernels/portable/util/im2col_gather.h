// im2col of small planes through an offsets table: a strip of a convolution's
// columns (its GEMM's B operand, output positions as columns) gathered with
// one offset per (kernel tap, output position), or −1 where the tap reads the
// padding. On a 7×7 or 14×14 plane a strip of 16 or 32 positions crosses
// several output rows, and im2col's per-row runs (each a bounds computation
// and a copy of at most 7 or 14 floats) cost more than the product on them
// (ResNet-50's bf16 7×7 layers: 1.3 ms against 0.83 ms for the product alone);
// the table turns each k row of the strip into one or two vector gathers.
#pragma once

#include <cstdint>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::kernels::portable {

/// An im2col offsets table: row t (a kernel tap, `taps` = KH·KW of them) holds
/// `row` int32s, the input offset within a channel plane of tap t for each
/// output position, −1 in the padding and past the last position.
struct Im2colTable {
  const int32_t* offsets;
  int64_t row;
  int64_t taps;
};

/// For p < kc and j < nr: dst[p·nr + j] = x[c·s_c + offsets[t·row + j0 + j]]
/// with (c, t) = divmod(p0 + p, taps), or 0 where the offset is −1 and for
/// j ≥ cols (cols ≤ nr; nr 8, 16 or 32). Reads only offsets of the first
/// `cols` positions. The same values on every ISA (they are copies).
void im2col_gather_strip(const float* x, int64_t s_c, const Im2colTable& table, int64_t p0,
                         int64_t kc, int64_t j0, int64_t cols, int nr, float* dst);

/// The build for `isa` (tests compare them on one host).
void im2col_gather_strip_at(Isa isa, const float* x, int64_t s_c, const Im2colTable& table,
                            int64_t p0, int64_t kc, int64_t j0, int64_t cols, int nr, float* dst);

}  // namespace ember::kernels::portable
