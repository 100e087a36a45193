// Float32/float64 sums of a unit-stride row in Ember's fixed order, the same
// on every host, ISA level and thread count (docs/determinism.md). It was
// chosen to coincide with the order PyTorch's CPU
// kernels use with 256-bit vectors (AVX2, the capability torch picks on
// x86-64 machines without AVX-512).
//
// Why the order matters: a quantized graph averages int8-dequantized values
// (mean over H,W after adaptive_avg_pool2d) and quantizes the result again.
// Such means often lie exactly on a rounding tie of the next quantize, so
// the last bit of the float sum decides the int8 value, and a different
// summation order moves outputs by whole quantization steps. Summing in
// eager's order makes sum/mean bit-identical to eager; it is also faster
// than accumulating in float64 and stays accurate (error grows with
// log16 of the row length, like a pairwise sum).
//
// The order, established black-box against torch 2.13 (the summation tree
// was read off with +-2^40 probes, then confirmed bit-exact on random rows
// of 1..2^21 elements; python/tests/summation_model.py models it and
// test_reduction_order.py checks the kernel against that model on every host):
//   W = 32 / sizeof(T) lanes per vector (8 float, 4 double).
//   * n < W: a plain left-to-right sum, except that float rows of 4..7
//     elements add elements 4.. onto element 0 before adding 1, 2, 3.
//   * Otherwise four vector accumulators take blocks of 4W elements
//     (accumulator j takes vector j of each block). Every 16 blocks the
//     accumulators are added into the next level of a cascade and cleared,
//     recursively. At the end the levels are added from the lowest up into
//     accumulator j, whole vectors left after the last block go into
//     accumulator 0, and the four accumulators are added 0+1, +2, +3 lane by
//     lane. The left-to-right sum of the last n % W elements is added to
//     lane 0, then the lanes are added left to right.
// Every accumulator starts at +0 (so a row of -0.0 sums to +0, as in eager).
// Lane-wise adds are independent IEEE operations, so the result does not
// depend on the SIMD width the loops compile to: cascade_sum.cpp builds them
// twice (baseline, and AVX2 where the CPU has it) with identical results.
#pragma once

#include <cstdint>

namespace ember::kernels::portable {

/// The sum of p[0 .. n) in eager's order (n >= 0; p may be null when n == 0).
float cascade_sum_row(const float* p, int64_t n);
double cascade_sum_row(const double* p, int64_t n);

/// The baseline build of cascade_sum_row (the one above uses AVX2 when the
/// CPU has it); tests compare the two bit for bit.
float cascade_sum_row_baseline(const float* p, int64_t n);
double cascade_sum_row_baseline(const double* p, int64_t n);

/// out[i * out_stride] = the sum of the n elements at in + i * in_stride,
/// divided by n when `mean` (in the same dtype, as eager's mean), for i in
/// [0, rows). One call per run of rows keeps the ISA dispatch out of the loop.
void cascade_sum_rows(const float* in, int64_t n, int64_t rows, int64_t in_stride, float* out,
                      int64_t out_stride, bool mean);
void cascade_sum_rows(const double* in, int64_t n, int64_t rows, int64_t in_stride, double* out,
                      int64_t out_stride, bool mean);

}  // namespace ember::kernels::portable
