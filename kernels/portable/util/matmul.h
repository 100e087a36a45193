// Matrix products on strided tensors, dispatched by dtype: float and double
// use the blocked `gemm`, the 16-bit floats and integers `gemm_reference`.
#pragma once

#include <cstdint>

#include "kernels/portable/util/dtype.h"
#include "kernels/portable/util/gemm.h"

namespace ember::kernels::portable {

/// A strided 2-D view into a tensor's data (element offsets and strides).
struct MatView {
  void* data;
  int64_t offset;
  int64_t rs;
  int64_t cs;
};

/// C = alpha · A·B + beta · C for storage type S (m×k times k×n).
template <typename S>
void matmul_strided(int64_t m, int64_t n, int64_t k, MatView a, MatView b, MatView c,
                    double alpha, double beta) {
  using CT = compute_t<S>;
  const S* pa = static_cast<const S*>(a.data) + a.offset;
  const S* pb = static_cast<const S*>(b.data) + b.offset;
  S* pc = static_cast<S*>(c.data) + c.offset;
  if constexpr (std::is_same_v<S, float> || std::is_same_v<S, double>) {
    gemm<S>(m, n, k, StridedMatrix<S>{pa, a.rs, a.cs}, StridedMatrix<S>{pb, b.rs, b.cs},
            static_cast<S>(alpha), static_cast<S>(beta), pc, c.rs, c.cs);
  } else {
    const CT al = std::is_integral_v<CT> ? static_cast<CT>(static_cast<int64_t>(alpha))
                                         : static_cast<CT>(alpha);
    const CT be = std::is_integral_v<CT> ? static_cast<CT>(static_cast<int64_t>(beta))
                                         : static_cast<CT>(beta);
    gemm_reference<S>(m, n, k, pa, a.rs, a.cs, pb, b.rs, b.cs, al, be, pc, c.rs, c.cs);
  }
}

}  // namespace ember::kernels::portable
