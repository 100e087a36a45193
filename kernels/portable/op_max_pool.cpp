// aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[],
//     int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out,
//     Tensor(b!) indices)
// aten::max_pool3d_with_indices.out(... the same with int[3] ...)
// ember_fused::max_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[],
//     int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out)
//     (the 2-D pool's values without the indices nobody reads:
//     passes/max_pool_without_indices.py)
//
// indices (int64) are flat positions within each input plane (d·H·W + h·W + w),
// as in eager; the first maximum wins, and a NaN wins over numbers (the last
// NaN, as eager's loop does). Real dtypes; any dim order. float32 and int8
// 2-D pools over rows contiguous in W (NCHW) take a row path: the columns whose
// windows lie inside the input are computed a block of outputs at a time, tap
// by tap, so the compiler vectorises them (AVX2 where the host has it), or at
// stride 2 without indices by max_pool_row_s2.h's intrinsics; the planes are
// split over the thread pool.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "kernels/generated/functions/portable/op_max_pool.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/gemm.h"  // cpu_has_avx2_fma, cpu_has_avx512f
#include "kernels/portable/util/isa_target.h"
#include "kernels/portable/util/max_pool_row_s2.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/pool.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/portable/util/window_max.h"

namespace ember::kernels::portable {
namespace {

// The smallest value of T: where a window's running maximum starts.
template <typename T>
constexpr T lowest() {
  if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
  return std::numeric_limits<T>::lowest();
}

template <typename T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  return false;
}

// One output row's columns [0, len) of a float32 or int8 2-D pool whose windows lie
// inside the input row (no column padding, dilation 1): `rows` are the
// window's input rows (already offset to the first column the first output
// reads), `base` their flat positions in the plane. Blocks of kBlock
// outputs go tap by tap, so each tap's loop over outputs vectorises.
template <typename T, int kStride>
inline void max_pool_row_body(const T* const* rows, const int64_t* base, int nrows,
                              int64_t kw, int64_t len, T* y, int64_t* ix) {
  constexpr int kBlock = 64;
  if (ix == nullptr) {
    // Values only (ember_fused::max_pool2d): one max per tap, no positions.
    for (int64_t b0 = 0; b0 < len; b0 += kBlock) {
      const int n = len - b0 < kBlock ? static_cast<int>(len - b0) : kBlock;
      T best[kBlock];
      for (int j = 0; j < kBlock; ++j) best[j] = lowest<T>();
      for (int r = 0; r < nrows; ++r) {
        for (int64_t k = 0; k < kw; ++k) {
          const T* src = rows[r] + b0 * kStride + k;
          for (int j = 0; j < n; ++j) {
            const T v = src[j * kStride];
            best[j] = v > best[j] || is_nan(v) ? v : best[j];
          }
        }
      }
      for (int j = 0; j < n; ++j) y[b0 + j] = best[j];
    }
    return;
  }
  for (int64_t b0 = 0; b0 < len; b0 += kBlock) {
    const int n = len - b0 < kBlock ? static_cast<int>(len - b0) : kBlock;
    // Positions relative to the first tap of output b0, in 32 bits like the
    // values, so both vectorise in the same lanes (a window spans < 2^31).
    T best[kBlock];
    int32_t at[kBlock];
    for (int j = 0; j < kBlock; ++j) {
      best[j] = lowest<T>();
      at[j] = j * kStride;
    }
    for (int r = 0; r < nrows; ++r) {
      for (int64_t k = 0; k < kw; ++k) {
        const T* src = rows[r] + b0 * kStride + k;
        const int32_t pos = static_cast<int32_t>(base[r] - base[0] + k);
        for (int j = 0; j < n; ++j) {
          const T v = src[j * kStride];
          // As the scalar loop: a larger value, or a NaN, takes the place.
          const bool take = v > best[j] || is_nan(v);
          best[j] = take ? v : best[j];
          at[j] = take ? pos + j * kStride : at[j];
        }
      }
    }
    const int64_t origin = base[0] + b0 * kStride;
    for (int j = 0; j < n; ++j) {
      y[b0 + j] = best[j];
      ix[b0 + j] = origin + at[j];
    }
  }
}

template <typename T>
using MaxPoolRowFn = void (*)(const T* const*, const int64_t*, int, int64_t, int64_t, T*,
                              int64_t*);

template <typename T, int kStride>
void max_pool_row(const T* const* rows, const int64_t* base, int nrows, int64_t kw, int64_t len,
                  T* y, int64_t* ix) {
  max_pool_row_body<T, kStride>(rows, base, nrows, kw, len, y, ix);
}

#if EMBER_ISA_X86
template <typename T, int kStride>
EMBER_TARGET_AVX2_FMA void max_pool_row_avx2(const T* const* rows, const int64_t* base,
                                             int nrows, int64_t kw, int64_t len, T* y,
                                             int64_t* ix) {
  max_pool_row_body<T, kStride>(rows, base, nrows, kw, len, y, ix);
}
template <typename T, int kStride>
EMBER_TARGET_AVX512 void max_pool_row_avx512(const T* const* rows, const int64_t* base,
                                             int nrows, int64_t kw, int64_t len, T* y,
                                             int64_t* ix) {
  max_pool_row_body<T, kStride>(rows, base, nrows, kw, len, y, ix);
}
#endif

template <typename T>
MaxPoolRowFn<T> select_max_pool_row(int64_t stride) {
#if EMBER_ISA_X86
  if (cpu_has_avx512f()) {
    return stride == 1 ? &max_pool_row_avx512<T, 1> : &max_pool_row_avx512<T, 2>;
  }
  if (cpu_has_avx2_fma()) return stride == 1 ? &max_pool_row_avx2<T, 1> : &max_pool_row_avx2<T, 2>;
#endif
  return stride == 1 ? &max_pool_row<T, 1> : &max_pool_row<T, 2>;
}

// Values only at stride 2 (max_pool_row_s2.h): the vector forms, or null.
template <typename T>
using MaxPoolRowS2Fn = void (*)(const T* const*, int, int64_t, int64_t, T*);

template <typename T>
MaxPoolRowS2Fn<T> select_max_pool_row_s2() {
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx512f()) return &max_pool_row_s2_f32_avx512;
    if (cpu_has_avx2_fma()) return &max_pool_row_s2_f32_avx2;
  } else if constexpr (std::is_same_v<T, int8_t>) {
    if (cpu_has_avx512f()) return &max_pool_row_s2_i8_avx512;
    if (cpu_has_avx2_fma()) return &max_pool_row_s2_i8_avx2;
  }
  return nullptr;
}

// The planes of a float32 or int8 2-D pool with W contiguous in input, out
// and indices, column stride 1 or 2 and dilation 1: interior columns by rows
// (above), the rest element by element. Planes split over the pool.
template <typename T>
void max_pool_2d_rows(KernelContext& ctx, const Tensor& input, Tensor& out, Tensor* indices,
                      const PoolGeometry& g, int64_t ix_n, int64_t ix_c, const int64_t* ix_sp) {
  const T* x = input.data_ptr<const T>();
  T* y = out.data_ptr<T>();
  int64_t* ix = indices != nullptr ? indices->data_ptr<int64_t>() : nullptr;
  const int64_t kh = g.k[1], kw = g.k[2], sh = g.s[1], sw = g.s[2], ph = g.p[1], pw = g.p[2];
  const int64_t in_h = g.in[1], in_w = g.in[2], out_h = g.out[1], out_w = g.out[2];
  // Columns [lo, hi) read only inside the row: ow·sw - pw >= 0 and ow·sw - pw + kw <= in_w.
  const int64_t lo = std::min(out_w, (pw + sw - 1) / sw);
  const int64_t hi = std::max(lo, std::min(out_w, in_w + pw - kw >= 0 ? (in_w + pw - kw) / sw + 1 : 0));
  const MaxPoolRowFn<T> row_fn = select_max_pool_row<T>(sw);
  const MaxPoolRowS2Fn<T> row_s2_fn = sw == 2 && ix == nullptr ? select_max_pool_row_s2<T>() : nullptr;
  const int64_t planes = g.batch * g.channels;
  const int64_t per_plane = out_h * out_w * kh * kw;
  parallel_range(ctx, planes, std::max<int64_t>(1, kParallelMinElements / std::max<int64_t>(1, per_plane)),
                 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / g.channels, c = p % g.channels;
      const T* plane = x + g.in_offset(n, c);
      T* yp = y + g.out_offset(n, c);
      int64_t* ixp = ix != nullptr ? ix + n * ix_n + c * ix_c : nullptr;
      for (int64_t oh = 0; oh < out_h; ++oh) {
        const int64_t h_first = oh * sh - ph;
        const int64_t h0 = std::max<int64_t>(h_first, 0);
        const int64_t h1 = std::min(h_first + kh, in_h);
        T* yr = yp + oh * g.out_sp[1];
        int64_t* ixr = ixp != nullptr ? ixp + oh * ix_sp[1] : nullptr;
        // Edge columns ([0, lo) and [hi, out_w)): the window clipped to the row.
        for (int64_t ow = lo == 0 ? hi : 0; ow < out_w; ow = ow + 1 == lo ? hi : ow + 1) {
          const int64_t w_first = ow * sw - pw;
          const int64_t w0 = std::max<int64_t>(w_first, 0);
          const int64_t w1 = std::min(w_first + kw, in_w);
          T best = lowest<T>();
          int64_t best_i = h0 * in_w + w0;
          for (int64_t ih = h0; ih < h1; ++ih) {
            const T* row = plane + ih * g.in_sp[1];
            for (int64_t iw = w0; iw < w1; ++iw) {
              const T v = row[iw];
              if (v > best || is_nan(v)) {
                best = v;
                best_i = ih * in_w + iw;
              }
            }
          }
          yr[ow] = best;
          if (ixr != nullptr) ixr[ow] = best_i;
        }
        if (hi > lo && h1 > h0) {
          const T* rows[16];
          int64_t base[16];
          int nrows = 0;
          for (int64_t ih = h0; ih < h1; ++ih, ++nrows) {
            rows[nrows] = plane + ih * g.in_sp[1] + (lo * sw - pw);
            base[nrows] = ih * in_w + (lo * sw - pw);
          }
          if (row_s2_fn != nullptr) {
            row_s2_fn(rows, nrows, kw, hi - lo, yr + lo);
          } else {
            row_fn(rows, base, nrows, kw, hi - lo, yr + lo, ixr != nullptr ? ixr + lo : nullptr);
          }
        }
      }
    }
  });
}

// indices null: the values only (ember_fused::max_pool2d).
template <typename S>
void max_pool(KernelContext& ctx, const Tensor& input, Tensor& out, Tensor* indices,
              const PoolGeometry& g) {
  using CT = compute_t<S>;
  int64_t ix_n = 0, ix_c = 0, ix_sp[3] = {0, 0, 1};
  if (indices != nullptr) pool_out_strides(input, *indices, g.nd, &ix_n, &ix_c, ix_sp);
  if constexpr (std::is_same_v<S, float> || std::is_same_v<S, int8_t>) {
    const bool rows = g.in[0] == 1 && g.out[0] == 1 && g.k[0] == 1 && g.in_sp[2] == 1 &&
                      g.out_sp[2] == 1 && ix_sp[2] == 1 && g.d[1] == 1 && g.d[2] == 1 &&
                      (g.s[2] == 1 || g.s[2] == 2) && g.k[1] <= 16 &&
                      g.in[1] * g.in[2] < (int64_t{1} << 31);
    if (rows) {
      max_pool_2d_rows<S>(ctx, input, out, indices, g, ix_n, ix_c, ix_sp);
      return;
    }
  }
  const S* x = input.data_ptr<const S>();
  S* y = out.data_ptr<S>();
  int64_t* ix = indices != nullptr ? indices->data_ptr<int64_t>() : nullptr;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < g.channels; ++c) {
      const S* plane = x + g.in_offset(n, c);
      PoolWindow win{{}, {}, {g.d[0], g.d[1], g.d[2]}};
      for (int64_t od = 0; od < g.out[0]; ++od) {
        win.lo[0] = od * g.s[0] - g.p[0];
        win.hi[0] = std::min(win.lo[0] + (g.k[0] - 1) * g.d[0] + 1, g.in[0]);
        while (win.lo[0] < 0) win.lo[0] += g.d[0];
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          win.lo[1] = oh * g.s[1] - g.p[1];
          win.hi[1] = std::min(win.lo[1] + (g.k[1] - 1) * g.d[1] + 1, g.in[1]);
          while (win.lo[1] < 0) win.lo[1] += g.d[1];
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            win.lo[2] = ow * g.s[2] - g.p[2];
            win.hi[2] = std::min(win.lo[2] + (g.k[2] - 1) * g.d[2] + 1, g.in[2]);
            while (win.lo[2] < 0) win.lo[2] += g.d[2];
            CT best;
            int64_t best_i;
            window_max(plane, g, win, &best, &best_i);
            y[g.out_offset(n, c) + od * g.out_sp[0] + oh * g.out_sp[1] + ow * g.out_sp[2]] =
                convert<S>(best);
            if (ix != nullptr) {
              ix[n * ix_n + c * ix_c + od * ix_sp[0] + oh * ix_sp[1] + ow * ix_sp[2]] = best_i;
            }
          }
        }
      }
    }
  }
}

template <int kNd>
void max_pool_with_indices_out(KernelContext& ctx, const Tensor& self, IntSpan kernel_size,
                               IntSpan stride, IntSpan padding, IntSpan dilation, bool ceil_mode,
                               Tensor& out, Tensor& indices) {
  PoolGeometry g;
  if (!pool_input(ctx, self, kNd, &g) ||
      !pool_windows(ctx, kernel_size, stride, padding, dilation, ceil_mode, &g)) {
    return;
  }
  if (!check_dtype(ctx, out, "out", self.dtype) ||
      !check_dtype(ctx, indices, "indices", ScalarType::Long)) {
    return;
  }
  if (!pool_resize_out(ctx, self, out, &g) || !resize_out(ctx, indices, out.shape())) return;
  if (out.numel == 0) return;
  const bool ok = dispatch_dtype<kRealTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    max_pool<S>(ctx, self, out, &indices, g);
  });
  if (!ok) fail_dtype(ctx, "self", self.dtype);
}

}  // namespace

void max_pool2d_out(KernelContext& ctx, const Tensor& self, IntSpan kernel_size, IntSpan stride,
                    IntSpan padding, IntSpan dilation, bool ceil_mode, Tensor& out) {
  PoolGeometry g;
  if (!pool_input(ctx, self, 2, &g) ||
      !pool_windows(ctx, kernel_size, stride, padding, dilation, ceil_mode, &g)) {
    return;
  }
  if (!check_dtype(ctx, out, "out", self.dtype)) return;
  if (!pool_resize_out(ctx, self, out, &g)) return;
  if (out.numel == 0) return;
  const bool ok = dispatch_dtype<kRealTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    max_pool<S>(ctx, self, out, nullptr, g);
  });
  if (!ok) fail_dtype(ctx, "self", self.dtype);
}

void max_pool2d_with_indices_out(KernelContext& ctx, const Tensor& self, IntSpan kernel_size,
                                 IntSpan stride, IntSpan padding, IntSpan dilation,
                                 bool ceil_mode, Tensor& out, Tensor& indices) {
  max_pool_with_indices_out<2>(ctx, self, kernel_size, stride, padding, dilation, ceil_mode, out,
                               indices);
}

void max_pool3d_with_indices_out(KernelContext& ctx, const Tensor& self, IntSpan kernel_size,
                                 IntSpan stride, IntSpan padding, IntSpan dilation,
                                 bool ceil_mode, Tensor& out, Tensor& indices) {
  max_pool_with_indices_out<3>(ctx, self, kernel_size, stride, padding, dilation, ceil_mode, out,
                               indices);
}

}  // namespace ember::kernels::portable
