// Test helper: the TensorList return slot the emitter passes to multi-out
// ops (max.dim_max, native_layer_norm.out, ...), built over TestTensors.
#pragma once

#include <initializer_list>
#include <vector>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {

struct ReturnList {
  std::vector<Tensor*> items;
  EValue ev;

  ReturnList(std::initializer_list<TestTensor*> outs) {
    for (TestTensor* t : outs) items.push_back(&t->t);
    ev.tag = Tag::TensorList;
    ev.as_tensor_list = TensorListRef{items.data(), items.size()};
  }
  ReturnList(const ReturnList&) = delete;
  ReturnList& operator=(const ReturnList&) = delete;
};

}  // namespace ember::testing
