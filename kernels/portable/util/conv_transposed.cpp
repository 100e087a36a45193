// Transposed convolution: a GEMM path for float32/float64 in 1-D and 2-D and
// a direct path for everything else (see conv_transposed.h).
#include "kernels/portable/util/conv_transposed.h"

#include <cinttypes>
#include <type_traits>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/dtype.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/parallel.h"

namespace ember::kernels::portable {
namespace {

// Sizes and element strides with the spatial dims right-aligned in 3 slots;
// unused leading slots have size 1, kernel 1, stride 1, padding 0, dilation
// 1 and memory stride 0.
struct TransposedGeometry {
  int64_t cg = 0, ocg = 0;  // Input and output channels per group.
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
  int64_t x_n = 0, x_c = 0, xs[3] = {0, 0, 0};
  int64_t w_ci = 0, w_oc = 0, ws[3] = {0, 0, 0};
  int64_t o_n = 0, o_c = 0, os[3] = {0, 0, 0};
  int64_t bias = 0;
};

// Direct loop, one output element at a time: an output position o along a
// dim gathers the taps k with o + pad − k·dil = i·stride for an input i in
// range. Floating types accumulate in double (3-D float32 sums up to
// C·k³ products: float accumulation drifted 2e-5 from eager on an OpInfo
// sample), integers in wrapping int64 (as conv_direct.h).
template <typename S>
void transposed_direct(const S* x, const S* w, const S* bv, S* o, int64_t batch, int64_t groups,
                       const TransposedGeometry& g) {
  using CT = compute_t<S>;
  using Acc = std::conditional_t<std::is_integral_v<CT>, int64_t, double>;
  // Input index for output position p and tap k of slot d; -1 when none.
  auto source = [&g](int d, int64_t p, int64_t k) -> int64_t {
    const int64_t t = p + g.pad[d] - k * g.dil[d];
    if (t < 0 || t % g.stride[d] != 0) return -1;
    const int64_t i = t / g.stride[d];
    return i < g.in[d] ? i : -1;
  };
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t grp = 0; grp < groups; ++grp) {
      const S* xg = x + b * g.x_n + grp * g.cg * g.x_c;
      const S* wg = w + grp * g.cg * g.w_ci;
      for (int64_t ocl = 0; ocl < g.ocg; ++ocl) {
        const int64_t oc = grp * g.ocg + ocl;
        const Acc init =
            bv != nullptr ? static_cast<Acc>(convert<CT>(bv[oc * g.bias])) : Acc(0);
        const S* wo = wg + ocl * g.w_oc;
        S* ob = o + b * g.o_n + oc * g.o_c;
        for (int64_t p0 = 0; p0 < g.out[0]; ++p0) {
          for (int64_t p1 = 0; p1 < g.out[1]; ++p1) {
            for (int64_t p2 = 0; p2 < g.out[2]; ++p2) {
              Acc acc = init;
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
                const int64_t i0 = source(0, p0, k0);
                if (i0 < 0) continue;
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
                  const int64_t i1 = source(1, p1, k1);
                  if (i1 < 0) continue;
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const int64_t i2 = source(2, p2, k2);
                    if (i2 < 0) continue;
                    const S* xp = xg + i0 * g.xs[0] + i1 * g.xs[1] + i2 * g.xs[2];
                    const S* wp = wo + k0 * g.ws[0] + k1 * g.ws[1] + k2 * g.ws[2];
                    for (int64_t c = 0; c < g.cg; ++c) {
                      const Acc xv = static_cast<Acc>(convert<CT>(xp[c * g.x_c]));
                      const Acc wv = static_cast<Acc>(convert<CT>(wp[c * g.w_ci]));
                      acc = wrap_add(acc, wrap_mul(xv, wv));
                    }
                  }
                }
              }
              ob[p0 * g.os[0] + p1 * g.os[1] + p2 * g.os[2]] = convert<S>(static_cast<CT>(acc));
            }
          }
        }
      }
    }
  }
}

// A = the group's weight seen as [OCg·KH·KW, Cg]: row r = (oc, ky, kx),
// column c = input channel; rows from `row0` on.
template <typename T>
struct TransposedWeightSource {
  const T* w;  // At the group's first input channel.
  int64_t s_ci, s_oc, s_h, s_w;
  int64_t kh, kw;
  int64_t row0;

  template <int kMR>
  void pack_a(int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) const {
    const int64_t kk = kh * kw;
    for (int64_t s = 0; s < mc; s += kMR) {
      const int64_t rows = mc - s < kMR ? mc - s : kMR;
      int64_t off[kMR];
      for (int64_t ii = 0; ii < rows; ++ii) {
        const int64_t r = row0 + i0 + s + ii;
        const int64_t oc = r / kk;
        const int64_t rem = r - oc * kk;
        const int64_t y = rem / kw;
        off[ii] = oc * s_oc + y * s_h + (rem - y * kw) * s_w;
      }
      for (int64_t p = 0; p < kc; ++p) {
        const T* src = w + (p0 + p) * s_ci;
        T* d = dst + p * kMR;
        for (int64_t ii = 0; ii < kMR; ++ii) d[ii] = ii < rows ? src[off[ii]] : T(0);
      }
      dst += kc * kMR;
    }
  }
};

// Scratch for one block of columns, on the stack of each task.
constexpr int64_t kColBytes = 64 * 1024;
// Rows of col per block: whole output channels where a channel has fewer taps.
constexpr int64_t kRowBlock = 64;

// Adds a [mr × nc] block of col (rows r0.., input positions j0..) into the
// output channels of one (batch, group) at `o`: row (oc, ky, kx) and input
// (ih, iw) land on (ih·sh − ph + ky·dh, iw·sw − pw + kx·dw) when inside.
template <typename T>
void scatter_cols(const T* col, int64_t r0, int64_t mr, int64_t j0, int64_t nc,
                  const TransposedGeometry& g, T* o) {
  const int64_t kh = g.k[1], kw = g.k[2], kk = kh * kw;
  const int64_t in_w = g.in[2], out_h = g.out[1], out_w = g.out[2];
  const int64_t sh = g.stride[1], sw = g.stride[2];
  const int64_t o_h = g.os[1], o_w = g.os[2];
  for (int64_t i = 0; i < mr; ++i) {
    const int64_t r = r0 + i;
    const int64_t oc = r / kk;
    const int64_t rem = r - oc * kk;
    const int64_t ky = rem / kw;
    const int64_t kx = rem - ky * kw;
    T* plane = o + oc * g.o_c;
    const T* crow = col + i * nc;
    const int64_t dy = ky * g.dil[1] - g.pad[1];
    const int64_t dx = kx * g.dil[2] - g.pad[2];
    int64_t ih = j0 / in_w;
    int64_t iw = j0 - ih * in_w;
    for (int64_t t = 0; t < nc; ++ih, iw = 0) {
      const int64_t len = nc - t < in_w - iw ? nc - t : in_w - iw;
      const int64_t oh = ih * sh + dy;
      if (oh >= 0 && oh < out_h) {
        T* orow = plane + oh * o_h;
        const int64_t ow0 = iw * sw + dx;  // Output column of the run's first input.
        int64_t lo = ow0 >= 0 ? 0 : (-ow0 + sw - 1) / sw;
        int64_t hi = ow0 >= out_w ? 0 : (out_w - 1 - ow0) / sw + 1;
        if (hi > len) hi = len;
        if (lo > hi) lo = hi;
        const T* src = crow + t;
        if (sw == 1 && o_w == 1) {
          T* __restrict dst = orow + (ow0 + lo);
          for (int64_t u = 0; u < hi - lo; ++u) dst[u] += src[lo + u];
        } else {
          for (int64_t u = lo; u < hi; ++u) orow[(ow0 + u * sw) * o_w] += src[u];
        }
      }
      t += len;
    }
  }
}

// One (batch, group) channel block [oc0, oc1): out = bias, then per block of
// col = Aᵀ-rows × input columns, one GEMM and one scatter. The blocks depend
// only on the shapes, so every output element adds the same terms in the
// same order whatever thread runs it.
template <typename T>
void transposed_gemm_block(const T* xg, const TransposedWeightSource<T>& a_base, const T* bv,
                           T* og, int64_t oc_first, int64_t oc0, int64_t oc1,
                           const TransposedGeometry& g) {
  constexpr int64_t kCol = kColBytes / static_cast<int64_t>(sizeof(T));
  alignas(64) T col[kCol];
  const int64_t kk = g.k[1] * g.k[2];
  const int64_t n = g.in[1] * g.in[2];
  for (int64_t oc = oc0; oc < oc1; ++oc) {
    const T v = bv != nullptr ? bv[(oc_first + oc) * g.bias] : T(0);
    T* plane = og + oc * g.o_c;
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      T* orow = plane + oh * g.os[1];
      for (int64_t ow = 0; ow < g.out[2]; ++ow) orow[ow * g.os[2]] = v;
    }
  }
  const int64_t row_end = oc1 * kk;
  for (int64_t r0 = oc0 * kk; r0 < row_end; r0 += kRowBlock) {
    const int64_t mr = row_end - r0 < kRowBlock ? row_end - r0 : kRowBlock;
    TransposedWeightSource<T> a = a_base;
    a.row0 = r0;
    const int64_t cols = kCol / mr;
    for (int64_t j0 = 0; j0 < n; j0 += cols) {
      const int64_t nc = n - j0 < cols ? n - j0 : cols;
      // Input positions flatten with one stride (checked by the caller).
      const StridedMatrix<T> b{xg + j0 * g.xs[2], g.x_c, g.xs[2]};
      gemm<T>(mr, nc, g.cg, a, b, T(1), T(0), col, nc, 1);
      scatter_cols(col, r0, mr, j0, nc, g, og);
    }
  }
}

template <typename T>
void transposed_gemm(KernelContext& ctx, const T* x, const T* w, const T* bv, T* o,
                     int64_t batch, int64_t groups, const TransposedGeometry& g) {
  const int64_t kk = g.k[1] * g.k[2];
  // Channels per block: as many whole channels as fit kRowBlock rows.
  const int64_t occ = kk < kRowBlock ? kRowBlock / kk : 1;
  const int64_t blocks = (g.ocg + occ - 1) / occ;
  const int64_t units = batch * groups * blocks;
  const int64_t macs = batch * groups * g.ocg * kk * g.cg * g.in[1] * g.in[2];
  const int64_t min_units = macs < kGemmParallelMinMacs ? units : 1;
  parallel_range(ctx, units, min_units, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t blk = u % blocks;
      const int64_t bg = u / blocks;
      const int64_t grp = bg % groups;
      const int64_t b = bg / groups;
      const TransposedWeightSource<T> a{w + grp * g.cg * g.w_ci, g.w_ci, g.w_oc, g.ws[1],
                                        g.ws[2], g.k[1], g.k[2], 0};
      const int64_t oc0 = blk * occ;
      const int64_t oc1 = oc0 + occ < g.ocg ? oc0 + occ : g.ocg;
      transposed_gemm_block<T>(x + b * g.x_n + grp * g.cg * g.x_c, a, bv,
                               o + b * g.o_n + grp * g.ocg * g.o_c, grp * g.ocg, oc0, oc1, g);
    }
  });
}

}  // namespace

void conv_transposed_out(KernelContext& ctx, const Tensor& input, const Tensor& weight,
                         const Tensor* bias, const ConvConfig& config, Tensor& out) {
  char msg[400];
  if (!conv_check_weight(config, weight.shape(), input.sizes[1], msg, sizeof(msg))) {
    ctx.fail(Error::InvalidArgument, "%s", msg);
    return;
  }
  const int64_t groups = config.groups;
  const int64_t oc_total = conv_out_channels(config, weight.shape());
  if (bias != nullptr) {
    EMBER_KERNEL_CHECK(ctx, bias->dim == 1 && bias->sizes[0] == oc_total,
                       "bias: expected shape [%" PRId64 "] (weight shape %s, %" PRId64
                       " groups), got %s",
                       oc_total, ShapeStr(weight.shape()).c_str(), groups,
                       ShapeStr(bias->shape()).c_str());
  }
  const int32_t nd = config.spatial;
  TransposedGeometry g;
  g.cg = weight.sizes[0] / groups;
  g.ocg = weight.sizes[1];
  int32_t shape[5] = {input.sizes[0], static_cast<int32_t>(oc_total), 0, 0, 0};
  for (int32_t d = 0; d < nd; ++d) {
    const int32_t s = 3 - nd + d;
    g.in[s] = input.sizes[2 + d];
    g.k[s] = weight.sizes[2 + d];
    g.stride[s] = config.stride[d];
    g.pad[s] = config.padding[d];
    g.dil[s] = config.dilation[d];
    g.xs[s] = input.strides[2 + d];
    g.ws[s] = weight.strides[2 + d];
    if (!conv_output_size(config, d, g.in[s], g.k[s], &g.out[s], msg, sizeof(msg))) {
      ctx.fail(Error::InvalidArgument, "%s (input shape %s, weight shape %s)", msg,
               ShapeStr(input.shape()).c_str(), ShapeStr(weight.shape()).c_str());
      return;
    }
    shape[2 + d] = static_cast<int32_t>(g.out[s]);
  }
  if (!resize_out(ctx, out, {shape, static_cast<size_t>(input.dim)})) return;
  if (out.numel == 0) return;
  g.x_n = input.strides[0];
  g.x_c = input.strides[1];
  g.w_ci = weight.strides[0];
  g.w_oc = weight.strides[1];
  g.o_n = out.strides[0];
  g.o_c = out.strides[1];
  for (int32_t d = 0; d < nd; ++d) g.os[3 - nd + d] = out.strides[2 + d];
  g.bias = bias != nullptr ? bias->strides[0] : 0;
  const int64_t batch = input.sizes[0];

  // The GEMM reads the input positions of a channel as one strided row.
  const bool gemm_path = nd <= 2 && (g.in[1] == 1 || g.xs[1] == g.in[2] * g.xs[2]) &&
                         (input.dtype == ScalarType::Float || input.dtype == ScalarType::Double);
  bool ok = false;
  if (gemm_path) {
    ok = dispatch_dtype<kF32F64>(input.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      transposed_gemm<T>(ctx, input.data_ptr<const T>(), weight.data_ptr<const T>(),
                         bias != nullptr ? bias->data_ptr<const T>() : nullptr, out.data_ptr<T>(),
                         batch, groups, g);
    });
  } else {
    ok = dispatch_dtype<kRealTypes>(input.dtype, [&](auto tag) {
      using S = typename decltype(tag)::type;
      transposed_direct<S>(input.data_ptr<const S>(), weight.data_ptr<const S>(),
                           bias != nullptr ? bias->data_ptr<const S>() : nullptr,
                           out.data_ptr<S>(), batch, groups, g);
    });
  }
  if (!ok) fail_dtype(ctx, "input", input.dtype);
}

}  // namespace ember::kernels::portable
