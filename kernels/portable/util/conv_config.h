// convolution.out's configuration: stride, padding, dilation, transposed,
// output_padding and groups, the weight's shape against them and the output
// size, checked by one set of functions that both the prepare step at
// load_method (conv_load_check) and the kernel call, so a program is refused
// at load with the message the kernel would give at execute.
//
// The kernel checks again at execute: int lists are boxed (an item may be a
// SymInt computed at run time) and dynamic inputs change size. The checks are
// a few integer compares per spatial dim.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_args.h"

namespace ember::kernels::portable {

/// convolution.out's configuration arguments, as the kernel receives them.
struct ConvArgs {
  IntSpan stride, padding, dilation;
  bool transposed;
  IntSpan output_padding;
  int64_t groups;
};

/// One value per spatial dim (a one-value list is broadcast, as eager does).
struct ConvConfig {
  int32_t spatial = 0;  // 1, 2 or 3
  int64_t stride[3] = {1, 1, 1};
  int64_t padding[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  int64_t output_padding[3] = {0, 0, 0};  // Read only when transposed.
  bool transposed = false;
  int64_t groups = 1;
};

/// Reads the configuration for `spatial` spatial dims and checks them as
/// PyTorch does: stride >= 1, padding >= 0, dilation >= 1, groups >= 1; when
/// transposed, output_padding >= 0 and smaller than the stride or the
/// dilation of its dim. Each list has one value or one per dim. False after
/// writing a message naming the argument and its values into `msg`.
bool conv_read_config(const ConvArgs& args, int32_t spatial, ConvConfig* config, char* msg,
                      size_t msg_size);

/// Checks a weight shape against the config: rank spatial + 2, kernel sizes
/// >= 1, and groups dividing the channels ([C_out, C_in/groups, k...], or
/// [C_in, C_out/groups, k...] when transposed). `in_channels` < 0 skips the
/// check against the input's channels. False after writing a message.
bool conv_check_weight(const ConvConfig& config, std::span<const int32_t> weight,
                       int64_t in_channels, char* msg, size_t msg_size);

/// Output channels for a checked weight shape.
inline int64_t conv_out_channels(const ConvConfig& config, std::span<const int32_t> weight) {
  return config.transposed ? int64_t{weight[1]} * config.groups : int64_t{weight[0]};
}

/// The output size of spatial dim d for input size `in` and kernel size `k`:
///   (in + 2·pad − dil·(k−1) − 1) / stride + 1, or when transposed
///   (in − 1)·stride − 2·pad + dil·(k−1) + output_padding + 1.
/// False after writing a message when it is below 1 (or above INT32_MAX).
bool conv_output_size(const ConvConfig& config, int32_t d, int64_t in, int64_t k, int64_t* out,
                      char* msg, size_t msg_size);

/// The load-time check of a convolution.out call (its prepare step): the
/// configuration always, the weight's shape when it is a constant or static,
/// the input's channels, the bias length and the output sizes when those
/// tensors are static. Error::InvalidProgram after set_error with the message.
Error conv_load_check(const Tensor& input, bool input_constant, const Tensor& weight,
                      bool weight_constant, const Tensor* bias, const ConvArgs& args);

}  // namespace ember::kernels::portable
