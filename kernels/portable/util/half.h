// Half (IEEE binary16) and BFloat16 storage types with float conversion.
//
// Kernels compute in float and store in these types; conversions round to
// nearest even and keep NaN/Inf, matching PyTorch's CPU results.
#pragma once

#include <cstdint>
#include <cstring>

namespace ember::kernels::portable {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

struct Half {
  uint16_t bits = 0;

  Half() = default;
  explicit Half(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    const uint32_t u = float_bits(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) {  // Inf or NaN; keep NaN quiet.
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    }
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // Rounds to Inf.
    if (abs < 0x38800000u) {
      // Subnormal half (or zero): add as float so the FPU rounds to nearest even
      // at the 2^-24 quantum, then take the low bits.
      const float magic = bits_float(0x3f000000u);  // 0.5: exponent aligns 2^-24 with bit 0.
      const float r = bits_float(abs) + magic;
      return static_cast<uint16_t>(sign | (float_bits(r) - 0x3f000000u));
    }
    // Normal: rebias exponent, round mantissa 23 → 10 bits to nearest even.
    uint32_t v = abs - 0x38000000u;
    v += 0x0fffu + ((v >> 13) & 1u);
    return static_cast<uint16_t>(sign | (v >> 13));
  }

  static float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
      // Zero or subnormal: value = man * 2^-24, exact in float.
      const float v = static_cast<float>(man) * bits_float(0x33800000u);  // 2^-24
      return sign ? -v : v;
    }
    return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
  }
};

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  explicit BFloat16(float f) : bits(from_float(f)) {}
  operator float() const { return bits_float(static_cast<uint32_t>(bits) << 16); }

  static uint16_t from_float(float f) {
    const uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN
    const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>((u + rounding) >> 16);
  }
};

}  // namespace ember::kernels::portable
