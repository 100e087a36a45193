// aten::linalg_ldl_factor_ex.out(Tensor self, *, bool hermitian=False, bool check_errors=False, Tensor(a!) LD, Tensor(b!) pivots, Tensor(c!) info)
// aten::linalg_ldl_solve.out(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False, Tensor(a!) out)
//
// Bunch-Kaufman factorisation P A P^T = L D L^T of batches of symmetric
// matrices (only the lower triangle of A is read) with LAPACK sytrf's
// conventions (uplo=L, what eager returns): LD holds unit-lower L below D's
// diagonal blocks, its upper triangle zeroed; D has 1x1 and 2x2 blocks; a
// pivot p > 0 says row/column k was swapped with p (1-based) for a 1x1
// block, a pair of equal p < 0 at k, k+1 that row/column k+1 was swapped
// with -p for a 2x2 block. info is the 1-based index of the first exactly
// zero column (D then singular). ldl_solve solves A X = B from LD and pivots
// (sytrs), with broadcast batch dims. For real matrices hermitian=True is
// the same factorisation. float32 and float64, computed in double.
#include <cmath>

#include "kernels/generated/functions/portable/op_linalg_ldl.h"
#include "kernels/portable/util/linalg.h"

namespace ember::kernels::portable {
namespace {

using linalg::Batch;
using linalg::cols;
using linalg::rows;

using linalg::sq;

// BLAS idamax over `count` elements `stride` apart: the first index of the
// largest |x|, or of the first NaN (as eager's BLAS), 0 when count is 0.
int32_t first_max_abs(const double* x, int32_t count, int64_t stride) {
  int32_t best = 0;
  double top = -1.0;
  for (int32_t i = 0; i < count; ++i) {
    const double v = std::fabs(x[i * stride]);
    if (std::isnan(v)) return i;
    if (v > top) {
      top = v;
      best = i;
    }
  }
  return best;
}

// Fortran's MAX as eager's LAPACK evaluates it: b when either is NaN.
double lapack_max(double a, double b) { return a > b ? a : b; }

void swap(double* x, double* y) {
  const double t = *x;
  *x = *y;
  *y = t;
}

// dsytf2 (uplo=L) on the n x n row-major `a`, 0-based in the code, 1-based
// in `piv` and the returned info. The pivot choice (alpha = (1 + sqrt 17) /
// 8) bounds the growth of L; it is what makes LD and pivots eager's.
int32_t ldl_factor(double* a, int32_t n, int32_t* piv) {
  const double alpha = (1.0 + std::sqrt(17.0)) / 8.0;
  auto A = [a, n](int32_t i, int32_t j) -> double& { return a[static_cast<int64_t>(i) * n + j]; };
  int32_t info = 0;
  int32_t k = 0;
  while (k < n) {
    int32_t kstep = 1, kp = k;
    const double absakk = std::fabs(A(k, k));
    int32_t imax = k;
    double colmax = 0.0;
    if (k + 1 < n) {
      imax = k + 1 + first_max_abs(&A(k + 1, k), n - k - 1, n);
      colmax = std::fabs(A(imax, k));
    }
    // A column that is zero but for a NaN on the diagonal counts as zero; a
    // NaN below it is a pivot candidate.
    if (lapack_max(absakk, colmax) == 0.0) {
      // A zero column: D(k,k) is singular; nothing to eliminate.
      if (info == 0) info = k + 1;
      piv[k] = k + 1;
      ++k;
      continue;
    }
    if (!(absakk >= alpha * colmax)) {  // a NaN diagonal looks for a pivot too
      // The largest off-diagonal element of row/column imax (rows k..n-1).
      double rowmax = std::fabs(A(imax, k + first_max_abs(&A(imax, k), imax - k, 1)));
      if (imax + 1 < n) {
        const int32_t j = imax + 1 + first_max_abs(&A(imax + 1, imax), n - imax - 1, n);
        rowmax = lapack_max(rowmax, std::fabs(A(j, imax)));
      }
      if (absakk >= alpha * colmax * (colmax / rowmax)) {
        kp = k;
      } else if (std::fabs(A(imax, imax)) >= alpha * rowmax) {
        kp = imax;
      } else {
        kp = imax;
        kstep = 2;
      }
    }
    const int32_t kk = k + kstep - 1;
    if (kp != kk) {
      // Symmetric interchange of rows/columns kk and kp in the trailing
      // lower triangle.
      for (int32_t i = kp + 1; i < n; ++i) swap(&A(i, kk), &A(i, kp));
      for (int32_t j = kk + 1; j < kp; ++j) swap(&A(j, kk), &A(kp, j));
      swap(&A(kk, kk), &A(kp, kp));
      if (kstep == 2) swap(&A(k + 1, k), &A(kp, k));
    }
    if (kstep == 1) {
      const double d11 = 1.0 / A(k, k);
      for (int32_t j = k + 1; j < n; ++j) {
        const double x = -d11 * A(j, k);
        for (int32_t i = j; i < n; ++i) A(i, j) += x * A(i, k);
      }
      for (int32_t i = k + 1; i < n; ++i) A(i, k) *= d11;
      piv[k] = kp + 1;
    } else {
      if (k + 2 < n) {
        double d21 = A(k + 1, k);
        const double d11 = A(k + 1, k + 1) / d21;
        const double d22 = A(k, k) / d21;
        const double t = 1.0 / (d11 * d22 - 1.0);
        d21 = t / d21;
        for (int32_t j = k + 2; j < n; ++j) {
          const double wk = d21 * (d11 * A(j, k) - A(j, k + 1));
          const double wkp1 = d21 * (d22 * A(j, k + 1) - A(j, k));
          for (int32_t i = j; i < n; ++i) A(i, j) -= A(i, k) * wk + A(i, k + 1) * wkp1;
          A(j, k) = wk;
          A(j, k + 1) = wkp1;
        }
      }
      piv[k] = piv[k + 1] = -(kp + 1);
    }
    k += kstep;
  }
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t j = i + 1; j < n; ++j) A(i, j) = 0.0;
  }
  return info;
}

void swap_rows(double* x, int32_t r1, int32_t r2, int32_t c) {
  if (r1 == r2) return;
  double* a = x + static_cast<int64_t>(r1) * c;
  double* b = x + static_cast<int64_t>(r2) * c;
  for (int32_t j = 0; j < c; ++j) swap(a + j, b + j);
}

// dsytrs (uplo=L): solves A X = B in place in `x` (n x c, row-major) from
// the factor `ld` (n x n) and 1-based `piv`.
void ldl_solve(const double* ld, const int32_t* piv, int32_t n, double* x, int32_t c) {
  auto L = [ld, n](int32_t i, int32_t j) { return ld[static_cast<int64_t>(i) * n + j]; };
  auto X = [x, c](int32_t i, int32_t j) -> double& { return x[static_cast<int64_t>(i) * c + j]; };
  // L D Y = P B, a block of D at a time.
  for (int32_t k = 0; k < n;) {
    if (piv[k] > 0) {
      swap_rows(x, k, piv[k] - 1, c);
      for (int32_t i = k + 1; i < n; ++i) {
        for (int32_t j = 0; j < c; ++j) X(i, j) -= L(i, k) * X(k, j);
      }
      for (int32_t j = 0; j < c; ++j) X(k, j) /= L(k, k);
      k += 1;
    } else {
      swap_rows(x, k + 1, -piv[k] - 1, c);
      for (int32_t i = k + 2; i < n; ++i) {
        for (int32_t j = 0; j < c; ++j) X(i, j) -= L(i, k) * X(k, j) + L(i, k + 1) * X(k + 1, j);
      }
      const double akm1k = L(k + 1, k);
      const double akm1 = L(k, k) / akm1k, ak = L(k + 1, k + 1) / akm1k;
      const double denom = akm1 * ak - 1.0;
      for (int32_t j = 0; j < c; ++j) {
        const double bkm1 = X(k, j) / akm1k, bk = X(k + 1, j) / akm1k;
        X(k, j) = (ak * bkm1 - bk) / denom;
        X(k + 1, j) = (akm1 * bk - bkm1) / denom;
      }
      k += 2;
    }
  }
  // L^T P X = Y, from the last block back.
  for (int32_t k = n - 1; k >= 0;) {
    const int32_t first = piv[k] > 0 ? k : k - 1;
    for (int32_t r = first; r <= k; ++r) {
      for (int32_t i = k + 1; i < n; ++i) {
        for (int32_t j = 0; j < c; ++j) X(r, j) -= L(i, r) * X(i, j);
      }
    }
    swap_rows(x, k, (piv[k] > 0 ? piv[k] : -piv[k]) - 1, c);
    k = first - 1;
  }
}

// Reads the pivots of one batch entry, refusing any that would index out of
// the matrix or split a 2x2 block (sytrf never writes those).
bool read_pivots(KernelContext& ctx, const Tensor& t, int64_t off, int32_t n, int32_t* dst) {
  const int64_t s = t.strides[t.dim - 1];
  for (int32_t i = 0; i < n; ++i) dst[i] = t.data_ptr<const int32_t>()[off + i * s];
  for (int32_t i = 0; i < n; ++i) {
    const int32_t p = dst[i];
    const bool pair = p < 0 && i + 1 < n && dst[i + 1] == p && -p > i + 1;
    if (p == 0 || p > n || p < -n || (p > 0 && p < i + 1) || (p < 0 && !pair)) {
      ctx.fail(Error::InvalidArgument,
               "pivots: entry %d is %d, not a pivot of sytrf for n = %d (1-based p >= i + 1, or "
               "a pair of equal -p at i, i + 1 with p >= i + 2)",
               i, p, n);
      return false;
    }
    if (p < 0) ++i;
  }
  return true;
}

}  // namespace

Error linalg_ldl_factor_ex_out_prepare(KernelPrepareContext& ctx, const Tensor& self,
                                       bool hermitian, bool check_errors, Tensor& LD,
                                       Tensor& pivots, Tensor& info) {
  (void)hermitian, (void)check_errors, (void)LD, (void)pivots, (void)info;
  ctx.reserve_scratch(linalg::scratch_bytes(sq(self), static_cast<size_t>(cols(self))));
  return Error::Ok;
}

void linalg_ldl_factor_ex_out(KernelContext& ctx, const Tensor& self, bool hermitian,
                              bool check_errors, Tensor& LD, Tensor& pivots, Tensor& info) {
  (void)hermitian;  // real matrices: Hermitian is symmetric
  if (!linalg::check_float(ctx, self, "self") || !linalg::check_square(ctx, self, "self") ||
      !check_dtype(ctx, LD, "LD", self.dtype) ||
      !check_dtype(ctx, pivots, "pivots", ScalarType::Int) ||
      !check_dtype(ctx, info, "info", ScalarType::Int)) {
    return;
  }
  const int32_t n = cols(self);
  Batch batch;
  if (!linalg::broadcast_batch(ctx, self, 2, "self", nullptr, 0, nullptr, &batch) ||
      !resize_out(ctx, LD, self.shape()) || !linalg::resize_batched(ctx, pivots, batch, {n}) ||
      !linalg::resize_batched(ctx, info, batch, {})) {
    return;
  }
  if (batch.count == 0) return;
  double* a = linalg::scratch_doubles(ctx, sq(self), static_cast<size_t>(n));
  if (a == nullptr) return;
  int32_t* piv = reinterpret_cast<int32_t*>(a + sq(self));
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(self, linalg::batch_offset(self, 2, batch, b), n, n, a);
    const int32_t code = ldl_factor(a, n, piv);
    linalg::store_matrix(LD, linalg::batch_offset(LD, 2, batch, b), n, n, a);
    const int64_t p_off = linalg::batch_offset(pivots, 1, batch, b);
    for (int32_t i = 0; i < n; ++i) {
      linalg::store_int(pivots, p_off + i * pivots.strides[pivots.dim - 1], piv[i]);
    }
    linalg::store_int(info, linalg::batch_offset(info, 0, batch, b), code);
    EMBER_KERNEL_CHECK(ctx, !check_errors || code == 0,
                       "torch.linalg.ldl_factor_ex: The factorization could not be completed "
                       "because the input is singular: D[%d,%d] is zero.",
                       code, code);
  }
}

Error linalg_ldl_solve_out_prepare(KernelPrepareContext& ctx, const Tensor& LD,
                                   const Tensor& pivots, const Tensor& B, bool hermitian,
                                   Tensor& out) {
  (void)pivots, (void)hermitian, (void)out;
  ctx.reserve_scratch(linalg::scratch_bytes(sq(LD) + static_cast<size_t>(rows(B)) * cols(B),
                                            static_cast<size_t>(cols(LD))));
  return Error::Ok;
}

void linalg_ldl_solve_out(KernelContext& ctx, const Tensor& LD, const Tensor& pivots,
                          const Tensor& B, bool hermitian, Tensor& out) {
  (void)hermitian;
  if (!linalg::check_float(ctx, LD, "LD") || !linalg::check_square(ctx, LD, "LD") ||
      !check_dtype(ctx, pivots, "pivots", ScalarType::Int) ||
      !check_dtype(ctx, B, "B", LD.dtype) || !check_dtype(ctx, out, "out", LD.dtype)) {
    return;
  }
  const int32_t n = cols(LD);
  EMBER_KERNEL_CHECK(ctx, B.dim >= 2 && rows(B) == n, "B %s must have %d rows, as LD %s",
                     ShapeStr(B.shape()).c_str(), n, ShapeStr(LD.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, pivots.dim == LD.dim - 1 && cols(pivots) == n,
                     "pivots %s must have shape batch + [%d] for LD %s",
                     ShapeStr(pivots.shape()).c_str(), n, ShapeStr(LD.shape()).c_str());
  Batch batch, ld_batch;
  if (!linalg::broadcast_batch(ctx, LD, 2, "LD", &pivots, 1, "pivots", &ld_batch) ||
      !linalg::broadcast_batch(ctx, B, 2, "B", &LD, 2, "LD", &batch) ||
      !linalg::resize_batched(ctx, out, batch, {rows(B), cols(B)})) {
    return;
  }
  if (out.numel == 0) return;
  const int32_t r = rows(B), c = cols(B);
  double* ld = linalg::scratch_doubles(ctx, sq(LD) + static_cast<size_t>(r) * c,
                                       static_cast<size_t>(n));
  if (ld == nullptr) return;
  double* x = ld + sq(LD);
  int32_t* piv = reinterpret_cast<int32_t*>(x + static_cast<size_t>(r) * c);
  for (int64_t b = 0; b < batch.count; ++b) {
    if (!read_pivots(ctx, pivots, linalg::batch_offset(pivots, 1, batch, b), n, piv)) return;
    linalg::load_matrix(LD, linalg::batch_offset(LD, 2, batch, b), n, n, ld);
    linalg::load_matrix(B, linalg::batch_offset(B, 2, batch, b), r, c, x);
    ldl_solve(ld, piv, n, x, c);
    linalg::store_matrix(out, linalg::batch_offset(out, 2, batch, b), r, c, x);
  }
}

}  // namespace ember::kernels::portable
