// The int8 GEMM microkernel kinds this host can run, whatever EMBER_ISA
// says: the kernels' tests run every one of them against their references.
#pragma once

#include <vector>

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

}  // namespace ember::kernels::quantized
