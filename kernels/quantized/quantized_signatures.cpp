// Kernel signatures of the quantized_decomposed kernels (see
// runtime/kernel/kernel_signature.h), so load_method checks the kind of every
// argument. Written by hand: tools/gen_kernel_signatures.py covers aten ops,
// and PyTorch has no schemas for these out overloads (Ember defines them in
// python/ember/exir/operator/quantized_decomposed.py; keep the two in step).
#include <iterator>

#include "runtime/kernel/kernel_signature.h"

namespace ember::kernels::quantized {
namespace {

const KernelSignature kSignatures[] = {
    {"quantized_decomposed::quantize_per_tensor.out", "TDIIIITT",
     "input,scale,zero_point,quant_min,quant_max,dtype,out,return"},
    {"quantized_decomposed::quantize_per_tensor.tensor_out", "TTTIIITT",
     "input,scale,zero_point,quant_min,quant_max,dtype,out,return"},
    {"quantized_decomposed::dequantize_per_tensor.out", "TDIIIIiTT",
     "input,scale,zero_point,quant_min,quant_max,dtype,out_dtype,out,return"},
    {"quantized_decomposed::dequantize_per_tensor.tensor_out", "TTTIIIiTT",
     "input,scale,zero_point,quant_min,quant_max,dtype,out_dtype,out,return"},
    {"quantized_decomposed::quantize_per_channel.out", "TTTIIIITT",
     "input,scales,zero_points,axis,quant_min,quant_max,dtype,out,return"},
    {"quantized_decomposed::dequantize_per_channel.out", "TTtIIIIiTT",
     "input,scales,zero_points,axis,quant_min,quant_max,dtype,out_dtype,out,return"},
    {"quantized_decomposed::choose_qparams.Tensor_out", "TIIDITTX",
     "input,quant_min,quant_max,eps,dtype,scale_out,zero_point_out,return"},
};

const KernelSignatureRegistration kRegistration(kSignatures, std::size(kSignatures));

}  // namespace
}  // namespace ember::kernels::quantized
