// Rounded division, remainder and fmod with PyTorch's semantics, for div
// (rounding modes), fmod and remainder kernels.
//
// Integer forms take `zero`, set when the divisor is 0 (the kernel then
// fails instead of dividing: that is UB in C++ and a crash in eager), and
// wrap INT_MIN / -1 like two's complement instead of trapping.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

namespace ember::kernels::portable {

template <typename T>
inline constexpr bool kIsIntegerCompute = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/// a / b rounded toward zero.
template <typename T>
inline T div_trunc(T a, T b, bool& zero) {
  if constexpr (kIsIntegerCompute<T>) {
    if (b == 0) {
      zero = true;
      return 0;
    }
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
    }
    return static_cast<T>(a / b);
  } else {
    (void)zero;
    return std::trunc(a / b);
  }
}

/// a / b rounded toward -inf. Floats follow Python's algorithm (as eager):
/// the quotient of (a - fmod(a, b)) / b, corrected, so results are exact.
template <typename T>
inline T div_floor(T a, T b, bool& zero) {
  if constexpr (kIsIntegerCompute<T>) {
    if (b == 0) {
      zero = true;
      return 0;
    }
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
      const T q = static_cast<T>(a / b);
      const T r = static_cast<T>(a % b);
      return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
    } else {
      return static_cast<T>(a / b);
    }
  } else {
    (void)zero;
    if (b == T(0)) return a / b;
    const T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
    if (div == T(0)) return std::copysign(T(0), a / b);
    T floordiv = std::floor(div);
    if (div - floordiv > T(0.5)) floordiv += T(1);
    return floordiv;
  }
}

/// C's fmod: the remainder has the sign of a.
template <typename T>
inline T mod_trunc(T a, T b, bool& zero) {
  if constexpr (kIsIntegerCompute<T>) {
    if (b == 0) {
      zero = true;
      return 0;
    }
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;
    }
    return static_cast<T>(a % b);
  } else {
    (void)zero;
    return std::fmod(a, b);
  }
}

/// Python's %: the remainder has the sign of b.
template <typename T>
inline T mod_floor(T a, T b, bool& zero) {
  if constexpr (kIsIntegerCompute<T>) {
    T r = mod_trunc(a, b, zero);
    if constexpr (std::is_signed_v<T>) {
      if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    }
    return r;
  } else {
    (void)zero;
    T r = std::fmod(a, b);
    if (r != T(0) && ((b < T(0)) != (r < T(0)))) r += b;
    return r;
  }
}

}  // namespace ember::kernels::portable
