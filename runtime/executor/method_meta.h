// MethodMeta: what a method takes and returns and how much memory it needs,
// read from the program without loading the method.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/core/evalue.h"
#include "runtime/core/result.h"

namespace ember_fb {
struct ExecutionPlan;
}

namespace ember {

struct TensorInfo {
  ScalarType dtype;
  std::span<const int32_t> sizes;      // Upper bounds for dynamic tensors.
  std::span<const uint8_t> dim_order;
  TensorShapeDynamism dynamism;
  size_t nbytes;
};

class MethodMeta {
 public:
  explicit MethodMeta(const ember_fb::ExecutionPlan* plan) : plan_(plan) {}
  /// From a loaded method: also knows what its kernels' prepare steps took.
  MethodMeta(const ember_fb::ExecutionPlan* plan, size_t prepared_bytes)
      : plan_(plan), prepared_bytes_(prepared_bytes), loaded_(true) {}

  const char* name() const;
  size_t num_inputs() const;
  size_t num_outputs() const;
  Result<Tag> input_tag(size_t index) const;
  Result<Tag> output_tag(size_t index) const;
  /// Fails with InvalidArgument when the input is not a tensor.
  Result<TensorInfo> input_tensor_info(size_t index) const;
  Result<TensorInfo> output_tensor_info(size_t index) const;
  /// Planned buffers, not counting the reserved buffer 0.
  size_t num_planned_buffers() const;
  Result<int64_t> planned_buffer_size(size_t index) const;
  size_t num_instructions() const;
  size_t num_operators() const;
  size_t num_values() const;
  /// Bytes the kernels' prepare steps took from the method allocator (packed
  /// weights, derived state). Known once the method is loaded, so only for
  /// the meta of a Method (Method::method_meta()); InvalidState from a
  /// Program's.
  Result<size_t> prepared_bytes() const;

 private:
  Result<Tag> value_tag(int32_t value_index) const;
  Result<TensorInfo> tensor_info(int32_t value_index) const;
  const ember_fb::ExecutionPlan* plan_;
  size_t prepared_bytes_ = 0;
  bool loaded_ = false;
};

}  // namespace ember
