// The shared body of aten::mm.out and aten::bmm.out, which differ only in
// the batch dim, and the weight packing mm and addmm prepare.
#pragma once

#include <cstdint>

#include "kernels/portable/util/gemm.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

/// `(Tensor self, Tensor mat2, *, Tensor(a!) out)` with self [b,] m×k and
/// mat2 [b,] k×n, `rank` being 2 (mm) or 3 (bmm): checks that all three share
/// one dtype, resizes out to [b,] m×n and writes self · mat2 per batch. Fails
/// the kernel on any mismatch. `packed` is mat2 packed at prepare (or null).
struct MatmulPrepared;
void matmul_out(KernelContext& ctx, const Tensor& self, const Tensor& mat2, Tensor& out,
                int32_t rank, const MatmulPrepared* packed = nullptr);

/// What mm's, addmm's and bmm's prepare leave: a constant float32 mat2
/// [k, n] (bmm: [b, k, n]) packed as the GEMM's B operand, one set of panels
/// per batch, `batch_stride` floats apart.
struct MatmulPrepared {
  const void* mat2_data = nullptr;  // The constant it was packed from.
  PackedPanels<float> panels;       // Batch 0.
  int64_t batches = 1;
  int64_t batch_stride = 0;

  PackedPanels<float> batch(int64_t i) const {
    PackedPanels<float> p = panels;
    p.data += i * batch_stride;
    return p;
  }
};

/// The prepare step of a product `a` · `mat2` (2-D, or 3-D batches for bmm):
/// packs mat2 when it is a float32 program constant and each product is
/// large enough to take the blocked GEMM (more than kGemvMaxM rows and
/// columns), else leaves no state. Fails only when the method allocator is
/// exhausted.
Error prepare_constant_mat2(KernelPrepareContext& ctx, const Tensor& a, const Tensor& mat2);

/// What prepare packed for `mat2`, or null (not packed, or not this mat2).
const MatmulPrepared* prepared_mat2(const KernelContext& ctx, const Tensor& mat2);

}  // namespace ember::kernels::portable
