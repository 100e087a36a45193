// ember_quantized::linear_weight_only.out(Tensor input, Tensor weight, Tensor scales,
//     Tensor? zero_points, int group_size, Tensor? bias, *, Tensor(a!) out) -> Tensor(a!)
//
// A linear layer whose weight is stored as integers (torchao's weight-only
// flows: Int8WeightOnlyConfig, IntxWeightOnlyConfig with int4/int8 per group
// or per channel; ember.exir.passes.fuse_quantized_ops finds them):
//   out[..., n] = Σ_k input[..., k] · W[n][k] + bias[n],
//   W[n][k] = (float(weight[n][k]) − zero_points[n][g]) · scales[n][g], g = k / group_size.
// input float32 [..., K]; weight int8 [N, K], or uint8 [N, K / 2] with int4
// values two per byte (ember_quantized.pack_int4: what the fusion stores when
// every value is in [−8, 7]); scales float32 [N, K / group_size];
// zero_points float32 of the scales' shape or None (0); bias float32 [N].
//
// W is the float weight eager dequantizes, element for element. Decoding
// (up to 4 rows) runs a matrix-vector product, bound by memory bandwidth:
// - int4: when every weight value is in [−8, 7] (checked at prepare, so a
//   value out of range is never truncated: that weight takes the int8 path),
//   prepare repacks the weight two values per byte with the scale (and a zero
//   term c = −z·s when one is not 0) per group (qweight_int4.h): at groups of
//   32, 0.625 (0.75) bytes per weight read per token instead of the file's
//   1.25, and the file's weight, scales and zero points are not read again.
//   On AVX-512 VNNI and AVX2 hosts with groups that are multiples of 32, the
//   layout is 16-row blocks for integer dot products (qweight_int4_fixed.h):
//   each call writes the input rows in 23-bit fixed point per 32 k into the
//   scratch and sums integer products (VPDPBUSD: 1.6x the float kernel's 25
//   G weights/s from DRAM on a Zen 4 core; AVX2 VPMADDUBSW: about 3x); an
//   input with a NaN or infinity takes the float GEMM;
// - int8: prepare repacks the weight 4 rows interleaved (qweight_int8.h), so
//   the product reads one stream of whole lines (twice the bandwidth of row
//   by row on a Zen 4 core), and the file's weight is not read again; groups
//   that are neither the whole row nor multiples of 16 read the file's
//   weight row by row (qweight_gemv.h).
// More rows (a prompt) run the float GEMM with W dequantized while its panels
// are packed, so the weight is never stored as float; the input is packed
// once per call into the method's scratch.
#include <cstring>
#include <type_traits>

#include "kernels/generated/functions/quantized/op_quantized_linear_weight_only.h"
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/gemm.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/transpose_f32.h"
#include "kernels/quantized/util/qop_args.h"
#include "kernels/quantized/util/qweight_gemv.h"
#include "kernels/quantized/util/qweight_int4.h"
#include "kernels/quantized/util/qweight_int4_fixed.h"
#include "kernels/quantized/util/qweight_int8.h"

namespace ember::kernels::quantized {
namespace {

using portable::parallel_range;
using portable::resize_out;

// Rows up to this run the matrix-vector loop, which reads each weight once
// per row; above it the GEMM, which reads each once per call.
constexpr int64_t kGemvMaxRows = 4;

struct WeightOnly {
  const int8_t* w;
  const float* scales;
  const float* zeros;  // May be null.
  int64_t n, k, group, groups;
};

// B = Wᵀ (k × n) for the float GEMM, dequantized as it is packed: Rows
// writes kc values of weight row nn (B's column) from p0, contiguous; a
// strip's rows are dequantized into a block on the stack (vector lookups for
// int4, a vectorised loop for int8) and transposed into the panel (8×8
// register blocks on AVX2), instead of element by element at a stride.
template <typename Rows>
struct DequantizedT {
  Rows rows;
  template <int kNR, typename T>
  void pack_b(int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) const {
    static_assert(std::is_same_v<T, float>);
    constexpr int64_t kMaxDepth = portable::GemmBlocking<float>::kKC;  // gemm_blocked's kc
    alignas(64) float block[kNR * kMaxDepth];
    for (int64_t s = 0; s < nc; s += kNR) {
      const int64_t cols = nc - s < kNR ? nc - s : kNR;
      for (int64_t done = 0; done < kc; done += kMaxDepth) {
        const int64_t depth = kc - done < kMaxDepth ? kc - done : kMaxDepth;
        for (int64_t jj = 0; jj < cols; ++jj) {
          rows.row(j0 + s + jj, p0 + done, depth, block + jj * depth);
        }
        float* d = dst + done * kNR;
        portable::transpose_f32(block, depth, d, kNR, cols, depth);
        for (int64_t p = 0; p < depth && cols < kNR; ++p) {
          for (int64_t jj = cols; jj < kNR; ++jj) d[p * kNR + jj] = 0.0f;
        }
      }
      dst += kc * kNR;
    }
  }
};

// The file's int8 weight, group by group: contiguous int8 reads, one scale
// and zero point per run.
struct Int8Rows {
  const WeightOnly* q;
  void row(int64_t nn, int64_t p0, int64_t kc, float* dst) const {
    const int8_t* wrow = q->w + nn * q->k;
    int64_t p = 0;
    while (p < kc) {
      const int64_t kk = p0 + p;
      const int64_t g = nn * q->groups + kk / q->group;
      int64_t run = q->group - kk % q->group;
      if (run > kc - p) run = kc - p;
      const float z = q->zeros != nullptr ? q->zeros[g] : 0.0f;
      const float sc = q->scales[g];
      qweight_dequantize(wrow + kk, run, z, sc, dst + p);
      p += run;
    }
  }
};

// The int8 weight packed at prepare.
struct PackedInt8Rows {
  const Int8Weights* q;
  void row(int64_t nn, int64_t p0, int64_t kc, float* dst) const {
    qweight_int8_dequantize(*q, nn, p0, kc, dst);
  }
};

// The int4 weight packed at prepare.
struct Int4Rows {
  const Int4Weights* q;
  void row(int64_t nn, int64_t p0, int64_t kc, float* dst) const {
    qweight_int4_dequantize(*q, nn, p0, kc, dst, 1);
  }
};

// The int4 weight in VPDPBUSD's 16-row blocks.
struct Int4FixedRows {
  const Int4FixedWeights* q;
  void row(int64_t nn, int64_t p0, int64_t kc, float* dst) const {
    qweight_int4_fixed_dequantize(*q, nn, p0, kc, dst, 1);
  }
};

// Prompt rows whose input is packed once per call into the method's scratch
// (the GEMM's A panels): up to 4 MiB of it (at least 24 rows).
int64_t prompt_chunk_rows(int64_t rows, int64_t k) {
  int64_t chunk = (int64_t{4} << 20) / (static_cast<int64_t>(sizeof(float)) * k) / 24 * 24;
  if (chunk < 24) chunk = 24;
  return rows < chunk ? rows : chunk;
}

size_t prompt_scratch_bytes(int64_t rows, int64_t k) {
  return static_cast<size_t>(portable::packed_panels_size(
             prompt_chunk_rows(rows, k), k, portable::gemm_mr<float>(),
             portable::GemmBlocking<float>::kMC)) *
         sizeof(float);
}

// The layer's input features: the weight's columns, two per byte for uint8.
int64_t weight_columns(const Tensor& weight) {
  const int64_t cols = weight.dim == 2 ? weight.sizes[1] : 0;
  return weight.dtype == ScalarType::Byte ? 2 * cols : cols;
}

// What prepare leaves: the packed int4 or int8 weight, or neither (the
// file's int8 weight, row by row).
struct WeightOnlyState {
  bool int4 = false;
  bool int4_fixed = false;  // int4 in w4v, not w4
  bool int8 = false;
  Int4Weights w4;
  Int4FixedWeights w4v;
  Int8Weights w8;
};

// y = x · Wᵀ + b for a prompt: the float GEMM on W dequantized per call.
// With scratch, x is packed once per chunk of rows (the GEMM would otherwise
// repack its A block for every 96 columns of W); without, as it comes.
template <typename Rows>
void prompt_gemm(KernelContext& ctx, const float* x, int64_t rows, int64_t n, int64_t k,
                 const Rows& w, const float* b, float* y) {
  portable::GemmEpilogue<float> ep{};
  ep.col_bias = b;
  const portable::GemmEpilogue<float>* epilogue = b != nullptr ? &ep : nullptr;
  const DequantizedT<Rows> wt{w};
  const int64_t chunk = prompt_chunk_rows(rows, k);
  auto* apack = static_cast<float*>(ctx.scratch(prompt_scratch_bytes(rows, k)));
  if (apack == nullptr) {
    portable::gemm_parallel<float>(ctx, rows, n, k, portable::StridedMatrix<float>{x, k, 1}, wt,
                                   1.0f, 0.0f, y, n, 1, epilogue);
    return;
  }
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t rc = rows - r0 < chunk ? rows - r0 : chunk;
    const portable::StridedMatrix<float> xm{x + r0 * k, k, 1};
    const portable::PackedA<float, portable::StridedMatrix<float>> a{
        portable::pack_a_for_gemm<float>(xm, rc, k, apack), xm};
    portable::gemm_parallel<float>(ctx, rc, n, k, a, wt, 1.0f, 0.0f, y + r0 * n, n, 1,
                                   epilogue);
  }
}

}  // namespace

Error linear_weight_only_out_prepare(KernelPrepareContext& ctx, const Tensor& input,
                                     const Tensor& weight, const Tensor& scales,
                                     const Tensor* zero_points, int64_t group_size,
                                     const Tensor* bias, Tensor& out) {
  if (const Error err = check_float_in_out(ctx, input, out); err != Error::Ok) return err;
  const bool nibbles = weight.dtype == ScalarType::Byte;  // int4, two per byte
  if ((weight.dtype != ScalarType::Char && !nibbles) || weight.dim != 2 ||
      !ctx.is_constant(weight) || weight.data == nullptr || !weight.is_contiguous_dim_order()) {
    return ctx.fail(Error::InvalidProgram,
                    "weight must be a contiguous 2-d int8 constant of the program (or uint8, "
                    "int4 values two per byte), got %s with %d dims",
                    scalar_type_name(weight.dtype), weight.dim);
  }
  const int64_t n = weight.sizes[0], k = weight_columns(weight);
  if (group_size < 1 || k % group_size != 0) {
    return ctx.fail(Error::InvalidProgram, "group_size %lld must be >= 1 and divide the %lld "
                    "input features", static_cast<long long>(group_size),
                    static_cast<long long>(k));
  }
  const int64_t groups = k / group_size;
  auto check_groups = [&](const Tensor& t) {
    return t.dtype == ScalarType::Float && t.numel == n * groups && ctx.is_constant(t) &&
           t.data != nullptr && t.is_contiguous_dim_order();
  };
  if (!check_groups(scales) || (zero_points != nullptr && !check_groups(*zero_points))) {
    return ctx.fail(Error::InvalidProgram, "scales (and zero_points) must be float32 constants "
                    "with %lld x %lld values", static_cast<long long>(n),
                    static_cast<long long>(groups));
  }
  if (bias != nullptr && (bias->dtype != ScalarType::Float || bias->numel != n ||
                          !ctx.is_constant(*bias))) {
    return ctx.fail(Error::InvalidProgram, "bias must be a float32 constant with %lld values",
                    static_cast<long long>(n));
  }
  auto* state = ctx.allocate_state<WeightOnlyState>();
  if (state == nullptr) return ctx.failure();
  // Values outside [−8, 7] (an int8 weight): the int8 kernel, the file's bytes.
  if (nibbles || qweight_int4_fits(weight.data_ptr<const int8_t>(), n * k, nullptr, nullptr)) {
    const float* s = scales.data_ptr<const float>();
    const float* z = zero_points != nullptr ? zero_points->data_ptr<const float>() : nullptr;
    const bool zero_term = qweight_int4_has_zero_term(s, z, n * groups);
    state->int4 = true;
    state->int4_fixed = qweight_int4_fixed_preferred(portable::cpu_isa()) &&
                        qweight_int4_fixed_supports(k, group_size);
    void* mem = ctx.allocate(state->int4_fixed
                                 ? qweight_int4_fixed_packed_bytes(n, k, group_size, zero_term)
                                 : qweight_int4_packed_bytes(n, k, group_size, zero_term));
    if (mem == nullptr) return ctx.failure();
    if (state->int4_fixed) {
      state->w4v = nibbles ? qweight_int4_fixed_pack_nibbles(weight.data_ptr<const uint8_t>(), s,
                                                            z, n, k, group_size, mem)
                           : qweight_int4_fixed_pack(weight.data_ptr<const int8_t>(), s, z, n, k,
                                                    group_size, mem);
    } else {
      state->w4 = nibbles ? qweight_int4_pack_nibbles(weight.data_ptr<const uint8_t>(), s, z, n, k,
                                                    group_size, mem)
                        : qweight_int4_pack(weight.data_ptr<const int8_t>(), s, z, n, k,
                                            group_size, mem);
    }
    ctx.mark_packed(weight);
    ctx.mark_packed(scales);
    if (zero_points != nullptr) ctx.mark_packed(*zero_points);
  } else if (qweight_int8_packs(k, group_size)) {
    const float* z = zero_points != nullptr ? zero_points->data_ptr<const float>() : nullptr;
    void* mem = ctx.allocate(
        qweight_int8_packed_bytes(n, k, group_size, qweight_int8_has_zeros(z, n * groups)));
    if (mem == nullptr) return ctx.failure();
    state->int8 = true;
    state->w8 = qweight_int8_pack(weight.data_ptr<const int8_t>(), scales.data_ptr<const float>(),
                                  z, n, k, group_size, mem);
    ctx.mark_packed(weight);
    ctx.mark_packed(scales);
    if (zero_points != nullptr) ctx.mark_packed(*zero_points);
  }
  // A prompt's rows are packed once per call (prompt_gemm).
  const int64_t rows = k > 0 ? input.numel / k : 0;
  if (rows > kGemvMaxRows) ctx.reserve_scratch(prompt_scratch_bytes(rows, k));
  // Decoding's fixed-point input: up to 4 rows whatever the planned shape (a
  // dynamic prompt length plans the longest).
  if (state->int4_fixed) ctx.reserve_scratch(qweight_int4_fixed_input_bytes(kGemvMaxRows, k));
  ctx.set_state(state);
  return Error::Ok;
}

void linear_weight_only_out(KernelContext& ctx, const Tensor& input, const Tensor& weight,
                            const Tensor& scales, const Tensor* zero_points, int64_t group_size,
                            const Tensor* bias, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, input.dtype == ScalarType::Float,
                     "input: dtype %s is not supported (float32 only)",
                     scalar_type_name(input.dtype));
  const WeightOnly q{static_cast<const int8_t*>(weight.data), scales.data_ptr<const float>(),
                     zero_points != nullptr ? zero_points->data_ptr<const float>() : nullptr,
                     weight.sizes[0], weight_columns(weight), group_size,
                     weight_columns(weight) / group_size};
  EMBER_KERNEL_CHECK(ctx, input.dim >= 1 && input.sizes[input.dim - 1] == q.k,
                     "input's last dimension must be the weight's %lld input features",
                     static_cast<long long>(q.k));
  EMBER_KERNEL_CHECK(ctx, input.is_contiguous_dim_order(),
                     "input must have contiguous dim order");
  int32_t shape[kTensorMaxDim];
  for (int i = 0; i < input.dim; ++i) shape[i] = input.sizes[i];
  shape[input.dim - 1] = static_cast<int32_t>(q.n);
  if (!resize_out(ctx, out, std::span<const int32_t>(shape, static_cast<size_t>(input.dim)))) {
    return;
  }
  const int64_t rows = q.k > 0 ? input.numel / q.k : 0;
  if (rows == 0 || q.n == 0) return;
  const float* x = input.data_ptr<const float>();
  float* y = out.data_ptr<float>();
  const float* b = bias != nullptr ? bias->data_ptr<const float>() : nullptr;
  const auto* state = static_cast<const WeightOnlyState*>(ctx.state());
  EMBER_KERNEL_CHECK(ctx, state != nullptr, "not prepared");
  EMBER_KERNEL_CHECK(ctx, state->int4 || weight.dtype == ScalarType::Char,
                     "weight: a uint8 (int4) weight must be the constant packed at load");
  if (state->int4_fixed && rows <= kGemvMaxRows) {
    // The input in fixed point, once for every thread; a NaN or infinity
    // cannot be, and takes the GEMM below (float arithmetic, eager's NaNs).
    Int4FixedInput in;
    void* mem = ctx.scratch(qweight_int4_fixed_input_bytes(rows, q.k));
    EMBER_KERNEL_CHECK(ctx, mem != nullptr, "scratch for %lld input rows was not reserved",
                       static_cast<long long>(rows));
    if (qweight_int4_fixed_input(x, rows, q.k, mem, &in)) {
      parallel_range(ctx, q.n, 64, kInt4FixedRows, [&](int64_t first, int64_t last) {
        qweight_int4_fixed_gemv(state->w4v, in, first, last, b, y);
      });
      return;
    }
  } else if (rows <= kGemvMaxRows) {
    parallel_range(ctx, q.n, 64, 16, [&](int64_t first, int64_t last) {
      if (state->int4) {
        // Blocks of 4 weight rows; every row of x in one pass over the weight.
        qweight_int4_gemv(state->w4, x, rows, first, last, b, y);
        return;
      }
      if (state->int8) {
        qweight_int8_gemv(state->w8, x, rows, first, last, b, y);
        return;
      }
      for (int64_t r = 0; r < rows; ++r) {
        qweight_gemv(x + r * q.k, q.w, q.scales, q.zeros, q.k, q.group, first, last, b,
                     y + r * q.n);
      }
    });
    return;
  }
  if (state->int4_fixed) {
    prompt_gemm(ctx, x, rows, q.n, q.k, Int4FixedRows{&state->w4v}, b, y);
  } else if (state->int4) {
    prompt_gemm(ctx, x, rows, q.n, q.k, Int4Rows{&state->w4}, b, y);
  } else if (state->int8) {
    prompt_gemm(ctx, x, rows, q.n, q.k, PackedInt8Rows{&state->w8}, b, y);
  } else {
    prompt_gemm(ctx, x, rows, q.n, q.k, Int8Rows{&q}, b, y);
  }
}

}  // namespace ember::kernels::quantized
