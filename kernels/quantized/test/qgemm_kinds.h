// The int8 GEMM microkernel kinds this host can run, whatever EMBER_ISA
// says: the kernels' tests run every one of them against their references.
#pragma once

#include <vector>

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/quantized/util/qgemm.h"

namespace ember::kernels::quantized {

inline std::vector<QGemmKind> host_kinds() {
  std::vector<QGemmKind> kinds{QGemmKind::kBaseline};
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) kinds.push_back(QGemmKind::kAvx2);
#endif
  if (qgemm_detail::host_has_avx512_vnni()) kinds.push_back(QGemmKind::kAvx512Vnni);
  return kinds;
}

/// host_kinds() and, on AMX hosts, kAmx: the kinds qgemm_run takes (the
/// implicit convolution has no AMX kind).
inline std::vector<QGemmKind> host_gemm_kinds() {
  std::vector<QGemmKind> kinds = host_kinds();
  if (portable::host_isa() >= portable::Isa::kAmx && qgemm_detail::host_has_avx512_vnni()) {
    kinds.push_back(QGemmKind::kAmx);
  }
  return kinds;
}

}  // namespace ember::kernels::quantized
