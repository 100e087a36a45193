#include "kernels/portable/util/matmul_out.h"

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/gemv.h"
#include "kernels/portable/util/matmul.h"

namespace ember::kernels::portable {

Error prepare_constant_mat2(KernelPrepareContext& ctx, const Tensor& a, const Tensor& mat2) {
  const int32_t rank = mat2.dim;
  if (!ctx.is_constant(mat2) || mat2.dtype != ScalarType::Float || (rank != 2 && rank != 3) ||
      a.dim != rank || mat2.data == nullptr || mat2.numel == 0) {
    return Error::Ok;
  }
  const int32_t r = rank - 2;  // The row dim; dim 0 is the batch of a bmm.
  const int64_t batches = rank == 3 ? mat2.sizes[0] : 1;
  const int64_t k = mat2.sizes[r];
  const int64_t n = mat2.sizes[r + 1];
  // Products with at most kGemvMaxM rows (sizes are upper bounds here) or
  // columns run the small-m path on mat2 itself (matmul_strided): packing
  // would only cost memory.
  if (a.sizes[r] <= kGemvMaxM || n <= kGemvMaxM) return Error::Ok;
  const int nr = gemm_nr<float>();
  auto* state = ctx.allocate_state<MatmulPrepared>();
  if (state == nullptr) return ctx.failure();
  const int64_t size = packed_panels_size(n, k, nr, GemmBlocking<float>::kNC);
  auto* packed =
      static_cast<float*>(ctx.allocate(static_cast<size_t>(size * batches) * sizeof(float), 64));
  if (packed == nullptr) return ctx.failure();
  const float* data = mat2.data_ptr<const float>();
  for (int64_t i = 0; i < batches; ++i) {
    const StridedMatrix<float> b{data + (rank == 3 ? i * mat2.strides[0] : 0), mat2.strides[r],
                                 mat2.strides[r + 1]};
    const PackedPanels<float> panels = pack_b_for_gemm<float>(b, k, n, packed + i * size);
    if (i == 0) state->panels = panels;
  }
  state->mat2_data = mat2.data;
  state->batches = batches;
  state->batch_stride = size;
  ctx.set_state(state);
  // Every execute reads the panels (the GEMM, or f32_gemv_packed when a
  // dynamic A shrinks to a few rows): mat2 itself is never read again.
  ctx.mark_packed(mat2);
  return Error::Ok;
}

const MatmulPrepared* prepared_mat2(const KernelContext& ctx, const Tensor& mat2) {
  const auto* state = static_cast<const MatmulPrepared*>(ctx.state());
  const int32_t r = mat2.dim - 2;
  if (state == nullptr || state->mat2_data != mat2.data || (mat2.dim != 2 && mat2.dim != 3) ||
      state->batches != (mat2.dim == 3 ? mat2.sizes[0] : 1) ||
      state->panels.depth != mat2.sizes[r] || state->panels.rows != mat2.sizes[r + 1]) {
    return nullptr;
  }
  return state;
}

void matmul_out(KernelContext& ctx, const Tensor& self_arg, const Tensor& mat2_arg, Tensor& out_arg,
                int32_t rank, const MatmulPrepared* packed) {
  const Tensor* self = &self_arg;
  const Tensor* mat2 = &mat2_arg;
  Tensor* out = &out_arg;
  EMBER_KERNEL_CHECK(ctx, self->dim == rank, "self: expected a %d-D tensor, got shape %s", rank,
                     ShapeStr(self->shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, mat2->dim == rank, "mat2: expected a %d-D tensor, got shape %s", rank,
                     ShapeStr(mat2->shape()).c_str());
  const bool batched = rank == 3;
  const int32_t r = rank - 2;  // The row dim; dim 0 is the batch when batched.
  EMBER_KERNEL_CHECK(ctx,
                     (!batched || self->sizes[0] == mat2->sizes[0]) &&
                         self->sizes[r + 1] == mat2->sizes[r],
                     "self of shape %s and mat2 of shape %s cannot be %s",
                     ShapeStr(self->shape()).c_str(), ShapeStr(mat2->shape()).c_str(),
                     batched ? "batch-multiplied" : "multiplied");
  if (!check_dtype(ctx, *mat2, "mat2", self->dtype) || !check_dtype(ctx, *out, "out", self->dtype)) {
    return;
  }
  const int32_t m = self->sizes[r];
  const int32_t k = self->sizes[r + 1];
  const int32_t n = mat2->sizes[r + 1];
  const int32_t batched_shape[3] = {self->sizes[0], m, n};
  const int32_t shape[2] = {m, n};
  if (!resize_out(ctx, *out, batched ? std::span<const int32_t>(batched_shape)
                                     : std::span<const int32_t>(shape))) {
    return;
  }
  const int64_t batches = batched ? self->sizes[0] : 1;
  auto view = [&](const Tensor& t, int64_t i) {
    return MatView{t.data, batched ? i * t.strides[0] : 0, t.strides[r], t.strides[r + 1]};
  };
  const bool ok = dispatch_dtype<kRealTypes>(self->dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    auto product = [&](KernelContext& c, int64_t i) {
      const PackedPanels<float> panels = packed != nullptr ? packed->batch(i) : PackedPanels<float>{};
      matmul_strided<S>(c, m, n, k, view(*self, i), view(*mat2, i), view(*out, i), 1.0, 0.0,
                        packed != nullptr ? &panels : nullptr);
    };
    const int64_t macs = int64_t{m} * n * k;
    if (batches > 1 && macs < kGemmParallelMinMacs && batches * macs >= kGemmParallelMinMacs) {
      // Many small products (attention heads): one product per task, each
      // on its task's thread alone.
      ctx.parallel_for(static_cast<size_t>(batches), [&](size_t i) {
        KernelContext single_thread(ctx.op_name());
        product(single_thread, static_cast<int64_t>(i));
      });
    } else {
      for (int64_t i = 0; i < batches; ++i) product(ctx, i);
    }
  });
  if (!ok) fail_dtype(ctx, "self", self->dtype);
}

}  // namespace ember::kernels::portable
