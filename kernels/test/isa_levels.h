// The ISA levels this host runs (baseline always; AVX2 and AVX-512 when
// present), whatever EMBER_ISA says: tests call each kernel build directly.
#pragma once

#include <vector>

#include "kernels/portable/util/cpu_isa.h"

namespace ember::testing {

inline std::vector<kernels::portable::Isa> host_isa_levels() {
  using kernels::portable::Isa;
  std::vector<Isa> isas{Isa::kBaseline};
  if (kernels::portable::host_isa() >= Isa::kAvx2) isas.push_back(Isa::kAvx2);
  if (kernels::portable::host_isa() >= Isa::kAvx512) isas.push_back(Isa::kAvx512);
  return isas;
}

}  // namespace ember::testing
