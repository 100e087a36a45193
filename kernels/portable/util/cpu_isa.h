// The instruction-set level the kernels dispatch on, read once per process.
//
// Every kernel that has more than one build (baseline x86-64, AVX2+FMA, and
// later AVX-512) asks cpu_isa() which one to run. The answer is the host's
// level, capped by the environment variable EMBER_ISA (baseline, avx2, avx512
// or amx), so one machine can run and compare every path it has: `make test`
// runs the kernel suites again with EMBER_ISA=baseline (and avx2, avx512 below
// the host's level). A cap above what the
// host has changes nothing; an unknown value is reported on stderr once and
// ignored.
#pragma once

#include <cstdint>

namespace ember::kernels::portable {

/// Ordered levels: a level implies every level below it.
enum class Isa : uint8_t {
  kBaseline = 0,  // x86-64 SSE2 (or any CPU off x86): the plain loops
  kAvx2 = 1,      // AVX2 + FMA
  kAvx512 = 2,    // AVX-512 F/BW/DQ/VL
  kAmx = 3,       // kAvx512 and AMX tiles (AMX-TILE, -BF16, -INT8), with the
                  // kernel's permission to use them (amx.h): Sapphire Rapids and later
};

/// The level the host CPU supports, ignoring EMBER_ISA.
Isa host_isa();

/// The level kernels dispatch on: min(host_isa(), EMBER_ISA). Read once.
Isa cpu_isa();

/// "baseline", "avx2", "avx512" or "amx".
const char* isa_name(Isa isa);

/// Parses an EMBER_ISA value; false for anything but the four names.
bool parse_isa(const char* text, Isa* out);

}  // namespace ember::kernels::portable
