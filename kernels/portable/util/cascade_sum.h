// Float32/float64 sums of a unit-stride row in the order PyTorch's CPU
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
// of 1..2^21 elements; tests/test_reduction_order.py keeps it pinned):
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
// depend on the SIMD width the compiler picks for these loops.
#pragma once

#include <cstdint>
#include <type_traits>

namespace ember::kernels::portable {

template <typename T>
T cascade_sum_row(const T* p, int64_t n) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  constexpr int W = static_cast<int>(32 / sizeof(T));
  constexpr int kAccs = 4;
  constexpr int kBlock = kAccs * W;
  constexpr int kChunk = 16;   // Blocks per cascade level.
  constexpr int kLevels = 16;  // 16^16 blocks: more than any int64 row.

  if (n < W) {
    T sum = T(0);
    if (std::is_same_v<T, float> && n >= 4) {
      sum += p[0];
      for (int64_t i = 4; i < n; ++i) sum += p[i];
      return ((sum + p[1]) + p[2]) + p[3];
    }
    for (int64_t i = 0; i < n; ++i) sum += p[i];
    return sum;
  }

  T acc[kAccs][W] = {};
  T levels[kLevels][kAccs][W];
  int counts[kLevels] = {};
  int used_levels = 0;  // levels[0 .. used_levels) are initialised.
  const int64_t vectors = n / W;
  const int64_t blocks = vectors / kAccs;
  for (int64_t b = 0; b < blocks; ++b) {
    const T* block = p + b * kBlock;
    for (int j = 0; j < kAccs; ++j) {
      for (int k = 0; k < W; ++k) acc[j][k] += block[j * W + k];
    }
    if (++counts[0] < kChunk) continue;
    // Carry: level 0 (acc) into levels[0], levels[L] into levels[L + 1], ...
    T (*from)[W] = acc;
    for (int level = 0; level < kLevels; ++level) {
      if (level == used_levels) {
        for (int j = 0; j < kAccs; ++j) {
          for (int k = 0; k < W; ++k) levels[level][j][k] = T(0);
        }
        ++used_levels;
      }
      for (int j = 0; j < kAccs; ++j) {
        for (int k = 0; k < W; ++k) {
          levels[level][j][k] += from[j][k];
          from[j][k] = T(0);
        }
      }
      counts[level] = 0;
      if (level + 1 == kLevels || ++counts[level + 1] < kChunk) break;
      from = levels[level];
    }
  }
  for (int level = 0; level < used_levels; ++level) {
    for (int j = 0; j < kAccs; ++j) {
      for (int k = 0; k < W; ++k) acc[j][k] += levels[level][j][k];
    }
  }
  for (int64_t v = blocks * kAccs; v < vectors; ++v) {
    for (int k = 0; k < W; ++k) acc[0][k] += p[v * W + k];
  }
  for (int j = 1; j < kAccs; ++j) {
    for (int k = 0; k < W; ++k) acc[0][k] += acc[j][k];
  }
  if (const int64_t tail_start = vectors * W; tail_start < n) {
    T tail = T(0);
    for (int64_t i = tail_start; i < n; ++i) tail += p[i];
    acc[0][0] += tail;
  }
  T sum = T(0);
  for (int k = 0; k < W; ++k) sum += acc[0][k];
  return sum;
}

}  // namespace ember::kernels::portable
