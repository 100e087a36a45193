// EValue: one entry of a method's value table (a tensor, scalar, list, ...).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "runtime/core/tensor.h"

namespace ember {

enum class Tag : uint8_t {
  None = 0,
  Int,
  Double,
  Bool,
  Tensor,
  String,
  IntList,
  DoubleList,
  BoolList,
  TensorList,
  OptionalTensorList,
};

const char* tag_name(Tag tag);

struct EValue;

/// A list of ints whose items are other values (so a symbolic size computed
/// at run time shows up in every list that names it). `get()` refreshes the
/// unboxed copy; both arrays come from the method allocator.
struct BoxedIntList {
  EValue** items = nullptr;
  int64_t* unboxed = nullptr;
  size_t size = 0;
  std::span<const int64_t> get() const;
};

struct TensorListRef {
  Tensor** items = nullptr;  // An entry is null for None (optional lists only).
  size_t size = 0;
  std::span<Tensor* const> get() const { return {items, size}; }
};

struct EValue {
  Tag tag = Tag::None;
  union {
    int64_t as_int;
    double as_double;
    bool as_bool;
    Tensor* as_tensor;
    BoxedIntList as_int_list;
    std::span<const double> as_double_list;
    std::span<const bool> as_bool_list;
    TensorListRef as_tensor_list;
    std::string_view as_string;
  };

  EValue() : as_int(0) {}

  bool is_none() const { return tag == Tag::None; }
  bool is_int() const { return tag == Tag::Int; }
  bool is_double() const { return tag == Tag::Double; }
  bool is_bool() const { return tag == Tag::Bool; }
  bool is_tensor() const { return tag == Tag::Tensor; }
  bool is_scalar() const { return is_int() || is_double() || is_bool(); }

  Tensor& to_tensor() const { return *as_tensor; }
  /// A scalar as double (Int, Double or Bool).
  double scalar_as_double() const {
    return tag == Tag::Double ? as_double : tag == Tag::Bool ? (as_bool ? 1.0 : 0.0)
                                                             : static_cast<double>(as_int);
  }
  int64_t scalar_as_int() const {
    return tag == Tag::Int ? as_int : tag == Tag::Bool ? (as_bool ? 1 : 0)
                                                       : static_cast<int64_t>(as_double);
  }
};

inline std::span<const int64_t> BoxedIntList::get() const {
  for (size_t i = 0; i < size; ++i) unboxed[i] = items[i]->as_int;
  return {unboxed, size};
}

}  // namespace ember
