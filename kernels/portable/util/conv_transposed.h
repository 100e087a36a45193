// Transposed convolution (ConvTranspose1d/2d/3d): convolution.out with
// transposed = true. The weight is [C_in, C_out/groups, k...]; every input
// position scatters input · weight over the output window it reaches:
//   out[n, g·OCg + oc, i·stride − pad + k·dil] += x[n, g·Cg + c, i] · w[g·Cg + c, oc, k]
// and out's size per dim is (in − 1)·stride − 2·pad + dil·(k − 1) + output_padding + 1.
#pragma once

#include "kernels/portable/util/conv_config.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable {

/// out = conv_transpose(input, weight) + bias for [N, C, *spatial] tensors in
/// any dim order (1 to 3 spatial dims), all of one real dtype (checked by the
/// caller, as are the ranks); `config` comes from conv_read_config with
/// transposed set. Checks the weight, bias and output sizes, resizes out and
/// fails through ctx with a message naming the argument. float32/float64 with
/// 1 or 2 spatial dims run as GEMMs (col = Wᵀ·x, scattered into out); the
/// rest as a direct loop accumulating in float (16-bit floats) or wrapping
/// int64 (integers). Allocates nothing: scratch lives on the stack.
void conv_transposed_out(KernelContext& ctx, const Tensor& input, const Tensor& weight,
                         const Tensor* bias, const ConvConfig& config, Tensor& out);

}  // namespace ember::kernels::portable
