// Dtype dispatch, compute types, element load/store across dtypes, and
// PyTorch's type promotion rules.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/portable/util/half.h"
#include "runtime/core/evalue.h"
#include "runtime/core/scalar_type.h"

namespace ember::kernels::portable {

template <typename T>
struct TypeTag {
  using type = T;
};

/// Storage type of a bool tensor element: the byte as it is in memory.
/// Reading a byte other than 0/1 through a C++ `bool` is undefined behaviour,
/// and tensor memory can hold any byte (a planned buffer reused across dtypes,
/// a caller's buffer), so kernels never read bool storage as `bool`: this type
/// reads any non-zero byte as true and writes 0/1. Its compute type is `bool`.
struct BoolByte {
  uint8_t byte = 0;

  BoolByte() = default;
  explicit BoolByte(bool b) : byte(b ? 1 : 0) {}
  operator bool() const { return byte != 0; }
};
static_assert(sizeof(BoolByte) == 1 && alignof(BoolByte) == 1);

/// True for the storage type of bool tensors.
template <typename S>
inline constexpr bool kIsBoolStorage = std::is_same_v<S, BoolByte>;

/// Dtype families an op accepts; combine with `|`.
enum DTypeSet : uint32_t {
  kF32F64 = 1u,        // float32, float64
  kHalfBF16 = 2u,      // float16, bfloat16
  kIntegral = 4u,      // uint8, int8, int16, int32, int64
  kBoolType = 8u,      // bool
  kFloating = kF32F64 | kHalfBF16,
  kRealTypes = kFloating | kIntegral,
  kAllTypes = kRealTypes | kBoolType,
};

/// Calls `f(TypeTag<T>{})` with the storage type T of `t` when `t` is in
/// `kSet`; returns false (without calling) otherwise. Only the types of the
/// set are instantiated. Bool tensors dispatch as `BoolByte`, never `bool`.
template <uint32_t kSet, typename F>
[[nodiscard]] bool dispatch_dtype(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Float:
      if constexpr ((kSet & kF32F64) != 0) { f(TypeTag<float>{}); return true; }
      break;
    case ScalarType::Double:
      if constexpr ((kSet & kF32F64) != 0) { f(TypeTag<double>{}); return true; }
      break;
    case ScalarType::Half:
      if constexpr ((kSet & kHalfBF16) != 0) { f(TypeTag<Half>{}); return true; }
      break;
    case ScalarType::BFloat16:
      if constexpr ((kSet & kHalfBF16) != 0) { f(TypeTag<BFloat16>{}); return true; }
      break;
    case ScalarType::Byte:
      if constexpr ((kSet & kIntegral) != 0) { f(TypeTag<uint8_t>{}); return true; }
      break;
    case ScalarType::Char:
      if constexpr ((kSet & kIntegral) != 0) { f(TypeTag<int8_t>{}); return true; }
      break;
    case ScalarType::Short:
      if constexpr ((kSet & kIntegral) != 0) { f(TypeTag<int16_t>{}); return true; }
      break;
    case ScalarType::Int:
      if constexpr ((kSet & kIntegral) != 0) { f(TypeTag<int32_t>{}); return true; }
      break;
    case ScalarType::Long:
      if constexpr ((kSet & kIntegral) != 0) { f(TypeTag<int64_t>{}); return true; }
      break;
    case ScalarType::Bool:
      if constexpr ((kSet & kBoolType) != 0) { f(TypeTag<BoolByte>{}); return true; }
      break;
    default:
      break;
  }
  return false;
}

/// The type arithmetic happens in: float for the 16-bit floats, bool for
/// bool storage, else T.
template <typename T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<BoolByte> {
  using type = bool;
};
template <>
struct ComputeType<Half> {
  using type = float;
};
template <>
struct ComputeType<BFloat16> {
  using type = float;
};
template <typename T>
using compute_t = typename ComputeType<T>::type;

template <typename T>
inline constexpr bool kIsFloatStorage =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// Converts between compute and storage values with PyTorch's casting:
/// to bool is `!= 0`; float to int truncates; a BoolByte reads as `byte != 0`
/// and is written as 0/1.
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, BoolByte>) {
    return convert<To>(static_cast<bool>(v));
  } else if constexpr (std::is_same_v<To, BoolByte>) {
    return BoolByte(convert<bool>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
      return static_cast<float>(v) != 0.0f;
    } else {
      return v != From(0);
    }
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return static_cast<To>(static_cast<float>(v));
  } else {
    return static_cast<To>(v);
  }
}

/// Reads element `off` of `base` (dtype `t`) as CT. For mixed-dtype paths;
/// the same-dtype paths read typed pointers directly.
template <typename CT>
inline CT load_as(const void* base, ScalarType t, int64_t off) {
  switch (t) {
    case ScalarType::Float: return convert<CT>(static_cast<const float*>(base)[off]);
    case ScalarType::Double: return convert<CT>(static_cast<const double*>(base)[off]);
    case ScalarType::Half: return convert<CT>(static_cast<const Half*>(base)[off]);
    case ScalarType::BFloat16: return convert<CT>(static_cast<const BFloat16*>(base)[off]);
    case ScalarType::Byte: return convert<CT>(static_cast<const uint8_t*>(base)[off]);
    case ScalarType::Char: return convert<CT>(static_cast<const int8_t*>(base)[off]);
    case ScalarType::Short: return convert<CT>(static_cast<const int16_t*>(base)[off]);
    case ScalarType::Int: return convert<CT>(static_cast<const int32_t*>(base)[off]);
    case ScalarType::Long: return convert<CT>(static_cast<const int64_t*>(base)[off]);
    case ScalarType::Bool: return convert<CT>(static_cast<const BoolByte*>(base)[off]);
    default: return CT{};
  }
}

template <typename CT>
inline void store_as(void* base, ScalarType t, int64_t off, CT v) {
  switch (t) {
    case ScalarType::Float: static_cast<float*>(base)[off] = convert<float>(v); break;
    case ScalarType::Double: static_cast<double*>(base)[off] = convert<double>(v); break;
    case ScalarType::Half: static_cast<Half*>(base)[off] = convert<Half>(v); break;
    case ScalarType::BFloat16: static_cast<BFloat16*>(base)[off] = convert<BFloat16>(v); break;
    case ScalarType::Byte: static_cast<uint8_t*>(base)[off] = convert<uint8_t>(v); break;
    case ScalarType::Char: static_cast<int8_t*>(base)[off] = convert<int8_t>(v); break;
    case ScalarType::Short: static_cast<int16_t*>(base)[off] = convert<int16_t>(v); break;
    case ScalarType::Int: static_cast<int32_t*>(base)[off] = convert<int32_t>(v); break;
    case ScalarType::Long: static_cast<int64_t*>(base)[off] = convert<int64_t>(v); break;
    case ScalarType::Bool: static_cast<BoolByte*>(base)[off] = convert<BoolByte>(v); break;
    default: break;
  }
}

/// "No dtype yet" in promotion; not a valid ScalarType value.
inline constexpr ScalarType kUndefinedDtype = static_cast<ScalarType>(-1);

/// The dtypes the portable kernels know (the ten of `dispatch_dtype`).
bool is_supported_dtype(ScalarType t);

/// torch.promote_types(a, b) for the supported dtypes.
ScalarType promote_types(ScalarType a, ScalarType b);

/// 0 bool, 1 integral, 2 floating: PyTorch's promotion categories.
int dtype_category(ScalarType t);

/// torch.can_cast(from, to): no floating → integral, no non-bool → bool.
bool can_cast(ScalarType from, ScalarType to);

/// The dtype PyTorch gives a Python scalar: Bool, Long, or the default
/// float dtype (float32) for a double.
ScalarType scalar_dtype(const EValue& v);

/// torch.result_type over operands of three priorities: tensors with
/// dims > zero-dim tensors > Python scalars. A lower priority operand only
/// changes the result when its category is higher.
struct ResultTypeState {
  ScalarType dim_result = kUndefinedDtype;
  ScalarType zero_dim_result = kUndefinedDtype;
  ScalarType wrapped_result = kUndefinedDtype;

  void add_tensor(const Tensor& t);
  void add_scalar(const EValue& v);
  ScalarType result() const;
};

/// Result dtype of a binary op between two tensors.
ScalarType result_type(const Tensor& a, const Tensor& b);
/// Result dtype of a binary op between a tensor and a Python scalar.
ScalarType result_type(const Tensor& a, const EValue& scalar);

}  // namespace ember::kernels::portable
