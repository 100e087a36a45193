// What a GEMM does to each C element after its last k-block, while the tile
// is still in L1: c = act(clamp(c + row_bias[i] + col_bias[j] + residual[i, j], lo, hi)),
// act a float32 activation of unary_f32 (GELU: ember_fused::fused_linear).
//
// Convolution (a bias per row) and addmm (per column) use it for their bias (instead of filling C with the
// bias first and accumulating onto it: one pass over C less, and one that ran
// on the calling thread alone) and the fused ops (ember_fused::fused_convolution)
// for their activation and residual add. The order of the float operations is
// eager's: (A·B + bias) + residual, then the clamp.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/unary_f32.h"

namespace ember::kernels::portable {

template <typename T>
struct GemmEpilogue {
  const T* row_bias = nullptr;  // One per row of C, at row_bias[i * bias_stride].
  int64_t bias_stride = 1;
  const T* col_bias = nullptr;  // One per column of C, at col_bias[j * col_bias_stride].
  int64_t col_bias_stride = 1;
  // Indexed like C: residual[i * res_rs + j * res_cs]. It must not overlap C:
  // the first k-block overwrites C before the epilogue reads it.
  const T* residual = nullptr;
  int64_t res_rs = 0;
  int64_t res_cs = 0;
  bool clamp = false;  // Clamp to [lo, hi] (NaN stays NaN, as clamp in eager).
  T lo = -std::numeric_limits<T>::infinity();
  T hi = std::numeric_limits<T>::infinity();
  // After the clamp, float only: unary_f32's `act` on each element, by the
  // same span loops as the unfused op (so the same bits on one host). The
  // blocked GEMM applies it to each finished C block rather than per tile
  // (gemm.h, BlockActivation): span loops over 16 or 32 columns cost more
  // than the activation itself.
  bool activate = false;
  UnaryF32 act = UnaryF32::GeluErf;

  bool empty() const {
    return row_bias == nullptr && col_bias == nullptr && residual == nullptr && !clamp &&
           !activate;
  }

  /// The activation alone, on an m×n block of C (after the rest of the
  /// epilogue was applied to it).
  void activate_block(int64_t m, int64_t n, T* c, int64_t c_rs, int64_t c_cs) const {
    if constexpr (std::is_same_v<T, float>) {
      if (!activate) return;
      if (c_cs == 1) {
        unary_f32_rows(act, c, c_rs, m, n);
        return;
      }
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          float* v = c + i * c_rs + j * c_cs;
          unary_f32(act, v, v, 1);
        }
      }
    }
  }

  /// The epilogue of the C block that starts at (i0, j0).
  GemmEpilogue at(int64_t i0, int64_t j0) const {
    GemmEpilogue e = *this;
    if (e.row_bias != nullptr) e.row_bias += i0 * bias_stride;
    if (e.col_bias != nullptr) e.col_bias += j0 * col_bias_stride;
    if (e.residual != nullptr) e.residual += i0 * res_rs + j0 * res_cs;
    return e;
  }

  /// Applies it to the m×n block of C at c (strides c_rs, c_cs) whose first
  /// element is this epilogue's (0, 0).
  void apply(int64_t m, int64_t n, T* c, int64_t c_rs, int64_t c_cs) const {
    for (int64_t i = 0; i < m; ++i) {
      T* row = c + i * c_rs;
      const T b = row_bias != nullptr ? row_bias[i * bias_stride] : T(0);
      const T* res = residual != nullptr ? residual + i * res_rs : nullptr;
      if (c_cs == 1 && (res == nullptr || res_cs == 1) &&
          (col_bias == nullptr || col_bias_stride == 1)) {
        apply_row_contiguous(n, row, b, res);
        continue;
      }
      for (int64_t j = 0; j < n; ++j) {
        T v = row[j * c_cs];
        if (row_bias != nullptr) v += b;
        if (col_bias != nullptr) v += col_bias[j * col_bias_stride];
        if (res != nullptr) v += res[j * res_cs];
        row[j * c_cs] = clamp ? clamp_value(v) : v;
      }
    }
    activate_block(m, n, c, c_rs, c_cs);
  }

 private:
  T clamp_value(T v) const {
    // NaN fails both tests and passes through.
    if (v < lo) return lo;
    if (v > hi) return hi;
    return v;
  }

  // Separate loops per case so the compiler vectorises each.
  void apply_row_contiguous(int64_t n, T* row, T b, const T* res) const {
    if (row_bias != nullptr) {
      for (int64_t j = 0; j < n; ++j) row[j] += b;
    }
    if (col_bias != nullptr) {
      for (int64_t j = 0; j < n; ++j) row[j] += col_bias[j];
    }
    if (res != nullptr) {
      for (int64_t j = 0; j < n; ++j) row[j] += res[j];
    }
    if (clamp) {
      const T l = lo, h = hi;
      for (int64_t j = 0; j < n; ++j) {
        const T v = row[j];
        row[j] = v < l ? l : (v > h ? h : v);
      }
    }
  }
};

/// The same for float, vectorised: one pass per row doing the bias, the
/// residual and the clamp together (not the activation: activate_block after).
/// Only for c_cs == 1 with contiguous column bias and residual rows (the
/// caller checks); the generic `apply` does the rest.
/// Call each only when the CPU has its ISA (gemm.h's dispatch does).
void f32_epilogue_avx512f(const GemmEpilogue<float>& ep, int64_t m, int64_t n, float* c,
                          int64_t c_rs);
void f32_epilogue_avx2(const GemmEpilogue<float>& ep, int64_t m, int64_t n, float* c,
                       int64_t c_rs);

/// True when the vectorised epilogues take this call.
inline bool f32_epilogue_vectorisable(const GemmEpilogue<float>& ep, int64_t c_cs) {
  return c_cs == 1 && (ep.col_bias == nullptr || ep.col_bias_stride == 1) &&
         (ep.residual == nullptr || ep.res_cs == 1);
}

}  // namespace ember::kernels::portable
