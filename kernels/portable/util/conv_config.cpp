#include "kernels/portable/util/conv_config.h"

#include <cinttypes>
#include <cstdio>

#include "kernels/portable/util/args.h"

namespace ember::kernels::portable {
namespace {

// Reads one of the per-dim lists into out[0..spatial): a one-value list is
// broadcast; every value must lie in [min_value, INT32_MAX].
bool read_list(IntSpan list, const char* name, int32_t spatial, int64_t min_value, int64_t* out,
               char* msg, size_t msg_size) {
  if (list.size() != 1 && list.size() != static_cast<size_t>(spatial)) {
    std::snprintf(msg, msg_size, "%s: expected %d values (one per spatial dim) or 1, got %s",
                  name, spatial, ShapeStr(list).c_str());
    return false;
  }
  for (int32_t i = 0; i < spatial; ++i) {
    out[i] = list[list.size() == 1 ? 0 : i];
    if (out[i] < min_value || out[i] > INT32_MAX) {
      std::snprintf(msg, msg_size, "%s: %s has a value %s %" PRId64, name, ShapeStr(list).c_str(),
                    out[i] < min_value ? "below" : "above",
                    out[i] < min_value ? min_value : int64_t{INT32_MAX});
      return false;
    }
  }
  return true;
}

}  // namespace

bool conv_read_config(const ConvArgs& args, int32_t spatial, ConvConfig* config, char* msg,
                      size_t msg_size) {
  ConvConfig c;
  c.spatial = spatial;
  c.transposed = args.transposed;
  c.groups = args.groups;
  if (c.groups < 1 || c.groups > INT32_MAX) {
    std::snprintf(msg, msg_size, "groups: must be at least 1, got %" PRId64, c.groups);
    return false;
  }
  if (!read_list(args.stride, "stride", spatial, 1, c.stride, msg, msg_size) ||
      !read_list(args.padding, "padding", spatial, 0, c.padding, msg, msg_size) ||
      !read_list(args.dilation, "dilation", spatial, 1, c.dilation, msg, msg_size)) {
    return false;
  }
  // Without transposed, eager ignores output_padding; so does Ember.
  if (c.transposed) {
    if (!read_list(args.output_padding, "output_padding", spatial, 0, c.output_padding, msg,
                   msg_size)) {
      return false;
    }
    for (int32_t d = 0; d < spatial; ++d) {
      // Eager's rule: an output_padding as large as both the stride and the
      // dilation would add rows no input position reaches.
      if (c.output_padding[d] >= c.stride[d] && c.output_padding[d] >= c.dilation[d]) {
        std::snprintf(msg, msg_size,
                      "output_padding: must be smaller than either stride or dilation, but "
                      "spatial dim %d has output_padding %" PRId64 ", stride %" PRId64
                      " and dilation %" PRId64 " (output_padding %s, stride %s, dilation %s)",
                      d, c.output_padding[d], c.stride[d], c.dilation[d],
                      ShapeStr(std::span<const int64_t>(c.output_padding, spatial)).c_str(),
                      ShapeStr(std::span<const int64_t>(c.stride, spatial)).c_str(),
                      ShapeStr(std::span<const int64_t>(c.dilation, spatial)).c_str());
        return false;
      }
    }
  }
  *config = c;
  return true;
}

bool conv_check_weight(const ConvConfig& config, std::span<const int32_t> weight,
                       int64_t in_channels, char* msg, size_t msg_size) {
  const char* layout = config.transposed ? "[C_in, C_out/groups, k...]"
                                         : "[C_out, C_in/groups, k...]";
  if (weight.size() != static_cast<size_t>(config.spatial) + 2) {
    std::snprintf(msg, msg_size, "weight: expected rank %d (%s), got shape %s",
                  config.spatial + 2, layout, ShapeStr(weight).c_str());
    return false;
  }
  for (size_t d = 2; d < weight.size(); ++d) {
    if (weight[d] < 1) {
      std::snprintf(msg, msg_size, "weight: kernel size must be at least 1, got shape %s",
                    ShapeStr(weight).c_str());
      return false;
    }
  }
  const int64_t g = config.groups;
  if (config.transposed) {
    if (weight[0] % g != 0 || weight[1] < 1) {
      std::snprintf(msg, msg_size,
                    "groups: %" PRId64 " does not divide the input channels of weight shape %s "
                    "(%s) or the weight has no output channels",
                    g, ShapeStr(weight).c_str(), layout);
      return false;
    }
    if (in_channels >= 0 && in_channels != weight[0]) {
      std::snprintf(msg, msg_size,
                    "weight: shape %s (%s) expects %d input channels, the input has %" PRId64,
                    ShapeStr(weight).c_str(), layout, weight[0], in_channels);
      return false;
    }
    return true;
  }
  if (weight[0] % g != 0) {
    std::snprintf(msg, msg_size,
                  "groups: %" PRId64 " does not divide the output channels of weight shape %s",
                  g, ShapeStr(weight).c_str());
    return false;
  }
  if (in_channels >= 0 && in_channels % g != 0) {
    std::snprintf(msg, msg_size, "groups: %" PRId64 " does not divide input channels %" PRId64,
                  g, in_channels);
    return false;
  }
  if (in_channels >= 0 && weight[1] * g != in_channels) {
    std::snprintf(msg, msg_size,
                  "weight: shape %s expects %d input channels per group, the input with %" PRId64
                  " groups has %" PRId64,
                  ShapeStr(weight).c_str(), weight[1], g, in_channels / g);
    return false;
  }
  return true;
}

bool conv_output_size(const ConvConfig& config, int32_t d, int64_t in, int64_t k, int64_t* out,
                      char* msg, size_t msg_size) {
  const int64_t s = config.stride[d], p = config.padding[d], dil = config.dilation[d];
  const int64_t span = dil * (k - 1) + 1;
  int64_t size;
  if (config.transposed) {
    // Each term is below 2^62 (int32 sizes, values up to INT32_MAX); only the
    // sum can overflow.
    size = 0;
    if (in >= 1 && __builtin_add_overflow((in - 1) * s, span, &size)) size = INT64_MAX;
    if (in >= 1 && size != INT64_MAX) size = size - 2 * p + config.output_padding[d];
  } else {
    size = in + 2 * p < span ? 0 : (in + 2 * p - span) / s + 1;
  }
  if (size >= 1 && size <= INT32_MAX) {
    *out = size;
    return true;
  }
  if (in < 1) {
    std::snprintf(msg, msg_size,
                  "input: spatial dim %d has size %" PRId64
                  "; only the batch and channel dims may be empty",
                  d, in);
  } else if (config.transposed) {
    std::snprintf(msg, msg_size,
                  "input: spatial dim %d of size %" PRId64 " gives output size %" PRId64
                  " = (%" PRId64 " - 1) * stride %" PRId64 " - 2 * padding %" PRId64
                  " + dilation %" PRId64 " * (kernel %" PRId64 " - 1) + output_padding %" PRId64
                  " + 1, outside [1, %d]",
                  d, in, size, in, s, p, dil, k, config.output_padding[d],
                  INT32_MAX);
  } else {
    std::snprintf(msg, msg_size,
                  "input: spatial dim %d of size %" PRId64 " with padding %" PRId64
                  " is smaller than the dilated kernel (%" PRId64 ")",
                  d, in, p, span);
  }
  return false;
}

Error conv_load_check(const Tensor& input, bool input_constant, const Tensor& weight,
                      bool weight_constant, const Tensor* bias, const ConvArgs& args) {
  if (weight.dim < 3 || weight.dim > 5) {
    return set_error(Error::InvalidProgram,
                     "weight: expected [*, *, L], [*, *, H, W] or [*, *, D, H, W], got shape %s",
                     ShapeStr(weight.shape()).c_str());
  }
  const int32_t spatial = weight.dim - 2;
  char msg[400];
  ConvConfig config;
  if (!conv_read_config(args, spatial, &config, msg, sizeof(msg))) {
    return set_error(Error::InvalidProgram, "%s", msg);
  }
  const bool weight_fixed = weight_constant || weight.dynamism == TensorShapeDynamism::Static;
  if (!weight_fixed) return Error::Ok;
  const bool input_static = input_constant || input.dynamism == TensorShapeDynamism::Static;
  if (input_static && input.dim != weight.dim) {
    return set_error(Error::InvalidProgram, "weight: shape %s does not match input of shape %s",
                     ShapeStr(weight.shape()).c_str(), ShapeStr(input.shape()).c_str());
  }
  if (!conv_check_weight(config, weight.shape(), input_static ? input.sizes[1] : -1, msg,
                         sizeof(msg))) {
    return set_error(Error::InvalidProgram, "%s", msg);
  }
  const int64_t out_channels = conv_out_channels(config, weight.shape());
  if (bias != nullptr && bias->dynamism == TensorShapeDynamism::Static) {
    if (bias->dim != 1 || bias->sizes[0] != out_channels) {
      return set_error(Error::InvalidProgram, "bias: expected shape [%" PRId64 "], got %s",
                       out_channels, ShapeStr(bias->shape()).c_str());
    }
  }
  if (!input_static) return Error::Ok;
  for (int32_t d = 0; d < spatial; ++d) {
    int64_t size = 0;
    if (!conv_output_size(config, d, input.sizes[2 + d], weight.sizes[2 + d], &size, msg,
                          sizeof(msg))) {
      return set_error(Error::InvalidProgram, "%s", msg);
    }
  }
  return Error::Ok;
}

}  // namespace ember::kernels::portable
