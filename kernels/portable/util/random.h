// The kernels' random number generator: splitmix64 over the 64-bit state in
// `KernelContext::rng_state()` (the generator op_randn.cpp documents), and
// helpers on top of it. Deterministic per method; not PyTorch's generator.
#pragma once

#include <cstdint>

namespace ember::kernels::portable {

/// Advances `state` by the golden-ratio increment and returns the splitmix64
/// finaliser of it.
inline uint64_t rng_next(uint64_t& state) {
  state += 0x9E3779B97F4A7C15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// A uniform double in [0, 1) with `bits` random bits (<= 53): the top
/// `bits` of the next word times 2^-bits, so rounding to a float type with
/// `bits` of precision stays exact and below 1.
inline double rng_uniform(uint64_t& state, int bits) {
  return static_cast<double>(rng_next(state) >> (64 - bits)) /
         static_cast<double>(uint64_t{1} << bits);
}

/// A uniform integer in [0, bound) (bound > 0), by Lemire's multiply-shift.
inline uint64_t rng_below(uint64_t& state, uint64_t bound) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(rng_next(state)) * bound) >> 64);
}

}  // namespace ember::kernels::portable
