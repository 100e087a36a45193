// aten::convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride,
//     SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding,
//     SymInt groups, *, Tensor(a!) out) -> Tensor(a!)
//
// 1-D ([N, C, L]), 2-D ([N, C, H, W]) and 3-D ([N, C, D, H, W]) convolution
// with groups, in float32/float64/float16/bfloat16 and the integer dtypes
// (all tensors one dtype), any dim orders (e.g. channels-last). Transposed
// convolution (transposed = true) is util/conv_transposed.h; the
// configuration is checked by util/conv_config.h, at load_method too (the
// prepare step, convolution_out_prepare). For 1-D and 2-D float32/float64 each
// (batch, group) is one GEMM: out[OCg × OH·OW] = weight[OCg × Cg·KH·KW] ·
// columns, where the im2col columns are packed straight into the GEMM's panels
// (no column buffer). Depthwise convolutions (one input channel per group, at
// most 4 output channels per group) skip the GEMM for a direct loop
// (run_depthwise). 3-D and the other dtypes take util/conv_direct.h.
// ember_fused::fused_convolution may carry a constant bfloat16 weight with a
// float32 input (Ember's bf16 precision, passes/bf16_precision.py): prepare packs
// it for util/gemm_bf16.h and each (batch, group) is one bf16 GEMM.
//
// Prepare packs a constant float32 weight once into the GEMM's A panels
// (PackedPanels, in method-allocator memory): execute then reads them in
// place instead of repacking the weight of every group on every call. A
// 3×3, stride-1 convolution large enough to gain is packed for Winograd
// F(4×4, 3×3) instead (util/conv_winograd.h; EMBER_WINOGRAD=0 keeps im2col).
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/conv_config.h"
#include "kernels/portable/util/conv_direct.h"
#include "kernels/portable/util/conv_transposed.h"
#include "kernels/portable/util/conv_winograd.h"
#include "kernels/portable/util/convolution.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/depthwise_s2_f32.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/conv_bf16_amx.h"
#include "kernels/portable/util/gemm_bf16.h"
#include "kernels/portable/util/gemv.h"
#include "kernels/portable/util/half.h"
#include "kernels/portable/util/isa_target.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/transpose_f32.h"
#include "kernels/generated/functions/portable/op_convolution.h"

namespace ember::kernels::portable {
namespace {

struct ConvGeometry {
  int64_t c_per_group, kh, kw;
  int64_t in_h, in_w, out_h, out_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
};

// What prepare leaves: the constant float32 weight, packed per group as
// the GEMM's A operand ([OCg, Cg·KH·KW] each).
struct ConvPrepared {
  const void* weight_data = nullptr;  // The constant it was packed from.
  const float* packed = nullptr;
  int64_t group_stride = 0;  // Elements between two groups' panels.
  int64_t ocg = 0, k = 0;
  int tile = 0;
  // The panels are the GEMM's B operand Wᵀ ([Cg·KH·KW, OCg] per group, tile
  // NR): execute computes outᵀ = columnsᵀ · Wᵀ (positions_as_rows).
  bool positions_rows = false;
  WinogradWeights winograd;  // packed != null: 3×3 stride 1 through util/conv_winograd.h.
  Bf16PackedWeight bf16;     // data != null: a bfloat16 weight, group 0's rows.
  int64_t bf16_group_stride = 0;  // Words between two groups' packed rows.
  // The bf16 weight is packed as the GEMM's B (bf16_pack_weight): execute
  // computes outᵀ = columnsᵀ · Wᵀ with bf16_gemm (bf16_positions_rows).
  bool bf16_rows = false;
  // data != null: a 2-D bfloat16 weight packed for the AMX implicit GEMM
  // (util/conv_bf16_amx.h), which execute runs instead of the bf16 GEMM.
  ConvBf16AmxWeights bf16_amx;
};

// Walks k = (c, y, x) of a Cg·KH·KW reduction without divides.
struct KernelIndex {
  int64_t c, y, x;
  KernelIndex(int64_t k, const ConvGeometry& g) {
    const int64_t khw = g.kh * g.kw;
    c = k / khw;
    const int64_t r = k - c * khw;
    y = r / g.kw;
    x = r - y * g.kw;
  }
  void next(const ConvGeometry& g) {
    if (++x == g.kw) {
      x = 0;
      if (++y == g.kh) {
        y = 0;
        ++c;
      }
    }
  }
};

// A = weight of one group seen as [OCg, Cg·KH·KW].
template <typename T>
struct WeightSource {
  const T* w;  // At the group's first output channel.
  int64_t s_oc, s_c, s_h, s_w;
  const ConvGeometry* g;

  template <int kMR>
  void pack_a(int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) const {
    for (int64_t s = 0; s < mc; s += kMR) {
      const int64_t rows = mc - s < kMR ? mc - s : kMR;
      const T* strip = w + (i0 + s) * s_oc;
      KernelIndex ki(p0, *g);
      for (int64_t p = 0; p < kc; ++p, ki.next(*g)) {
        const T* src = strip + ki.c * s_c + ki.y * s_h + ki.x * s_w;
        T* d = dst + p * kMR;
        for (int64_t ii = 0; ii < kMR; ++ii) d[ii] = ii < rows ? src[ii * s_oc] : T(0);
      }
      dst += kc * kMR;
    }
  }
};

// B = im2col columns of one (batch, group): [Cg·KH·KW, OH·OW], zero outside
// the input (padding). A strip of NR output positions is split once into runs
// that stay on one output row; each k row then copies, per run, the span of
// input that is inside and zero-fills the edges, with no per-element
// division or bounds check.
template <typename T>
struct Im2colSource {
  const T* x;  // At the batch's and group's first input channel.
  int64_t s_c, s_h, s_w;
  const ConvGeometry* g;

  struct Run {
    int64_t jj, len;  // Columns [jj, jj + len) of the strip.
    int64_t ih, iw;   // Input coordinates of the run's first output for tap (0, 0).
  };

  template <int kNR>
  void pack_b(int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) const {
    const ConvGeometry& geo = *g;
    const bool unit_w = geo.stride_w == 1 && s_w == 1;
    for (int64_t s = 0; s < nc; s += kNR) {
      const int64_t cols = nc - s < kNR ? nc - s : kNR;
      Run runs[kNR];
      int nruns = 0;
      {
        const int64_t col = j0 + s;
        int64_t oh = col / geo.out_w;
        int64_t ow = col - oh * geo.out_w;
        for (int64_t jj = 0; jj < cols; ++oh, ow = 0) {
          const int64_t len = cols - jj < geo.out_w - ow ? cols - jj : geo.out_w - ow;
          runs[nruns++] = {jj, len, oh * geo.stride_h - geo.pad_h, ow * geo.stride_w - geo.pad_w};
          jj += len;
        }
      }
      KernelIndex ki(p0, geo);
      for (int64_t p = 0; p < kc; ++p, ki.next(geo)) {
        T* d = dst + p * kNR;
        const T* plane = x + ki.c * s_c;
        const int64_t dy = ki.y * geo.dil_h;
        const int64_t dx = ki.x * geo.dil_w;
        for (int r = 0; r < nruns; ++r) {
          const Run& run = runs[r];
          T* dr = d + run.jj;
          const int64_t ih = run.ih + dy;
          if (ih < 0 || ih >= geo.in_h) {
            for (int64_t t = 0; t < run.len; ++t) dr[t] = T(0);
            continue;
          }
          const T* row = plane + ih * s_h;
          const int64_t iw = run.iw + dx;  // Output t of the run reads iw + t·stride_w.
          int64_t lo, hi;
          if (geo.stride_w == 1) {
            lo = iw >= 0 ? 0 : -iw;
            hi = geo.in_w - iw;
          } else {
            lo = iw >= 0 ? 0 : (-iw + geo.stride_w - 1) / geo.stride_w;
            hi = iw >= geo.in_w ? 0 : (geo.in_w - 1 - iw) / geo.stride_w + 1;
          }
          if (hi > run.len) hi = run.len;
          if (hi < 0) hi = 0;  // The whole run is right of the input.
          if (lo > hi) lo = hi;
          for (int64_t t = 0; t < lo; ++t) dr[t] = T(0);
          if (unit_w) {
            const T* src = row + iw;
            for (int64_t t = lo; t < hi; ++t) dr[t] = src[t];
          } else if (geo.stride_w == 2 && s_w == 1) {
            // A constant stride the compiler vectorises (even lanes of two
            // loads): ResNet's 7×7 stride-2 stem.
            const T* src = row + iw + 2 * lo;
            T* d = dr + lo;
            for (int64_t t = 0; t < hi - lo; ++t) d[t] = src[2 * t];
          } else {
            for (int64_t t = lo; t < hi; ++t) dr[t] = row[(iw + t * geo.stride_w) * s_w];
          }
          for (int64_t t = hi; t < run.len; ++t) dr[t] = T(0);
        }
        for (int64_t jj = cols; jj < kNR; ++jj) d[jj] = T(0);
      }
      dst += kc * kNR;
    }
  }
};

// The bf16 GEMM takes output positions as its rows on planes of at most this
// many (1×1 layers: of at most kBf16RowsAlways, unless their depth is large).
constexpr int64_t kBf16RowsMaxPositions = 196;
constexpr int64_t kBf16RowsAlways = 64;

// Depthwise convolution (one input channel per group, output channel oc
// reads input channel oc / multiplier): a GEMM per channel would have m ≤ 4
// and k = KH·KW, so this is a direct loop instead. Strides in elements, with
// the 1-D case seen as H == 1.
struct DepthwiseStrides {
  int64_t x_n, x_c, x_h, x_w;
  int64_t w_oc, w_h, w_w;
  int64_t o_n, o_c, o_h, o_w;
  int64_t bias;
};

// Output columns [lo, hi) read only inside the input for every kernel column.
inline void interior_cols(const ConvGeometry& g, int64_t* lo, int64_t* hi) {
  int64_t l = (g.pad_w + g.stride_w - 1) / g.stride_w;
  const int64_t last = g.in_w - 1 + g.pad_w - (g.kw - 1) * g.dil_w;  // Largest ow·stride_w.
  int64_t h = last < 0 ? 0 : last / g.stride_w + 1;
  if (h > g.out_w) h = g.out_w;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

// The common 3×3 case: out[t] = bias + the nine taps, one pass over a row of
// interior columns whose three input rows are inside (rows x0 + r·row_step),
// for a column stride kS of 1 or 2 (MobileNet's downsampling layers): the
// input columns of out[t] are x[kS·t + c·dil].
template <typename T, int kS>
[[gnu::always_inline]] inline void dw3x3_row_body(T* __restrict out, const T* x0,
                                                  int64_t row_step, int64_t dil, const T* w9,
                                                  T bias, int64_t len) {
  const T* x1 = x0 + row_step;
  const T* x2 = x1 + row_step;
  const T w0 = w9[0], w1 = w9[1], w2 = w9[2], w3 = w9[3], w4 = w9[4], w5 = w9[5], w6 = w9[6],
          w7 = w9[7], w8 = w9[8];
  const int64_t d2 = 2 * dil;
  for (int64_t t = 0; t < len; ++t) {
    const int64_t i = kS * t;
    const T r0 = w0 * x0[i] + w1 * x0[i + dil] + w2 * x0[i + d2];
    const T r1 = w3 * x1[i] + w4 * x1[i + dil] + w5 * x1[i + d2];
    const T r2 = w6 * x2[i] + w7 * x2[i + dil] + w8 * x2[i + d2];
    out[t] = bias + r0 + r1 + r2;
  }
}

template <typename T, int kS>
void dw3x3_row(T* out, const T* x0, int64_t row_step, int64_t dil, const T* w9, T bias,
               int64_t len) {
  dw3x3_row_body<T, kS>(out, x0, row_step, dil, w9, bias, len);
}

#if EMBER_ISA_X86
// The same loops compiled for AVX2 (8 floats a vector instead of SSE2's 4)
// and AVX-512 (16; the same bits as AVX2, isa_target.h).
EMBER_TARGET_AVX2_FMA void dw3x3_row_f32_avx2(float* out, const float* x0, int64_t row_step,
                                              int64_t dil, const float* w9, float bias,
                                              int64_t len) {
  dw3x3_row_body<float, 1>(out, x0, row_step, dil, w9, bias, len);
}
EMBER_TARGET_AVX2_FMA void dw3x3_row_s2_f32_avx2(float* out, const float* x0, int64_t row_step,
                                                 int64_t dil, const float* w9, float bias,
                                                 int64_t len) {
  dw3x3_row_body<float, 2>(out, x0, row_step, dil, w9, bias, len);
}
EMBER_TARGET_AVX512 void dw3x3_row_f32_avx512(float* out, const float* x0, int64_t row_step,
                                              int64_t dil, const float* w9, float bias,
                                              int64_t len) {
  dw3x3_row_body<float, 1>(out, x0, row_step, dil, w9, bias, len);
}
EMBER_TARGET_AVX512 void dw3x3_row_s2_f32_avx512(float* out, const float* x0, int64_t row_step,
                                                 int64_t dil, const float* w9, float bias,
                                                 int64_t len) {
  dw3x3_row_body<float, 2>(out, x0, row_step, dil, w9, bias, len);
}
#endif

// The row function for column stride 1 or 2.
template <typename T>
auto select_dw3x3_row(int64_t stride_w) {
#if EMBER_ISA_X86
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx512f()) {
      return stride_w == 2 ? &dw3x3_row_s2_f32_avx512 : &dw3x3_row_f32_avx512;
    }
    if (cpu_has_avx2_fma()) return stride_w == 2 ? &dw3x3_row_s2_f32_avx2 : &dw3x3_row_f32_avx2;
  }
#endif
  return stride_w == 2 ? &dw3x3_row<T, 2> : &dw3x3_row<T, 1>;
}

// Any layout: one output row at a time, vectorised over W when W is
// contiguous in input and output and stride_w == 1 (3×3: stride_w 1 or 2).
// False (after failing) when the fused op's residual is not of out's shape.
bool residual_fits(KernelContext& ctx, const ConvEpilogue* fused, const Tensor& out) {
  if (fused == nullptr || fused->residual == nullptr) return true;
  const Tensor& r = *fused->residual;
  bool same = r.dim == out.dim;
  for (int32_t d = 0; same && d < out.dim; ++d) same = r.sizes[d] == out.sizes[d];
  if (!same) {
    ctx.fail(Error::InvalidArgument, "residual: shape %s is not the output's %s",
             ShapeStr(r.shape()).c_str(), ShapeStr(out.shape()).c_str());
  }
  return same;
}

// The fused op's clamp as the GEMM epilogue's.
void set_clamp(const ConvEpilogue& fused, GemmEpilogue<float>& ep) {
  if (!fused.lo && !fused.hi) return;
  ep.clamp = true;
  if (fused.lo) ep.lo = static_cast<float>(*fused.lo);
  if (fused.hi) ep.hi = static_cast<float>(*fused.hi);
}

// The fused op's residual and clamp as a pass over a float32 `out` (the
// paths whose output is not written tile by tile by a GEMM): planes split
// over the pool.
void apply_conv_epilogue(KernelContext& ctx, const ConvEpilogue& fused, Tensor& out) {
  GemmEpilogue<float> ep{};
  set_clamp(fused, ep);
  const Tensor* res = fused.residual;
  // [N·C planes] × [spatial]: a plane walks its dims with both tensors' strides.
  const int32_t dim = out.dim;
  const int64_t planes = static_cast<int64_t>(out.sizes[0]) * out.sizes[1];
  int64_t plane_size = 1;
  for (int32_t d = 2; d < dim; ++d) plane_size *= out.sizes[d];
  float* o = out.data_ptr<float>();
  const float* r = res != nullptr ? res->data_ptr<const float>() : nullptr;
  const int64_t inner = out.sizes[dim - 1];
  const int64_t rows = plane_size / (inner > 0 ? inner : 1);
  parallel_range(ctx, planes, kParallelMinCopyElements / (plane_size > 0 ? plane_size : 1), 1,
                 [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / out.sizes[1], c = p % out.sizes[1];
      for (int64_t row = 0; row < rows; ++row) {
        // The row's offsets along dims 2..dim-2 (row-major over them).
        int64_t o_off = n * out.strides[0] + c * out.strides[1];
        int64_t r_off = r != nullptr ? n * res->strides[0] + c * res->strides[1] : 0;
        int64_t rest = row;
        for (int32_t d = dim - 2; d >= 2; --d) {
          const int64_t i = rest % out.sizes[d];
          rest /= out.sizes[d];
          o_off += i * out.strides[d];
          if (r != nullptr) r_off += i * res->strides[d];
        }
        GemmEpilogue<float> row_ep = ep;
        if (r != nullptr) {
          row_ep.residual = r + r_off;
          row_ep.res_cs = res->strides[dim - 1];
        }
        row_ep.apply(1, inner, o + o_off, 0, out.strides[dim - 1]);
      }
    }
  });
}

// The fused op's residual and clamp on one finished output row (in L1):
// vectorised for float when the row and the residual's row are contiguous.
template <typename T>
void row_epilogue(const GemmEpilogue<T>& ep, int64_t n, T* row, int64_t o_w) {
  if constexpr (std::is_same_v<T, float>) {
    if (f32_epilogue_vectorisable(ep, o_w)) {
      if (cpu_has_avx512f()) return f32_epilogue_avx512f(ep, 1, n, row, 0);
      if (cpu_has_avx2_fma()) return f32_epilogue_avx2(ep, 1, n, row, 0);
    }
  }
  ep.apply(1, n, row, 0, o_w);
}

// A fused op's epilogue for depthwise_rows: residual strides per dimension.
template <typename T>
struct RowsEpilogue {
  GemmEpilogue<T> ep;  // residual points at element (0, 0, 0, 0)
  int64_t r_n = 0, r_c = 0, r_h = 0;
};

// Floats of the zero-bordered buffer banded_plane_3x3 fills per band (8 KiB).
constexpr int64_t kDepthwiseSmallPlane = 2048;

// A 3×3, stride-1 depthwise plane, in bands of rows: each band's input rows
// are copied into a zero-bordered buffer of padded width pw, and the 3×3 row
// runs once over all the band's rows·pw outputs as if they were one row
// (output t reads buffer t + dy·pw + dx: every tap inside, one long vector
// loop); the pw − out_w columns past each row's end are dropped. The row
// path spent its time on edge columns and vector tails (per row: MobileNet's
// 56×56 planes ran at 10 G multiply-adds/s, its 7×7 ones at 4).
template <typename T, typename Row>
void banded_plane_3x3(const T* xc, const T* w9, T bias, T* plane, const ConvGeometry& g,
                      const DepthwiseStrides& st, Row row3x3, T* pad, T* flat) {
  const int64_t pw = g.in_w + 2 * g.pad_w;
  const int64_t band = (kDepthwiseSmallPlane - 2) / pw - 2;  // Output rows per band (>= 1).
  for (int64_t oh0 = 0; oh0 < g.out_h; oh0 += band) {
    const int64_t rows = g.out_h - oh0 < band ? g.out_h - oh0 : band;
    // Buffer row r holds padded input row oh0 + r (input row oh0 + r − pad_h).
    std::memset(pad, 0, sizeof(T) * static_cast<size_t>((rows + 2) * pw + 2));
    for (int64_t r = 0; r < rows + 2; ++r) {
      const int64_t ih = oh0 + r - g.pad_h;
      if (ih < 0 || ih >= g.in_h) continue;
      copy_row_inline(pad + r * pw + g.pad_w, xc + ih * st.x_h, g.in_w);
    }
    row3x3(flat, pad, pw, 1, w9, bias, rows * pw);
    for (int64_t oh = 0; oh < rows; ++oh) {
      copy_row_inline(plane + (oh0 + oh) * st.o_h, flat + oh * pw, g.out_w);
    }
  }
}

template <typename T>
void depthwise_rows(const T* x, const T* w, const T* bias, T* o, int64_t batch, int64_t oc_total,
                    int64_t mult, const ConvGeometry& g, const DepthwiseStrides& st,
                    const RowsEpilogue<T>* fused = nullptr) {
  int64_t lo, hi;
  interior_cols(g, &lo, &hi);
  const bool contiguous = st.x_w == 1 && st.o_w == 1;
  const bool unit = contiguous && g.stride_w == 1;
  const bool k3x3 =
      contiguous && (g.stride_w == 1 || g.stride_w == 2) && g.kh == 3 && g.kw == 3 && hi > lo;
  const auto row3x3 = select_dw3x3_row<T>(g.stride_w);
  const bool banded = std::is_same_v<T, float> && k3x3 && g.stride_h == 1 && g.stride_w == 1 &&
                      g.dil_h == 1 && g.dil_w == 1 &&
                      3 * (g.in_w + 2 * g.pad_w) + 2 <= kDepthwiseSmallPlane;
  // Stride 2, dilation 1: the band in phase planes (depthwise_s2_f32.h).
  const bool phases = std::is_same_v<T, float> && k3x3 && g.stride_h == 2 && g.stride_w == 2 &&
                      g.dil_h == 1 && g.dil_w == 1 && dw3x3_s2_takes(g.out_w);
  static_assert(2 * kDepthwiseSmallPlane >= kDw3x3S2Scratch);
  alignas(64) T buffer[2 * kDepthwiseSmallPlane];  // 16 KiB of stack for float
  T* pad = buffer;
  T* flat = buffer + kDepthwiseSmallPlane;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t oc = 0; oc < oc_total; ++oc) {
      const T* xc = x + b * st.x_n + (oc / mult) * st.x_c;
      const T* wc = w + oc * st.w_oc;
      T* oc_plane = o + b * st.o_n + oc * st.o_c;
      const T bv = bias != nullptr ? bias[oc * st.bias] : T(0);
      T w9[9];
      if (k3x3) {
        for (int i = 0; i < 9; ++i) w9[i] = wc[(i / 3) * st.w_h + (i % 3) * st.w_w];
      }
      if (banded || phases) {
        if constexpr (std::is_same_v<T, float>) {
          if (phases) {
            dw3x3_s2_plane_f32(xc, g.in_h, g.in_w, st.x_h, g.pad_h, g.pad_w, w9, bv, oc_plane,
                               g.out_h, g.out_w, st.o_h, buffer);
          }
        }
        if (banded) banded_plane_3x3(xc, w9, bv, oc_plane, g, st, row3x3, pad, flat);
        if (fused != nullptr) {
          for (int64_t oh = 0; oh < g.out_h; ++oh) {
            GemmEpilogue<T> row = fused->ep;
            if (row.residual != nullptr) {
              row.residual += b * fused->r_n + oc * fused->r_c + oh * fused->r_h;
            }
            row_epilogue(row, g.out_w, oc_plane + oh * st.o_h, st.o_w);
          }
        }
        continue;
      }
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        T* orow = oc_plane + oh * st.o_h;
        const int64_t ih0 = oh * g.stride_h - g.pad_h;
        // Rows whose kernel rows are all inside: the interior is written in one pass.
        const bool fast = k3x3 && ih0 >= 0 && ih0 + 2 * g.dil_h < g.in_h;
        for (int64_t ow = 0; ow < g.out_w; ow = (fast && ow + 1 == lo) ? hi : ow + 1) {
          orow[ow * st.o_w] = bv;
        }
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          const int64_t ih = ih0 + ky * g.dil_h;
          if (ih < 0 || ih >= g.in_h) continue;
          const T* xr = xc + ih * st.x_h;
          const T* wr = wc + ky * st.w_h;
          // Edge columns: taps checked one by one.
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const T wv = wr[kx * st.w_w];
            const int64_t off = kx * g.dil_w - g.pad_w;
            auto edge = [&](int64_t from, int64_t to) {
              for (int64_t ow = from; ow < to; ++ow) {
                const int64_t iw = ow * g.stride_w + off;
                if (iw >= 0 && iw < g.in_w) orow[ow * st.o_w] += wv * xr[iw * st.x_w];
              }
            };
            edge(0, lo);
            edge(hi, g.out_w);
          }
          if (fast) continue;
          // Interior columns.
          const int64_t len = hi - lo;
          if (unit) {
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const T wv = wr[kx * st.w_w];
              const T* xk = xr + (lo + kx * g.dil_w - g.pad_w);
              T* __restrict out = orow + lo;
              for (int64_t t = 0; t < len; ++t) out[t] += wv * xk[t];
            }
          } else {
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const T wv = wr[kx * st.w_w];
              const int64_t off = kx * g.dil_w - g.pad_w;
              for (int64_t ow = lo; ow < hi; ++ow) {
                orow[ow * st.o_w] += wv * xr[(ow * g.stride_w + off) * st.x_w];
              }
            }
          }
        }
        if (fast) {
          row3x3(orow + lo, xc + ih0 * st.x_h + (lo * g.stride_w - g.pad_w), g.dil_h * st.x_h,
                 g.dil_w, w9, bv, hi - lo);
        }
        if (fused != nullptr) {
          GemmEpilogue<T> row = fused->ep;
          if (row.residual != nullptr) {
            row.residual += b * fused->r_n + oc * fused->r_c + oh * fused->r_h;
          }
          row_epilogue(row, g.out_w, orow, st.o_w);
        }
      }
    }
  }
}

// Most kernel taps depthwise_channels_last takes (its weight buffer).
constexpr int64_t kDepthwiseMaxTaps = 4096;

// Channels contiguous in input and output (channels-last) and multiplier 1:
// one output pixel at a time, vectorised over a block of channels whose
// weights are first transposed to [tap][channel] on the stack. False when
// the kernel has too many taps for the stack buffer.
template <typename T>
bool depthwise_channels_last(const T* x, const T* w, const T* bias, T* o, int64_t batch,
                             int64_t channels, const ConvGeometry& g, const DepthwiseStrides& st) {
  constexpr int64_t kBuf = kDepthwiseMaxTaps;  // 16 KiB of float weights.
  constexpr int64_t kMaxBlock = 64;
  const int64_t taps = g.kh * g.kw;
  if (taps > kBuf) return false;
  const int64_t block = kBuf / taps < kMaxBlock ? kBuf / taps : kMaxBlock;
  alignas(64) T wt[kBuf];
  alignas(64) T bb[kMaxBlock];
  for (int64_t c0 = 0; c0 < channels; c0 += block) {
    const int64_t nb = channels - c0 < block ? channels - c0 : block;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        T* dt = wt + (ky * g.kw + kx) * block;
        const T* src = w + c0 * st.w_oc + ky * st.w_h + kx * st.w_w;
        for (int64_t c = 0; c < nb; ++c) dt[c] = src[c * st.w_oc];
      }
    }
    for (int64_t c = 0; c < nb; ++c) bb[c] = bias != nullptr ? bias[(c0 + c) * st.bias] : T(0);
    for (int64_t b = 0; b < batch; ++b) {
      const T* xb = x + b * st.x_n + c0;
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          T* __restrict op = o + b * st.o_n + oh * st.o_h + ow * st.o_w + c0;
          for (int64_t c = 0; c < nb; ++c) op[c] = bb[c];
          for (int64_t ky = 0; ky < g.kh; ++ky) {
            const int64_t ih = oh * g.stride_h - g.pad_h + ky * g.dil_h;
            if (ih < 0 || ih >= g.in_h) continue;
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const int64_t iw = ow * g.stride_w - g.pad_w + kx * g.dil_w;
              if (iw < 0 || iw >= g.in_w) continue;
              const T* xp = xb + ih * st.x_h + iw * st.x_w;
              const T* wp = wt + (ky * g.kw + kx) * block;
              for (int64_t c = 0; c < nb; ++c) op[c] += wp[c] * xp[c];
            }
          }
        }
      }
    }
  }
  return true;
}

template <typename T>
void run_depthwise(KernelContext& ctx, const Tensor& input, const Tensor& weight,
                   const Tensor* bias, const ConvGeometry& g, const ConvEpilogue* fused,
                   Tensor& out) {
  const bool is_2d = input.dim == 4;
  const int64_t batch = input.sizes[0];
  const int64_t oc_total = weight.sizes[0];
  const int64_t mult = oc_total / input.sizes[1];
  DepthwiseStrides st{};
  st.x_n = input.strides[0];
  st.x_c = input.strides[1];
  st.x_h = is_2d ? input.strides[2] : 0;
  st.x_w = input.strides[is_2d ? 3 : 2];
  st.w_oc = weight.strides[0];
  st.w_h = is_2d ? weight.strides[2] : 0;
  st.w_w = weight.strides[is_2d ? 3 : 2];
  st.o_n = out.strides[0];
  st.o_c = out.strides[1];
  st.o_h = is_2d ? out.strides[2] : 0;
  st.o_w = out.strides[is_2d ? 3 : 2];
  st.bias = bias != nullptr ? bias->strides[0] : 0;
  const T* x = input.data_ptr<const T>();
  const T* w = weight.data_ptr<const T>();
  const T* bv = bias != nullptr ? bias->data_ptr<const T>() : nullptr;
  T* o = out.data_ptr<T>();
  const bool channels_last = mult == 1 && st.x_c == 1 && st.o_c == 1 && oc_total > 1 &&
                             g.kh * g.kw <= kDepthwiseMaxTaps;
  // Channels are independent: split them over the pool in whole input
  // channels (multiples of mult), so each output is computed as on one thread.
  // A depthwise multiply-add costs 10-20 times a GEMM's (4-16 G/s against
  // ~100 on MobileNetV2's planes), so a sixteenth of the GEMM's threshold:
  // its 7×7 and 14×14 layers (0.4-1 M multiply-adds, 75-140 µs) split too.
  const int64_t work = batch * oc_total * g.out_h * g.out_w * g.kh * g.kw;
  const int64_t groups = oc_total / mult;
  const int64_t min_groups = work < kGemmParallelMinMacs / 16 ? groups : 1;
  // The NCHW rows take the fused op's residual and clamp per row; the
  // channels-last loop leaves them to one pass after.
  RowsEpilogue<T> rows_ep{};
  const bool per_row = fused != nullptr && !channels_last && is_2d;
  if constexpr (std::is_same_v<T, float>) {
    if (per_row) {
      set_clamp(*fused, rows_ep.ep);
      if (const Tensor* r = fused->residual; r != nullptr) {
        rows_ep.ep.residual = r->data_ptr<const float>();
        rows_ep.ep.res_cs = r->strides[3];
        rows_ep.r_n = r->strides[0];
        rows_ep.r_c = r->strides[1];
        rows_ep.r_h = r->strides[2];
      }
    }
  }
  parallel_range(ctx, groups, min_groups, 1, [&](int64_t g0, int64_t g1) {
    const int64_t oc0 = g0 * mult;
    const int64_t count = (g1 - g0) * mult;
    const T* bias_part = bv != nullptr ? bv + oc0 * st.bias : nullptr;
    if (channels_last) {
      (void)depthwise_channels_last(x + oc0, w + oc0 * st.w_oc, bias_part, o + oc0, batch, count,
                                    g, st);
    } else {
      RowsEpilogue<T> part = rows_ep;
      if (part.ep.residual != nullptr) part.ep.residual += oc0 * part.r_c;
      depthwise_rows(x + g0 * st.x_c, w + oc0 * st.w_oc, bias_part, o + oc0 * st.o_c, batch,
                     count, mult, g, st, per_row ? &part : nullptr);
    }
  });
  if (fused != nullptr && !per_row) apply_conv_epilogue(ctx, *fused, out);
}

// Aᵀ = im2col's columns seen as rows (positions × Cg·KH·KW) for the
// positions-as-rows GEMM, read through a table built per call: for each
// kernel tap t and output position i, the input offset of (i, t) within a
// channel plane, or −1 where it falls in the padding. A strip of kMR
// positions then costs kMR loads per k instead of im2col's per-run bounds
// arithmetic (a 7×7 plane's 8-position strips cross rows every 7).
struct Im2rowSource {
  const float* x;  // At the batch's and group's first input channel.
  int64_t s_c;
  const int32_t* offsets;  // [taps][positions]
  int64_t positions, taps;

  template <int kMR, typename T>
  void pack_a(int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) const {
    for (int64_t s = 0; s < mc; s += kMR) {
      const int64_t rows = mc - s < kMR ? mc - s : kMR;
      int64_t c = p0 / taps, t = p0 - c * taps;
      for (int64_t p = 0; p < kc; ++p) {
        const float* plane = x + c * s_c;
        const int32_t* off = offsets + t * positions + i0 + s;
        T* d = dst + p * kMR;
        for (int64_t ii = 0; ii < kMR; ++ii) {
          d[ii] = ii < rows && off[ii] >= 0 ? plane[off[ii]] : T(0);
        }
        if (++t == taps) {
          t = 0;
          ++c;
        }
      }
      dst += kc * kMR;
    }
  }
};

// Int32s of Im2rowSource's table (its positions rounded up to 16).
int64_t im2row_table_ints(int64_t positions, int64_t taps) {
  return taps * ((positions + 15) / 16 * 16);
}

// Fills Im2rowSource's table for the geometry (input strides s_h, s_w);
// `positions` is the table's row length (out_h·out_w rounded up).
void build_im2row_table(const ConvGeometry& g, int64_t s_h, int64_t s_w, int64_t positions,
                        int32_t* table) {
  int64_t t = 0;
  for (int64_t ky = 0; ky < g.kh; ++ky) {
    for (int64_t kx = 0; kx < g.kw; ++kx, ++t) {
      int32_t* row = table + t * positions;
      int64_t i = 0;
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        const int64_t ih = oh * g.stride_h - g.pad_h + ky * g.dil_h;
        for (int64_t ow = 0; ow < g.out_w; ++ow, ++i) {
          const int64_t iw = ow * g.stride_w - g.pad_w + kx * g.dil_w;
          row[i] = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w
                       ? static_cast<int32_t>(ih * s_h + iw * s_w)
                       : -1;
        }
      }
      for (; i < positions; ++i) row[i] = -1;
    }
  }
}

// Scratch a convolution's GEMM takes, in floats (64-byte multiples): outᵀ
// for the positions-as-rows orientation, Im2rowSource's table, and with more
// than one thread the im2col operand packed once for all of them (each
// thread's share of the product would pack all of it otherwise: ResNet-50's
// 7×7 and 14×14 3×3 layers ran only 1.43–1.69× faster on 2 threads than on 1).
int64_t round_up_16(int64_t v) { return (v + 15) / 16 * 16; }

int64_t transposed_out_floats(int64_t positions, int64_t ocg) {
  return round_up_16(positions * ocg);
}

int64_t shared_columns_floats(bool rows, int64_t positions, int64_t k) {
  return rows ? round_up_16(packed_panels_size(positions, k, gemm_mr<float>(),
                                               GemmBlocking<float>::kMC))
              : round_up_16(packed_panels_size(positions, k, gemm_nr<float>(),
                                               GemmBlocking<float>::kNC));
}

// Im2rowSource's table in scratch after outᵀ, or null (no scratch for it,
// or offsets past int32).
int32_t* im2row_table(KernelContext& ctx, const ConvGeometry& g, int64_t s_h, int64_t s_w,
                      int64_t positions, int64_t ocg) {
  const int64_t reach = (g.in_h - 1) * s_h + (g.in_w - 1) * s_w;
  if (s_h < 0 || s_w < 0 || reach > INT32_MAX) return nullptr;
  const int64_t ct_floats = transposed_out_floats(positions, ocg);
  const int64_t total = ct_floats + im2row_table_ints(positions, g.kh * g.kw);
  auto* base = static_cast<float*>(ctx.scratch(static_cast<size_t>(total) * sizeof(float)));
  return base != nullptr ? reinterpret_cast<int32_t*>(base + ct_floats) : nullptr;
}

// outᵀ [n positions × OCg] (in scratch) transposed into the group's output
// planes (channel stride c_cs, position stride c_ps), then the epilogue there.
void transpose_into_planes(KernelContext& ctx, const float* ct, int64_t n, int64_t ocg,
                           const GemmEpilogue<float>& ep, float* c, int64_t c_cs, int64_t c_ps) {
  auto transpose = [&](int64_t first, int64_t last) {
    if (c_ps == 1) {
      transpose_f32(ct + first, ocg, c + first * c_cs, c_cs, n, last - first);
    } else {
      for (int64_t o = first; o < last; ++o) {
        for (int64_t p = 0; p < n; ++p) c[o * c_cs + p * c_ps] = ct[p * ocg + o];
      }
    }
    if (!ep.empty()) ep.at(first, 0).apply(last - first, n, c + first * c_cs, c_cs, c_ps);
  };
  if (n * ocg >= (int64_t{1} << 16)) {
    parallel_range(ctx, ocg, 16, 16, transpose);
  } else {
    transpose(0, ocg);
  }
}

// The bf16 GEMM's positions-as-rows form: columnsᵀ [n × k] written into
// scratch as float rows (a 1×1 convolution's input transposed, else im2col
// through the offsets table), outᵀ = bf16(columnsᵀ) · Wᵀ by bf16_gemm into
// scratch, then transposed into the planes with the epilogue. For small
// planes: the weight strips meet up to 18 position tiles each (the other
// orientation's 49 or 196 positions give each weight strip 2 to 7 tiles of
// 32, and a weight larger than the caches streams from memory per strip).
// Scratch: outᵀ, then columnsᵀ, then the table. False when it has too little.
bool bf16_positions_rows(KernelContext& ctx, const ConvGeometry& g, const Bf16PackedWeight& w,
                         int64_t n, bool pointwise, const float* xg, int64_t in_sc,
                         int64_t in_sh, int64_t in_sw, bool first_call,
                         const GemmEpilogue<float>& ep, float* c, int64_t c_cs, int64_t c_ps) {
  const int64_t ocg = w.n, k = w.k, taps = g.kh * g.kw;
  const int64_t ct_floats = transposed_out_floats(n, ocg);
  const int64_t rows_floats = round_up_16(n * k);
  const int64_t table_ints = im2row_table_ints(n, taps);
  auto* base = static_cast<float*>(ctx.scratch(
      static_cast<size_t>(ct_floats + rows_floats + table_ints) * sizeof(float)));
  if (base == nullptr) return false;
  float* ct = base;
  float* rows = base + ct_floats;
  if (pointwise && in_sw == 1) {
    transpose_f32(xg, in_sc, rows, k, k, n);
  } else {
    const int64_t reach = (g.in_h - 1) * in_sh + (g.in_w - 1) * in_sw;
    if (in_sh < 0 || in_sw < 0 || reach > INT32_MAX) return false;
    auto* table = reinterpret_cast<int32_t*>(rows + rows_floats);
    const int64_t row = (n + 15) / 16 * 16;
    if (first_call) build_im2row_table(g, in_sh, in_sw, row, table);
    // Row i of columnsᵀ: (channel, tap) pairs in k order, each a table lookup.
    auto fill = [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        float* r = rows + i * k;
        for (int64_t ch = 0; ch < g.c_per_group; ++ch) {
          const float* plane = xg + ch * in_sc;
          for (int64_t t = 0; t < taps; ++t) {
            const int32_t off = table[t * row + i];
            r[ch * taps + t] = off >= 0 ? plane[off] : 0.0f;
          }
        }
      }
    };
    if (n * k >= (int64_t{1} << 16)) {
      parallel_range(ctx, n, 8, 8, fill);
    } else {
      fill(0, n);
    }
  }
  bf16_gemm(ctx, n, rows, k, 1, w, ct, ocg, nullptr);
  transpose_into_planes(ctx, ct, n, ocg, ep, c, c_cs, c_ps);
  return true;
}

// outᵀ [positions × OCg] = columnsᵀ · Wᵀ on the panels prepare packed
// (positions_as_rows) into scratch, then transposed into the group's output
// planes (channel stride c_cs, position stride c_ps) and the epilogue applied
// there: the same sums and epilogue as the other orientation's, in other
// depth blocks. With more than one thread and scratch for it, im2col's
// columnsᵀ are packed once first (kShared: the threads split the depth
// blocks), in the depth blocks the product reads. Without scratch (a method
// loaded without it) the tiles are written straight into out, strided.
// `used`: floats of scratch after outᵀ the caller took (Im2rowSource's table).
template <bool kShared, typename ASource>
void gemm_positions_rows(KernelContext& ctx, int64_t n, int64_t ocg, int64_t k,
                         const ASource& columns_t,
                         const PackedB<float, TransposedSource<WeightSource<float>>>& w_t,
                         const GemmEpilogue<float>& ep, float* c, int64_t c_cs, int64_t c_ps,
                         int64_t used = 0) {
  const int64_t ct_floats = transposed_out_floats(n, ocg);
  auto* ct = static_cast<float*>(ctx.scratch(static_cast<size_t>(ct_floats) * sizeof(float)));
  if (ct == nullptr) {
    GemmEpilogue<float> ep_t = ep;
    ep_t.row_bias = nullptr;
    ep_t.col_bias = ep.row_bias;
    ep_t.col_bias_stride = ep.bias_stride;
    ep_t.res_rs = ep.res_cs;
    ep_t.res_cs = ep.res_rs;
    gemm_parallel<float>(ctx, n, ocg, k, columns_t, w_t, 1.0f, 0.0f, c, c_ps, c_cs,
                         ep.empty() ? nullptr : &ep_t);
    return;
  }
  float* shared = nullptr;
  if constexpr (kShared) {
    // Only when the threads would split the channels (each packing all of
    // columnsᵀ); split by positions, each packs its own rows already.
    if (ctx.threads() > 1 && n * ocg * k >= kGemmParallelMinMacs &&
        gemm_splits_columns<float>(static_cast<int64_t>(ctx.threads()), n, ocg, false, true)) {
      const int64_t total = ct_floats + used + shared_columns_floats(true, n, k);
      if (auto* base = static_cast<float*>(ctx.scratch(static_cast<size_t>(total) *
                                                       sizeof(float)))) {
        shared = base + ct_floats + used;
      }
    }
  }
  if (shared != nullptr) {
    constexpr int64_t kDepth = GemmBlocking<float>::kKCPacked;
    parallel_range(ctx, k, kDepth, kDepth, [&](int64_t first, int64_t last) {
      (void)pack_a_for_gemm<float>(columns_t, n, k, shared, kDepth, first, last);
    });
    const PackedA<float, ASource> a{PackedPanels<float>{shared, n, k, gemm_mr<float>()},
                                    columns_t};
    gemm_parallel<float>(ctx, n, ocg, k, a, w_t, 1.0f, 0.0f, ct, ocg, 1);
  } else {
    gemm_parallel<float>(ctx, n, ocg, k, columns_t, w_t, 1.0f, 0.0f, ct, ocg, 1);
  }
  transpose_into_planes(ctx, ct, n, ocg, ep, c, c_cs, c_ps);
}

// What gemm_blocked's b_block asks a B operand for.
template <typename B>
concept ReadInPlacePerCall = requires(const B& b) { b.template packed_b_per_call<16>(0, 0); };
template <typename B>
concept ReadInPlaceFromPrepare = requires(const B& b) { b.template packed_b<16>(0, 0); };

// out = W · columns with W's panels packed at prepare and, on more than one
// thread with scratch for it, im2col's columns packed once first (the threads
// split the column blocks) in gemm_blocked's depth blocks: the same sums as
// packing them per thread.
void gemm_shared_columns(KernelContext& ctx, int64_t ocg, int64_t n, int64_t k,
                         const PackedA<float, WeightSource<float>>& w,
                         const Im2colSource<float>& columns, const GemmEpilogue<float>& ep,
                         float* c, int64_t c_rs, int64_t c_cs) {
  float* shared = nullptr;
  // Only when the threads would split the channels (each packing all of the
  // columns); split by positions (the stem's 64 channels), each packs its own.
  if (ctx.threads() > 1 && ocg * n * k >= kGemmParallelMinMacs &&
      !gemm_splits_columns<float>(static_cast<int64_t>(ctx.threads()), ocg, n, true, false)) {
    shared = static_cast<float*>(ctx.scratch(
        static_cast<size_t>(shared_columns_floats(false, n, k)) * sizeof(float)));
  }
  if (shared == nullptr) {
    gemm_parallel<float>(ctx, ocg, n, k, w, columns, 1.0f, 0.0f, c, c_rs, c_cs, &ep);
    return;
  }
  constexpr int64_t kBlock = GemmBlocking<float>::kNC;
  parallel_range(ctx, n, kBlock, kBlock, [&](int64_t first, int64_t last) {
    (void)pack_b_for_gemm<float>(columns, k, n, shared, GemmBlocking<float>::kKC, first, last);
  });
  using Columns = PackedBPerCall<float, Im2colSource<float>>;
  static_assert(ReadInPlacePerCall<Columns> && !ReadInPlaceFromPrepare<Columns>,
                "gemm_blocked must read the columns in place, in its own depth blocks");
  const Columns b{PackedPanels<float>{shared, n, k, gemm_nr<float>()}, columns};
  gemm_parallel<float>(ctx, ocg, n, k, w, b, 1.0f, 0.0f, c, c_rs, c_cs, &ep);
}

// The GEMM epilogue of image b's channels from c0: the bias, and for float32
// the fused op's residual (when it flattens like out: `residual` not null)
// and clamp; a residual that does not is added after (apply_conv_epilogue).
template <typename T>
GemmEpilogue<T> conv_gemm_epilogue(const Tensor* bias, const ConvEpilogue* fused,
                                   const Tensor* residual, int64_t res_sw, int64_t b,
                                   int64_t c0) {
  GemmEpilogue<T> ep{};
  if (bias != nullptr) {
    ep.row_bias = bias->data_ptr<const T>() + c0 * bias->strides[0];
    ep.bias_stride = bias->strides[0];
  }
  if constexpr (std::is_same_v<T, float>) {
    if (fused != nullptr && (fused->residual == nullptr || residual != nullptr)) {
      if (residual != nullptr) {
        ep.residual = residual->data_ptr<const float>() + b * residual->strides[0] +
                      c0 * residual->strides[1];
        ep.res_rs = residual->strides[1];
        ep.res_cs = res_sw;
      }
      set_clamp(*fused, ep);
    }
  }
  return ep;
}

// A bfloat16 3×3 stride-1 weight off AMX runs float32 Winograd from this
// many output positions (prepare).
constexpr int64_t kBf16WinogradMinPositions = 28 * 28;

ConvBf16AmxGeometry bf16_amx_geometry(const ConvGeometry& g) {
  return {g.c_per_group, g.in_h, g.in_w,  g.kh,    g.kw,    g.out_h, g.out_w,
          g.stride_h,    g.stride_w, g.pad_h, g.pad_w, g.dil_h, g.dil_w};
}

// The AMX implicit GEMM prepare chose for a bfloat16 weight: per image, the
// bias, a residual that flattens like out and the clamp as its epilogue.
void run_bf16_amx(KernelContext& ctx, const Tensor& input, const Tensor* bias,
                  const ConvGeometry& g, const ConvBf16AmxWeights& w, const ConvEpilogue* fused,
                  const Tensor* residual, int64_t res_sw, Tensor& out) {
  const int64_t plane_in = g.in_h * g.in_w, plane_out = g.out_h * g.out_w;
  EMBER_KERNEL_CHECK(ctx, input.strides[3] == 1 && input.strides[2] == g.in_w &&
                              input.strides[1] == plane_in && out.strides[1] == plane_out &&
                              (g.out_w == 1 || out.strides[3] == 1),
                     "input and out must be contiguous (NCHW) for the bfloat16 AMX "
                     "convolution prepare chose");
  const ConvBf16AmxGeometry ag = bf16_amx_geometry(g);
  const size_t need = conv_bf16_amx_scratch_bytes(ag, ctx.threads());
  void* scratch = ctx.scratch(need);
  EMBER_KERNEL_CHECK(ctx, scratch != nullptr, "%zu bytes of scratch memory needed, %zu reserved",
                     need, ctx.scratch_size());
  for (int64_t b = 0; b < input.sizes[0]; ++b) {
    const GemmEpilogue<float> ep = conv_gemm_epilogue<float>(bias, fused, residual, res_sw, b, 0);
    conv_bf16_amx_run(ctx, w, ag, input.data_ptr<const float>() + b * input.strides[0], &ep,
                      out.data_ptr<float>() + b * out.strides[0], scratch);
  }
  if (fused != nullptr && fused->residual != nullptr && residual == nullptr) {
    apply_conv_epilogue(ctx, *fused, out);  // Its clamp was left for here too.
  }
}

template <typename T>
void run_conv(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
              int64_t groups, const ConvGeometry& g, const ConvPrepared* prepared,
              const ConvEpilogue* fused, Tensor& out) {
  const bool is_2d = input.dim == 4;
  const int64_t batch = input.sizes[0];
  const int64_t oc_total = weight.sizes[0];
  const int64_t ocg = oc_total / groups;
  if (g.c_per_group == 1 && ocg <= kGemvMaxM) {
    run_depthwise<T>(ctx, input, weight, bias, g, fused, out);
    return;
  }
  const int64_t k = g.c_per_group * g.kh * g.kw;
  const int64_t n = g.out_h * g.out_w;
  // Strides with the 1-D case seen as H == 1.
  const int64_t in_sc = input.strides[1];
  const int64_t in_sh = is_2d ? input.strides[2] : 0;
  const int64_t in_sw = input.strides[is_2d ? 3 : 2];
  const int64_t w_sh = is_2d ? weight.strides[2] : 0;
  const int64_t w_sw = weight.strides[is_2d ? 3 : 2];
  // Stride of the flattened output position; a single-column plane steps by H.
  const int64_t out_sw = !is_2d ? out.strides[2] : g.out_w == 1 ? out.strides[2] : out.strides[3];
  const T* x = input.data_ptr<const T>();
  const T* w = weight.data_ptr<const T>();
  T* o = out.data_ptr<T>();
  // A 1×1, stride-1, unpadded kernel reads the input as a plain matrix.
  const bool pointwise = g.kh == 1 && g.kw == 1 && g.stride_h == 1 && g.stride_w == 1 &&
                         g.pad_h == 0 && g.pad_w == 0 && (g.in_h == 1 || in_sh == g.in_w * in_sw);
  // The residual is added per tile when its planes flatten like out's.
  const Tensor* residual = fused != nullptr ? fused->residual : nullptr;
  int64_t res_sw = 0;
  if (residual != nullptr) {
    res_sw = !is_2d ? residual->strides[2]
             : g.out_w == 1 ? residual->strides[2] : residual->strides[3];
    if (is_2d && g.out_h > 1 && g.out_w > 1 &&
        residual->strides[2] != g.out_w * residual->strides[3]) {
      residual = nullptr;  // Added after the GEMMs instead.
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    if (prepared != nullptr && prepared->bf16_amx.data != nullptr) {
      run_bf16_amx(ctx, input, bias, g, prepared->bf16_amx, fused, residual, res_sw, out);
      return;
    }
  }
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t grp = 0; grp < groups; ++grp) {
      T* c = o + b * out.strides[0] + grp * ocg * out.strides[1];
      // The bias is added to each tile after its last k-block (in L1), not
      // filled into C first.
      GemmEpilogue<T> ep = conv_gemm_epilogue<T>(bias, fused, residual, res_sw, b, grp * ocg);
      const T beta = T(0);
      const WeightSource<T> a{w + grp * ocg * weight.strides[0], weight.strides[0],
                              weight.strides[1], w_sh, w_sw, &g};
      const T* xg = x + b * input.strides[0] + grp * g.c_per_group * in_sc;
      auto product = [&](const auto& a_source) {
        if (pointwise) {
          gemm_parallel<T>(ctx, ocg, n, k, a_source, StridedMatrix<T>{xg, in_sc, in_sw}, T(1),
                           beta, c, out.strides[1], out_sw, &ep);
        } else {
          gemm_parallel<T>(ctx, ocg, n, k, a_source, Im2colSource<T>{xg, in_sc, in_sh, in_sw, &g},
                           T(1), beta, c, out.strides[1], out_sw, &ep);
        }
      };
      if constexpr (std::is_same_v<T, float>) {
        if (prepared != nullptr && prepared->bf16.data != nullptr) {
          Bf16PackedWeight wg = prepared->bf16;
          wg.data += grp * prepared->bf16_group_stride;
          if (prepared->bf16_rows &&
              bf16_positions_rows(ctx, g, wg, n, pointwise, xg, in_sc, in_sh, in_sw,
                                  b == 0 && grp == 0, ep, c, out.strides[1], out_sw)) {
            continue;
          }
          EMBER_KERNEL_CHECK(ctx, !prepared->bf16_rows,
                             "the bf16 positions-as-rows path could not run: it needs the "
                             "scratch memory prepare reserved (the method has %zu bytes) and "
                             "input offsets within int32",
                             ctx.scratch_size());
          if (pointwise) {
            bf16_gemm_weight_a(ctx, wg, n, StridedMatrix<float>{xg, in_sc, in_sw}, c,
                               out.strides[1], &ep);
          } else {
            bf16_gemm_weight_a(ctx, wg, n, Im2colSource<float>{xg, in_sc, in_sh, in_sw, &g}, c,
                               out.strides[1], &ep);
          }
          continue;
        }
        if (prepared != nullptr) {
          const PackedPanels<float> panels{prepared->packed + grp * prepared->group_stride, ocg,
                                           k, prepared->tile};
          if (prepared->positions_rows) {
            const PackedB<float, TransposedSource<WeightSource<float>>> wt{panels, {a}};
            if (pointwise) {
              gemm_positions_rows<false>(ctx, n, ocg, k, StridedMatrix<float>{xg, in_sw, in_sc},
                                         wt, ep, c, out.strides[1], out_sw);
            } else if (int32_t* table = im2row_table(ctx, g, in_sh, in_sw, n, ocg)) {
              // The table is the same for every batch and group; built once.
              if (b == 0 && grp == 0) {
                build_im2row_table(g, in_sh, in_sw, (n + 15) / 16 * 16, table);
              }
              gemm_positions_rows<true>(
                  ctx, n, ocg, k,
                  Im2rowSource{xg, in_sc, table, (n + 15) / 16 * 16, g.kh * g.kw}, wt, ep, c,
                  out.strides[1], out_sw, im2row_table_ints(n, g.kh * g.kw));
            } else {
              gemm_positions_rows<true>(
                  ctx, n, ocg, k,
                  TransposedSource<Im2colSource<float>>{{xg, in_sc, in_sh, in_sw, &g}}, wt, ep, c,
                  out.strides[1], out_sw);
            }
            continue;
          }
          if (!pointwise) {
            gemm_shared_columns(ctx, ocg, n, k, PackedA<float, WeightSource<float>>{panels, a},
                                Im2colSource<float>{xg, in_sc, in_sh, in_sw, &g}, ep, c,
                                out.strides[1], out_sw);
            continue;
          }
          product(PackedA<float, WeightSource<float>>{panels, a});
          continue;
        }
      }
      product(a);
    }
  }
  if (fused != nullptr && fused->residual != nullptr && residual == nullptr) {
    apply_conv_epilogue(ctx, *fused, out);  // Its clamp was left for here too.
  }
}

// The Winograd path prepare chose (its weight, a 3×3 stride-1 geometry).
void run_winograd(KernelContext& ctx, const Tensor& input, const Tensor* bias,
                  const ConvGeometry& g, const WinogradWeights& u, const ConvEpilogue* fused,
                  Tensor& out) {
  const int64_t* xs = input.strides;
  const int64_t* os = out.strides;
  WinogradIo io{input.data_ptr<const float>(), xs[0], xs[1], xs[2], xs[3],
                input.sizes[0], g.in_h, g.in_w, g.pad_h, g.pad_w,
                out.data_ptr<float>(), os[0], os[1], os[2], os[3], g.out_h, g.out_w};
  if (bias != nullptr) {
    io.bias = bias->data_ptr<const float>();
    io.bias_stride = bias->strides[0];
  }
  GemmEpilogue<float> ep{};
  if (fused != nullptr) {
    set_clamp(*fused, ep);
    if (const Tensor* r = fused->residual; r != nullptr) {
      ep.residual = r->data_ptr<const float>();
      ep.res_cs = r->strides[3];
      io.r_n = r->strides[0];
      io.r_c = r->strides[1];
      io.r_h = r->strides[2];
    }
    io.epilogue = &ep;
  }
  if (!winograd_conv(ctx, io, u, ctx.scratch(ctx.scratch_size()), ctx.scratch_size())) {
    // Only to say how much: the size is computed again on this path alone.
    const size_t need = winograd_scratch_bytes(u.ic, u.oc, g.out_h, g.out_w, ctx.threads(), u.form);
    ctx.fail(Error::MemoryAllocationFailed,
             "the Winograd path needs %zu bytes of scratch memory, the method has %zu (was "
             "prepare's reserve_scratch honoured?)",
             need, ctx.scratch_size());
  }
}

// 3-D convolution and the dtypes the GEMM path does not take.
void run_direct(KernelContext& ctx, const Tensor& input, const Tensor& weight, const Tensor* bias,
                int64_t groups, const int64_t* stride, const int64_t* padding,
                const int64_t* dilation, Tensor& out) {
  const int32_t nd = input.dim - 2;
  ConvDirectGeometry g;
  int32_t shape[5] = {input.sizes[0], weight.sizes[0], 0, 0, 0};
  for (int32_t d = 0; d < nd; ++d) {
    const int32_t s = 3 - nd + d;
    g.in[s] = input.sizes[2 + d];
    g.k[s] = weight.sizes[2 + d];
    g.stride[s] = stride[d];
    g.pad[s] = padding[d];
    g.dil[s] = dilation[d];
    const int64_t span = g.dil[s] * (g.k[s] - 1) + 1;
    EMBER_KERNEL_CHECK(ctx, g.in[s] + 2 * g.pad[s] >= span,
                       "input: padded input of shape %s is smaller than the dilated kernel of "
                       "weight shape %s",
                       ShapeStr(input.shape()).c_str(), ShapeStr(weight.shape()).c_str());
    g.out[s] = (g.in[s] + 2 * g.pad[s] - span) / g.stride[s] + 1;
    shape[2 + d] = static_cast<int32_t>(g.out[s]);
  }
  if (!resize_out(ctx, out, {shape, static_cast<size_t>(input.dim)})) return;
  if (out.numel == 0) return;
  const bool ok = dispatch_dtype<kRealTypes>(input.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    conv_direct<S>(input, weight, bias, groups, g, out);
  });
  if (!ok) fail_dtype(ctx, "input", input.dtype);
}

bool stride_is_one(IntSpan stride) {
  for (int64_t v : stride) {
    if (v != 1) return false;
  }
  return true;
}

bool padding_is_zero(IntSpan padding) {
  for (int64_t v : padding) {
    if (v != 0) return false;
  }
  return true;
}

// Output positions as the GEMM's rows (outᵀ = columnsᵀ · Wᵀ, channels as
// columns) when the padded tiles do at least 10% less work that way and the
// multiply-adds saved outweigh the transpose into the planes (about 40 a
// position and channel). A 7×7 plane is 49 columns, 64 in the AVX-512 tile's
// 32-wide strips but 56 in its 8-tall ones; a 14×14 one 224 against 200.
// One thread, ResNet-50 (BENCHMARKS.md): its 7×7 layers 0.79–0.89× the time
// (3×3 with im2col's rows gathered through Im2rowSource's table), its 14×14
// 3×3 layers 0.79×, 1×1 0.86×.
bool positions_as_rows(int64_t ocg, int64_t positions, int64_t k) {
  const int64_t mr = gemm_mr<float>(), nr = gemm_nr<float>();
  auto up = [](int64_t v, int64_t t) { return (v + t - 1) / t * t; };
  const int64_t as_rows = up(positions, mr) * up(ocg, nr);
  const int64_t as_cols = up(ocg, mr) * up(positions, nr);
  return 10 * as_rows <= 9 * as_cols && (as_cols - as_rows) * k >= 40 * positions * ocg;
}

// The GEMM path's weight geometry, when the call takes it (1-D/2-D float
// convolution that is neither transposed nor depthwise): false otherwise.
bool gemm_weight_shape(const Tensor& input, const Tensor& weight, int64_t groups, int64_t* ocg,
                       int64_t* k) {
  if (input.dtype != ScalarType::Float || weight.dim < 3 || weight.dim > 4 ||
      weight.dim != input.dim || groups < 1 || weight.sizes[0] % groups != 0) {
    return false;
  }
  const int64_t c_per_group = weight.sizes[1];
  *ocg = weight.sizes[0] / groups;
  if (c_per_group == 1 && *ocg <= kGemvMaxM) return false;  // Depthwise: no GEMM.
  *k = c_per_group * weight.sizes[2] * (weight.dim == 4 ? weight.sizes[3] : 1);
  return *ocg > 0 && *k > 0;
}

// A 3×3 stride-1 2-D convolution with one group that Winograd suits.
bool winograd_applies(const Tensor& weight, IntSpan stride, IntSpan dilation, int64_t groups,
                      const Tensor& out) {
  return weight.dim == 4 && groups == 1 && weight.sizes[2] == 3 && weight.sizes[3] == 3 &&
         stride.size() == 2 && stride[0] == 1 && stride[1] == 1 && dilation.size() == 2 &&
         dilation[0] == 1 && dilation[1] == 1 && out.dim == 4 && winograd_enabled() &&
         winograd_suits(weight.sizes[1], weight.sizes[0], out.sizes[2], out.sizes[3]);
}

// The Winograd state of `weight`, whose float32 values (contiguous OIHW
// unless they are weight's own) are `w`.
Error prepare_winograd(KernelPrepareContext& ctx, const Tensor& weight, const float* w,
                       int64_t ocg, int64_t k, const Tensor& out) {
  auto* state = ctx.allocate_state<ConvPrepared>();
  if (state == nullptr) return ctx.failure();
  const int64_t oc = weight.sizes[0], ic = weight.sizes[1];
  const WinogradForm form = winograd_form(ic, oc, out.sizes[2], out.sizes[3]);
  auto* packed = static_cast<float*>(ctx.allocate(
      static_cast<size_t>(winograd_weight_floats(oc, ic, form)) * sizeof(float), 64));
  if (packed == nullptr) return ctx.failure();
  *state = ConvPrepared{weight.data, nullptr, 0, ocg, k, 0, false, {}, {}, 0, false, {}};
  const bool own = weight.dtype == ScalarType::Float;
  state->winograd = winograd_pack_weights(w, own ? weight.strides[0] : ic * 9,
                                          own ? weight.strides[1] : 9, own ? weight.strides[2] : 3,
                                          own ? weight.strides[3] : 1, oc, ic, packed, form);
  ctx.reserve_scratch(
      winograd_scratch_bytes(ic, oc, out.sizes[2], out.sizes[3], ctx.threads(), form));
  ctx.set_state(state);
  ctx.mark_packed(weight);
  return Error::Ok;
}

}  // namespace

Error convolution_prepare(KernelPrepareContext& ctx, const Tensor& input, const Tensor& weight,
                          const Tensor* bias, IntSpan stride, IntSpan padding, IntSpan dilation,
                          bool transposed, IntSpan output_padding, int64_t groups, Tensor& out) {
  const ConvArgs conv_args{stride, padding, dilation, transposed, output_padding, groups};
  const Error err = conv_load_check(input, ctx.is_constant(input), weight,
                                    ctx.is_constant(weight), bias, conv_args);
  if (err != Error::Ok) {
    char reason[400];
    std::snprintf(reason, sizeof(reason), "%s", last_error_message());
    return ctx.fail(err, "%s", reason);
  }
  int64_t ocg = 0, k = 0;
  if (weight.dtype == ScalarType::BFloat16 && input.dtype == ScalarType::Float) {
    EMBER_PREPARE_CHECK(ctx, !transposed && gemm_weight_shape(input, weight, groups, &ocg, &k),
                        "weight: a bfloat16 weight with a float32 input takes the GEMM path "
                        "only (1-D or 2-D, not transposed, not depthwise)");
    EMBER_PREPARE_CHECK(ctx, ctx.is_constant(weight) && weight.data != nullptr &&
                                 weight.is_contiguous_dim_order(),
                        "weight: a bfloat16 weight must be a contiguous constant of the program "
                        "(it is packed at load)");
    const Bf16GemmKind kind = bf16_gemm_kind();
    const int64_t taps = k / weight.sizes[1];
    const bool pointwise = taps == 1 && stride_is_one(stride) && padding_is_zero(padding);
    if (weight.dim == 4 && out.dim == 4 && input.is_contiguous_dim_order() &&
        out.is_contiguous_dim_order() &&
        conv_bf16_amx_applies(weight.sizes[1], groups, weight.sizes[2], weight.sizes[3])) {
      // AMX: the implicit GEMM, each input value rounded once (conv_bf16_amx.h).
      auto* state = ctx.allocate_state<ConvPrepared>();
      if (state == nullptr) return ctx.failure();
      void* packed = ctx.allocate(conv_bf16_amx_weight_bytes(weight.sizes[0], weight.sizes[1],
                                                             weight.sizes[2], weight.sizes[3]),
                                  64);
      if (packed == nullptr) return ctx.failure();
      state->bf16_amx =
          conv_bf16_amx_pack(weight.data_ptr<const uint16_t>(), weight.sizes[0], weight.sizes[1],
                             weight.sizes[2], weight.sizes[3], packed);
      state->weight_data = weight.data;
      state->ocg = ocg;
      state->k = k;
      const auto at = [](IntSpan v, size_t i) { return v.size() > i ? v[i] : v[0]; };
      const ConvBf16AmxGeometry ag{weight.sizes[1], input.sizes[2], input.sizes[3],
                                   weight.sizes[2], weight.sizes[3], out.sizes[2],
                                   out.sizes[3],    at(stride, 0),   at(stride, 1),
                                   at(padding, 0),  at(padding, 1),  at(dilation, 0),
                                   at(dilation, 1)};
      ctx.reserve_scratch(conv_bf16_amx_scratch_bytes(ag, ctx.threads()));
      ctx.set_state(state);
      ctx.mark_packed(weight);
      return Error::Ok;
    }
    if (out.dim == 4 && out.sizes[2] * out.sizes[3] >= kBf16WinogradMinPositions &&
        winograd_applies(weight, stride, dilation, groups, out)) {
      // Without the tiles, float32 Winograd's 4× fewer multiplies beat the
      // bf16 GEMM's 2× rate on large 3×3 stride-1 planes (Zen 4, ResNet-50's
      // layers, 1 thread: 1.3–1.4 ms against 2.2 at 56×56, equal at 28×28):
      // the bf16 weight is widened back to float32 for it (exactly; the
      // widened copy stays in the method's memory, a quarter of Winograd's
      // packed weights).
      const int64_t count = weight.numel;
      auto* wf = static_cast<float*>(ctx.allocate(static_cast<size_t>(count) * sizeof(float)));
      if (wf == nullptr) return ctx.failure();
      const auto* bits = weight.data_ptr<const uint16_t>();
      for (int64_t i = 0; i < count; ++i) {
        BFloat16 h;
        h.bits = bits[i];
        wf[i] = h;
      }
      return prepare_winograd(ctx, weight, wf, ocg, k, out);
    }
    const int64_t positions = out.dim == 4 ? out.sizes[2] * out.sizes[3] : out.sizes[2];
    // Small planes: output positions as the GEMM's rows (bf16_positions_rows).
    // On 14×14 a 1×1 layer's product is too short for the two transposes
    // (ResNet-50's 256 → 1024: 324 → 373 µs); its 3×3 and strided layers gain.
    const bool rows = positions <= kBf16RowsAlways ||
                      (positions <= kBf16RowsMaxPositions && (!pointwise || k >= 2048));
    const int64_t group_stride =
        rows ? bf16_packed_weight_words(ocg, k, kind) : bf16_packed_rows_words(ocg, k, kind);
    auto* state = ctx.allocate_state<ConvPrepared>();
    if (state == nullptr) return ctx.failure();
    auto* packed = static_cast<uint32_t*>(
        ctx.allocate(static_cast<size_t>(group_stride * groups) * sizeof(uint32_t), 64));
    if (packed == nullptr) return ctx.failure();
    const auto* w = weight.data_ptr<const uint16_t>();
    for (int64_t grp = 0; grp < groups; ++grp) {
      const uint16_t* wg = w + grp * ocg * weight.strides[0];
      const Bf16PackedWeight p =
          rows ? bf16_pack_weight(wg, ocg, k, weight.strides[0], 1, kind,
                                  packed + grp * group_stride)
               : bf16_pack_weight_rows(wg, ocg, k, weight.strides[0], 1, kind,
                                       packed + grp * group_stride);
      if (grp == 0) state->bf16 = p;
    }
    state->weight_data = weight.data;
    state->ocg = ocg;
    state->k = k;
    state->bf16_group_stride = group_stride;
    state->bf16_rows = rows;
    if (rows) {
      // outᵀ, columnsᵀ and the table (bf16_positions_rows).
      ctx.reserve_scratch(static_cast<size_t>(transposed_out_floats(positions, ocg) +
                                              round_up_16(positions * k) +
                                              im2row_table_ints(positions, taps)) *
                          sizeof(float));
    }
    ctx.set_state(state);
    ctx.mark_packed(weight);
    return Error::Ok;
  }
  if (transposed || !ctx.is_constant(weight) || weight.data == nullptr ||
      !gemm_weight_shape(input, weight, groups, &ocg, &k)) {
    return Error::Ok;  // Nothing to pack: execute packs per call as before.
  }
  if (winograd_applies(weight, stride, dilation, groups, out)) {
    return prepare_winograd(ctx, weight, weight.data_ptr<const float>(), ocg, k, out);
  }
  const bool is_2d = weight.dim == 4;
  const int64_t positions = out.dim == 4 ? out.sizes[2] * out.sizes[3] : out.sizes[2];
  const bool rows = positions_as_rows(ocg, positions, k);
  const int tile = rows ? gemm_nr<float>() : gemm_mr<float>();
  const int64_t group_stride =
      rows ? packed_panels_size(ocg, k, tile, GemmBlocking<float>::kNC)
           : packed_panels_size(ocg, k, tile, GemmBlocking<float>::kMC);
  auto* state = ctx.allocate_state<ConvPrepared>();
  if (state == nullptr) return ctx.failure();
  auto* packed = static_cast<float*>(
      ctx.allocate(static_cast<size_t>(group_stride * groups) * sizeof(float), 64));
  if (packed == nullptr) return ctx.failure();
  ConvGeometry g{};
  g.c_per_group = weight.sizes[1];
  g.kh = is_2d ? weight.sizes[2] : 1;
  g.kw = weight.sizes[is_2d ? 3 : 2];
  const float* w = weight.data_ptr<const float>();
  for (int64_t grp = 0; grp < groups; ++grp) {
    const WeightSource<float> a{w + grp * ocg * weight.strides[0], weight.strides[0],
                                weight.strides[1], is_2d ? weight.strides[2] : 0,
                                weight.strides[is_2d ? 3 : 2], &g};
    if (rows) {
      (void)pack_b_for_gemm<float>(TransposedSource<WeightSource<float>>{a}, k, ocg,
                                   packed + grp * group_stride);
    } else {
      (void)pack_a_for_gemm<float>(a, ocg, k, packed + grp * group_stride);
    }
  }
  // outᵀ is computed into scratch, then transposed into out; with more than
  // one thread im2col's operand is packed into scratch once for all of them.
  const bool im2col = !(k == weight.sizes[1] && stride_is_one(stride) && padding_is_zero(padding));
  const auto threads = static_cast<int64_t>(ctx.threads());
  const bool share =
      threads > 1 && im2col &&
      (rows ? gemm_splits_columns<float>(threads, positions, ocg, false, true)
            : !gemm_splits_columns<float>(threads, ocg, positions, true, false));
  const int64_t shared = share ? shared_columns_floats(rows, positions, k) : 0;
  const int64_t table = rows && im2col ? im2row_table_ints(positions, k / weight.sizes[1]) : 0;
  const int64_t scratch = (rows ? transposed_out_floats(positions, ocg) : 0) + table + shared;
  if (scratch > 0) ctx.reserve_scratch(static_cast<size_t>(scratch) * sizeof(float));
  *state = ConvPrepared{weight.data, packed, group_stride, ocg, k, tile, rows, {}, {}, 0, false, {}};
  ctx.set_state(state);
  ctx.mark_packed(weight);  // run_conv reads the panels only (the GEMM path is fixed by the weight).
  return Error::Ok;
}

void convolution_run(KernelContext& ctx, const Tensor& input_arg, const Tensor& weight_arg,
                     const Tensor* bias, IntSpan stride_arg, IntSpan padding_arg,
                     IntSpan dilation_arg, bool transposed, IntSpan output_padding,
                     int64_t groups_arg, const ConvEpilogue* fused, Tensor& out_arg) {
  const Tensor* input = &input_arg;
  const Tensor* weight = &weight_arg;
  Tensor* out = &out_arg;
  EMBER_KERNEL_CHECK(ctx, input->dim >= 3 && input->dim <= 5,
                     "input: expected [N, C, L], [N, C, H, W] or [N, C, D, H, W], got shape %s",
                     ShapeStr(input->shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, weight->dim == input->dim,
                     "weight: shape %s does not match input of shape %s",
                     ShapeStr(weight->shape()).c_str(), ShapeStr(input->shape()).c_str());
  const int32_t spatial = input->dim - 2;
  ConvConfig config;
  {
    char msg[400];
    const ConvArgs conv_args{stride_arg, padding_arg, dilation_arg, transposed, output_padding,
                             groups_arg};
    if (!conv_read_config(conv_args, spatial, &config, msg, sizeof(msg))) {
      ctx.fail(Error::InvalidArgument, "%s", msg);
      return;
    }
  }
  if (bias != nullptr && !check_dtype(ctx, *bias, "bias", input->dtype)) return;
  // A bfloat16 weight with a float32 input: what prepare packed (only
  // fused_convolution's prepare accepts one).
  const auto* bf16_state = static_cast<const ConvPrepared*>(ctx.state());
  const bool bf16_weight = weight->dtype == ScalarType::BFloat16 &&
                           input->dtype == ScalarType::Float;
  if (bf16_weight) {
    EMBER_KERNEL_CHECK(ctx, bf16_state != nullptr &&
                                (bf16_state->bf16.data != nullptr ||
                                 bf16_state->bf16_amx.data != nullptr ||
                                 bf16_state->winograd.packed != nullptr) &&
                                bf16_state->weight_data == weight->data,
                       "weight: a bfloat16 weight must be the constant packed at load");
  }
  if ((!bf16_weight && !check_dtype(ctx, *weight, "weight", input->dtype)) ||
      !check_dtype(ctx, *out, "out", input->dtype)) {
    return;
  }
  // The paths below that do not take the epilogue per tile run it after.
  auto epilogue_after = [&] {
    if (fused != nullptr && ctx.failure() == Error::Ok && out->numel > 0 &&
        residual_fits(ctx, fused, *out)) {
      apply_conv_epilogue(ctx, *fused, *out);
    }
  };
  if (config.transposed) {
    conv_transposed_out(ctx, *input, *weight, bias, config, *out);
    epilogue_after();
    return;
  }
  const int64_t groups = config.groups;
  const int64_t* stride = config.stride;
  const int64_t* padding = config.padding;
  const int64_t* dilation = config.dilation;

  const int64_t c_in = input->sizes[1];
  const int64_t oc = weight->sizes[0];
  EMBER_KERNEL_CHECK(ctx, groups >= 1 && c_in % groups == 0 && oc % groups == 0,
                     "groups: %lld does not divide input channels %lld and output channels %lld",
                     static_cast<long long>(groups), static_cast<long long>(c_in),
                     static_cast<long long>(oc));
  EMBER_KERNEL_CHECK(ctx, weight->sizes[1] == c_in / groups,
                     "weight: shape %s expects %d input channels per group, input of shape %s "
                     "with %lld groups has %lld",
                     ShapeStr(weight->shape()).c_str(), weight->sizes[1],
                     ShapeStr(input->shape()).c_str(), static_cast<long long>(groups),
                     static_cast<long long>(c_in / groups));
  if (bias != nullptr) {
    EMBER_KERNEL_CHECK(ctx, bias->dim == 1 && bias->sizes[0] == oc,
                       "bias: expected shape [%lld], got %s", static_cast<long long>(oc),
                       ShapeStr(bias->shape()).c_str());
  }

  if (spatial == 3 || (input->dtype != ScalarType::Float && input->dtype != ScalarType::Double)) {
    run_direct(ctx, *input, *weight, bias, groups, stride, padding, dilation, *out);
    epilogue_after();
    return;
  }
  ConvGeometry g{};
  g.c_per_group = c_in / groups;
  g.kh = spatial == 2 ? weight->sizes[2] : 1;
  g.kw = weight->sizes[spatial == 2 ? 3 : 2];
  g.in_h = spatial == 2 ? input->sizes[2] : 1;
  g.in_w = input->sizes[spatial == 2 ? 3 : 2];
  g.stride_h = spatial == 2 ? stride[0] : 1;
  g.stride_w = stride[spatial - 1];
  g.pad_h = spatial == 2 ? padding[0] : 0;
  g.pad_w = padding[spatial - 1];
  g.dil_h = spatial == 2 ? dilation[0] : 1;
  g.dil_w = dilation[spatial - 1];
  const int64_t span_h = g.dil_h * (g.kh - 1) + 1;
  const int64_t span_w = g.dil_w * (g.kw - 1) + 1;
  EMBER_KERNEL_CHECK(ctx, g.in_h + 2 * g.pad_h >= span_h && g.in_w + 2 * g.pad_w >= span_w,
                     "input: padded input of shape %s is smaller than the dilated kernel of "
                     "weight shape %s",
                     ShapeStr(input->shape()).c_str(), ShapeStr(weight->shape()).c_str());
  g.out_h = (g.in_h + 2 * g.pad_h - span_h) / g.stride_h + 1;
  g.out_w = (g.in_w + 2 * g.pad_w - span_w) / g.stride_w + 1;

  int32_t shape[4];
  shape[0] = input->sizes[0];
  shape[1] = static_cast<int32_t>(oc);
  if (spatial == 2) {
    shape[2] = static_cast<int32_t>(g.out_h);
    shape[3] = static_cast<int32_t>(g.out_w);
  } else {
    shape[2] = static_cast<int32_t>(g.out_w);
  }
  if (!resize_out(ctx, *out, {shape, static_cast<size_t>(input->dim)})) return;
  // The GEMM writes an output plane as one strided row per channel.
  if (spatial == 2 && g.out_h > 1 && g.out_w > 1 &&
      out->strides[2] != g.out_w * out->strides[3]) {
    ctx.fail(Error::NotSupported,
             "out: dim order with W outside H (strides [%lld, %lld, %lld, %lld]) is not "
             "supported",
             static_cast<long long>(out->strides[0]), static_cast<long long>(out->strides[1]),
             static_cast<long long>(out->strides[2]), static_cast<long long>(out->strides[3]));
    return;
  }
  if (out->numel == 0 || !residual_fits(ctx, fused, *out)) return;
  // The panels prepare packed, if they are of this weight and geometry.
  const auto* prepared = static_cast<const ConvPrepared*>(ctx.state());
  if (prepared != nullptr &&
      (prepared->weight_data != weight->data || prepared->ocg != oc / groups ||
       prepared->k != g.c_per_group * g.kh * g.kw)) {
    prepared = nullptr;
  }
  if (prepared != nullptr && prepared->winograd.packed != nullptr) {
    run_winograd(ctx, *input, bias, g, prepared->winograd, fused, *out);
    return;
  }
  if (bf16_weight) {
    // The bf16 GEMM writes each channel's output positions contiguously.
    const int64_t pos_stride = spatial == 1 || g.out_w == 1 ? out->strides[2] : out->strides[3];
    EMBER_KERNEL_CHECK(ctx, prepared != nullptr && (pos_stride == 1 || out->numel == 0),
                       "out: a bfloat16 weight needs an output with contiguous positions (NCHW "
                       "dim order), its position stride is %lld",
                       static_cast<long long>(pos_stride));
  }
  const bool ok = dispatch_dtype<kF32F64>(input->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_conv<T>(ctx, *input, *weight, bias, groups, g, prepared, fused, *out);
  });
  if (!ok) fail_dtype(ctx, "input", input->dtype);
}

Error convolution_out_prepare(KernelPrepareContext& ctx, const Tensor& input,
                              const Tensor& weight, const Tensor* bias, IntSpan stride,
                              IntSpan padding, IntSpan dilation, bool transposed,
                              IntSpan output_padding, int64_t groups, Tensor& out) {
  EMBER_PREPARE_CHECK(ctx, weight.dtype != ScalarType::BFloat16 || input.dtype != ScalarType::Float,
                      "weight: dtype %s, the input's is %s (only "
                      "ember_fused::fused_convolution takes a bfloat16 weight with float32)",
                      scalar_type_name(weight.dtype), scalar_type_name(input.dtype));
  return convolution_prepare(ctx, input, weight, bias, stride, padding, dilation, transposed,
                             output_padding, groups, out);
}

void convolution_out(KernelContext& ctx, const Tensor& input, const Tensor& weight,
                     const Tensor* bias, IntSpan stride, IntSpan padding, IntSpan dilation,
                     bool transposed, IntSpan output_padding, int64_t groups, Tensor& out) {
  convolution_run(ctx, input, weight, bias, stride, padding, dilation, transposed,
                  output_padding, groups, nullptr, out);
}

}  // namespace ember::kernels::portable
