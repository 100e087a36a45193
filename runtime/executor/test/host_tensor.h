// A tensor over storage the test owns (sizes, dim order, strides, data), for
// tests that hand inputs to a Method.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/core/tensor.h"

namespace ember::testing {

struct HostTensor {
  HostTensor(std::vector<int32_t> s, std::vector<float> d, ScalarType type = ScalarType::Float)
      : sizes(std::move(s)), data(std::move(d)) {
    for (size_t i = 0; i < sizes.size(); ++i) dim_order.push_back(static_cast<uint8_t>(i));
    strides.resize(sizes.size());
    t.dtype = type;
    t.dim = static_cast<int32_t>(sizes.size());
    t.sizes = sizes.data();
    t.dim_order = dim_order.data();
    t.strides = strides.data();
    t.data = data.data();
    t.update_strides();
  }
  HostTensor(const HostTensor&) = delete;  // t points into the vectors.
  HostTensor& operator=(const HostTensor&) = delete;

  std::vector<int32_t> sizes;
  std::vector<uint8_t> dim_order;
  std::vector<int64_t> strides;
  std::vector<float> data;
  Tensor t;
};

}  // namespace ember::testing
