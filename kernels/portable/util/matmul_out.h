// The shared body of aten::mm.out and aten::bmm.out, which differ only in
// the batch dim.
#pragma once

#include <cstdint>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

/// `(Tensor self, Tensor mat2, *, Tensor(a!) out)` with self [b,] m×k and
/// mat2 [b,] k×n, `rank` being 2 (mm) or 3 (bmm): checks that all three share
/// one dtype, resizes out to [b,] m×n and writes self · mat2 per batch. Fails
/// the kernel on any mismatch.
void matmul_out(KernelContext& ctx, EValue** args, int32_t rank);

}  // namespace ember::kernels::portable
