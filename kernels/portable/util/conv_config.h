// convolution.out's configuration: stride, padding, dilation, transposed,
// output_padding and groups (arguments 3 to 8), the weight's shape against
// them and the output size, checked by one set of functions that both
// load_method (conv_load_check) and the kernel call, so a program is refused
// at load with the message the kernel would give at execute.
//
// The kernel checks again at execute: call_kernel runs kernels without a
// load, and int lists are boxed (an item may be a SymInt computed at run
// time). The checks are a few integer compares per spatial dim.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"

namespace ember::kernels::portable {

/// Argument indices of aten::convolution.out.
inline constexpr int kConvInput = 0, kConvWeight = 1, kConvBias = 2, kConvStride = 3,
                     kConvPadding = 4, kConvDilation = 5, kConvTransposed = 6,
                     kConvOutputPadding = 7, kConvGroups = 8, kConvOut = 9;

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

/// Reads arguments 3..8 for `spatial` spatial dims and checks them as
/// PyTorch does: stride >= 1, padding >= 0, dilation >= 1, groups >= 1; when
/// transposed, output_padding >= 0 and smaller than the stride or the
/// dilation of its dim. Each list has one value or one per dim. False after
/// writing a message naming the argument and its values into `msg`.
bool conv_read_config(EValue* const* args, int32_t spatial, ConvConfig* config, char* msg,
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

/// load_method's check of a convolution.out call: the configuration always,
/// the weight's shape when it is a constant or static, the input's channels,
/// the bias length and the output sizes when those tensors are static.
/// Error::InvalidProgram after set_error with the message.
Error conv_load_check(EValue* const* args, const bool* constant, size_t num_args);

}  // namespace ember::kernels::portable
