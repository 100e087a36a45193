// Shared argument reading and checks for binary ops (broadcasting
// tensor-tensor and tensor-scalar forms), and wrapping integer arithmetic.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/dtype.h"
#include "kernels/portable/util/elementwise.h"

namespace ember::kernels::portable {

/// Checks that a, b and out have supported dtypes, that a and b broadcast,
/// resizes out to the broadcast shape, and that `common` casts to out's dtype.
bool prepare_binary(KernelContext& ctx, const Tensor& a, const Tensor& b, Tensor& out,
                    ScalarType common);

/// Fails unless every tensor has a dtype the portable kernels know.
bool check_supported(KernelContext& ctx, const Tensor& t, const char* name);

/// Fails unless `common` (the computed result dtype) casts to out's dtype.
bool check_can_cast(KernelContext& ctx, ScalarType common, const Tensor& out);

/// For a tensor (named `name`) combined with a Scalar: checks the dtypes,
/// resizes out to the tensor's shape and checks the promoted dtype (float32
/// for integral/bool results when `to_float`) casts to out's. Returns it, or
/// kUndefinedDtype after failing.
ScalarType prepare_tensor_scalar(KernelContext& ctx, const Tensor& t, const char* name,
                                 const EValue& scalar, Tensor& out, bool to_float);

// Integer +, -, * that wrap modulo 2^bits like PyTorch (no signed-overflow UB).
template <typename T>
inline T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return static_cast<T>(a + b);
  }
}
template <typename T>
inline T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  } else {
    return static_cast<T>(a - b);
  }
}
template <typename T>
inline T wrap_mul(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a && b;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

/// A Scalar argument as the compute type CT.
template <typename CT>
inline CT scalar_as(const EValue& v) {
  if constexpr (std::is_floating_point_v<CT>) {
    return static_cast<CT>(v.scalar_as_double());
  } else if constexpr (std::is_same_v<CT, bool>) {
    return v.scalar_as_double() != 0.0;
  } else {
    return static_cast<CT>(v.scalar_as_int());
  }
}

}  // namespace ember::kernels::portable
