// OwnedTensor: a runtime Tensor together with the storage behind it (sizes,
// dim order, strides and bytes), for apps, tools, tests and benchmarks that
// feed a method. Uses the STL; never part of the runtime's execute path.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/core/tensor.h"

namespace ember::extension {

class OwnedTensor {
 public:
  OwnedTensor() { bind(); }
  /// Zero-filled tensor of `sizes`; `dim_order` defaults to contiguous.
  OwnedTensor(ScalarType dtype, std::span<const int32_t> sizes,
              std::span<const uint8_t> dim_order = {})
      : sizes_(sizes.begin(), sizes.end()), dim_order_(dim_order.begin(), dim_order.end()) {
    dtype_ = dtype;
    if (dim_order_.empty()) {
      for (size_t i = 0; i < sizes_.size(); ++i) dim_order_.push_back(static_cast<uint8_t>(i));
    }
    bind();
    data_.assign(tensor_.nbytes(), 0);
    bind();
  }
  OwnedTensor(const OwnedTensor&) = delete;
  OwnedTensor& operator=(const OwnedTensor&) = delete;
  // The tensor points into the vectors, so a move rebinds it.
  OwnedTensor(OwnedTensor&& other) noexcept { *this = std::move(other); }
  OwnedTensor& operator=(OwnedTensor&& other) noexcept {
    sizes_ = std::move(other.sizes_);
    dim_order_ = std::move(other.dim_order_);
    data_ = std::move(other.data_);
    dtype_ = other.dtype_;
    bind();
    return *this;
  }

  Tensor& tensor() { return tensor_; }
  const Tensor& tensor() const { return tensor_; }
  std::vector<uint8_t>& bytes() { return data_; }

  /// Replaces the bytes (same size as the tensor's) and rebinds.
  void set_bytes(std::vector<uint8_t> bytes) {
    data_ = std::move(bytes);
    bind();
  }

 private:
  void bind() {
    // Rank-0 tensors keep one slot so the pointers are never null.
    const size_t slots = sizes_.empty() ? 1 : sizes_.size();
    sizes_.reserve(slots);
    dim_order_.reserve(slots);
    strides_.assign(slots, 1);
    tensor_.dtype = dtype_;
    tensor_.dim = static_cast<int32_t>(sizes_.size());
    tensor_.sizes = sizes_.empty() ? &scalar_size_ : sizes_.data();
    tensor_.dim_order = dim_order_.empty() ? &scalar_order_ : dim_order_.data();
    tensor_.strides = strides_.data();
    tensor_.update_strides();
    tensor_.data = data_.data();
    tensor_.capacity_bytes = data_.size();
  }

  ScalarType dtype_ = ScalarType::Float;
  std::vector<int32_t> sizes_;
  std::vector<uint8_t> dim_order_;
  std::vector<int64_t> strides_;
  std::vector<uint8_t> data_;
  int32_t scalar_size_ = 1;
  uint8_t scalar_order_ = 0;
  Tensor tensor_;
};

}  // namespace ember::extension
