// Test helper: Tensor[] and Tensor?[] EValues over TestTensors (null = None).
#pragma once

#include <deque>
#include <vector>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {

class TensorLists {
 public:
  EValue* list(std::vector<TestTensor*> items, bool optional = false) {
    auto& ptrs = ptrs_.emplace_back();
    for (TestTensor* t : items) {
      ptrs.push_back(t ? &t->t : nullptr);
      optional = optional || t == nullptr;
    }
    EValue& e = values_.emplace_back();
    e.tag = optional ? Tag::OptionalTensorList : Tag::TensorList;
    e.as_tensor_list = TensorListRef{ptrs.data(), ptrs.size()};
    return &e;
  }
  EValue* str(const char* s) {
    EValue& e = values_.emplace_back();
    e.tag = Tag::String;
    e.as_string = s;
    return &e;
  }

 private:
  std::deque<std::vector<Tensor*>> ptrs_;
  std::deque<EValue> values_;
};

}  // namespace ember::testing
