// aten::_linalg_svd.U(Tensor A, bool full_matrices=False, bool compute_uv=True, *, str? driver=None, Tensor(a!) U, Tensor(b!) S, Tensor(c!) Vh)
// aten::linalg_pinv.atol_rtol_tensor_out(Tensor self, *, Tensor? atol=None, Tensor? rtol=None, bool hermitian=False, Tensor(a!) out)
//
// SVD A = U diag(S) Vh of batches of m x n matrices by one-sided Jacobi
// (util/linalg.h; on A^T when m < n): S descending; U and Vh with k = min(m,
// n) columns/rows, or square (full_matrices; U or Vh completed to an
// orthonormal basis). Singular vectors are defined up to a common sign per
// pair (and a rotation within repeated singular values): Ember fixes the
// sign by V's largest component, LAPACK otherwise, so compare up to sign.
// compute_uv=False leaves U and Vh empty, as eager; driver is ignored (a
// CUDA choice). pinv is eager's rule: singular values (eigenvalues' absolute
// values when hermitian) above max(atol, rtol * largest) are inverted, the
// others dropped; rtol defaults to eps(dtype) * max(m, n), or 0 when atol is
// given and positive. float32 and float64, computed in double.
#include <cmath>
#include <optional>
#include <string_view>

#include "kernels/generated/functions/portable/op_linalg_svd.h"
#include "kernels/portable/util/linalg.h"

namespace ember::kernels::portable {
namespace {

using linalg::Batch;

using linalg::cols;
using linalg::rows;

struct SvdSizes {
  size_t big, small;  // max(m, n), min(m, n)
  size_t doubles() const { return big * small + small + small * small + big * big + big; }
};

SvdSizes svd_sizes(const Tensor& A) {
  const size_t m = static_cast<size_t>(rows(A)), n = static_cast<size_t>(cols(A));
  return {m > n ? m : n, m < n ? m : n};
}

struct SvdWork {
  double *a, *s, *v, *u, *work;
};

SvdWork svd_work(double* base, const SvdSizes& z) {
  SvdWork w;
  w.a = base;
  w.s = w.a + z.big * z.small;
  w.v = w.s + z.small;
  w.u = w.v + z.small * z.small;
  w.work = w.u + z.big * z.big;
  return w;
}

// SVD of batch entry b: the taller of A and A^T is factored; `swapped` says
// it was A^T (then A's U is the factor's V and Vh its U^T).
bool factor_svd(const Tensor& A, const Batch& batch, int64_t b, const SvdWork& w, int32_t u_cols,
                bool want_u) {
  const int32_t m = rows(A), n = cols(A);
  const bool swapped = m < n;
  const int32_t M = swapped ? n : m, N = swapped ? m : n;
  linalg::load_matrix(A, linalg::batch_offset(A, 2, batch, b), M, N, w.a, swapped);
  linalg::jacobi_svd(w.a, M, N, w.s, w.v, want_u ? w.u : nullptr, u_cols, w.work);
  return swapped;
}

}  // namespace

Error _linalg_svd_U_prepare(KernelPrepareContext& ctx, const Tensor& A, bool full_matrices,
                            bool compute_uv, std::optional<std::string_view> driver, Tensor& U,
                            Tensor& S, Tensor& Vh) {
  (void)full_matrices, (void)compute_uv, (void)driver, (void)U, (void)S, (void)Vh;
  ctx.reserve_scratch(linalg::scratch_bytes(svd_sizes(A).doubles()));
  return Error::Ok;
}

void _linalg_svd_U(KernelContext& ctx, const Tensor& A, bool full_matrices, bool compute_uv,
                   std::optional<std::string_view> driver, Tensor& U, Tensor& S, Tensor& Vh) {
  (void)driver;
  if (!linalg::check_float(ctx, A, "A") || !check_dtype(ctx, U, "U", A.dtype) ||
      !check_dtype(ctx, S, "S", A.dtype) || !check_dtype(ctx, Vh, "Vh", A.dtype)) {
    return;
  }
  EMBER_KERNEL_CHECK(ctx, A.dim >= 2, "A must have at least 2 dims, got shape %s",
                     ShapeStr(A.shape()).c_str());
  const int32_t m = rows(A), n = cols(A), k = m < n ? m : n;
  const bool full = compute_uv && full_matrices;
  Batch batch;
  const int32_t empty[1] = {0};
  if (!linalg::broadcast_batch(ctx, A, 2, "A", nullptr, 0, nullptr, &batch) ||
      !linalg::resize_batched(ctx, S, batch, {k})) {
    return;
  }
  if (compute_uv ? (!linalg::resize_batched(ctx, U, batch, {m, full ? m : k}) ||
                    !linalg::resize_batched(ctx, Vh, batch, {full ? n : k, n}))
                 : (!resize_out(ctx, U, empty) || !resize_out(ctx, Vh, empty))) {
    return;
  }
  if (batch.count == 0) return;
  const SvdSizes z = svd_sizes(A);
  double* base = linalg::scratch_doubles(ctx, z.doubles());
  if (base == nullptr) return;
  const SvdWork w = svd_work(base, z);
  const int32_t M = static_cast<int32_t>(z.big), N = static_cast<int32_t>(z.small);
  const int32_t u_cols = full ? M : N;
  for (int64_t b = 0; b < batch.count; ++b) {
    const bool swapped = factor_svd(A, batch, b, w, u_cols, compute_uv);
    linalg::store_vector(S, linalg::batch_offset(S, 1, batch, b), k, w.s);
    if (!compute_uv) continue;
    const int64_t u_off = linalg::batch_offset(U, 2, batch, b);
    const int64_t vh_off = linalg::batch_offset(Vh, 2, batch, b);
    if (!swapped) {
      linalg::store_matrix(U, u_off, M, u_cols, w.u);
      linalg::store_matrix(Vh, vh_off, N, N, w.v, true);
    } else {
      // A^T = U' S V'^T: A's U is V' (m x m), Vh is U'^T.
      linalg::store_matrix(U, u_off, N, N, w.v);
      linalg::store_matrix(Vh, vh_off, M, u_cols, w.u, true);
    }
  }
}

Error linalg_pinv_atol_rtol_tensor_out_prepare(KernelPrepareContext& ctx, const Tensor& self,
                                               const Tensor* atol, const Tensor* rtol,
                                               bool hermitian, Tensor& out) {
  (void)atol, (void)rtol, (void)out;
  const SvdSizes z = svd_sizes(self);
  const size_t n = static_cast<size_t>(cols(self));
  // eigh needs 2 n^2 + n; the SVD path its work and the m x n product.
  const size_t need = hermitian ? 2 * n * n + n : z.doubles() + z.big * z.small;
  ctx.reserve_scratch(linalg::scratch_bytes(need));
  return Error::Ok;
}

void linalg_pinv_atol_rtol_tensor_out(KernelContext& ctx, const Tensor& self, const Tensor* atol,
                                      const Tensor* rtol, bool hermitian, Tensor& out) {
  if (!linalg::check_float(ctx, self, "self") || !check_dtype(ctx, out, "out", self.dtype)) return;
  EMBER_KERNEL_CHECK(ctx, self.dim >= 2, "self must have at least 2 dims, got shape %s",
                     ShapeStr(self.shape()).c_str());
  if (hermitian && !linalg::check_square(ctx, self, "self")) return;
  for (const Tensor* t : {atol, rtol}) {
    if (t != nullptr && !linalg::check_float(ctx, *t, t == atol ? "atol" : "rtol")) return;
  }
  const int32_t m = rows(self), n = cols(self);
  Batch batch;
  if (!linalg::broadcast_batch(ctx, self, 2, "self", nullptr, 0, nullptr, &batch) ||
      !linalg::resize_batched(ctx, out, batch, {n, m})) {
    return;
  }
  if (out.numel == 0) return;
  const double eps = self.dtype == ScalarType::Float ? 1.1920928955078125e-07
                                                     : 2.220446049250313e-16;
  const double default_rtol = eps * (m > n ? m : n);
  const SvdSizes z = svd_sizes(self);
  const size_t need = hermitian ? 2 * static_cast<size_t>(n) * n + n
                                : z.doubles() + z.big * z.small;
  double* base = linalg::scratch_doubles(ctx, need);
  if (base == nullptr) return;
  for (int64_t b = 0; b < batch.count; ++b) {
    double at = 0.0, rt = default_rtol;
    if (atol != nullptr) {
      linalg::load_vector(*atol, linalg::batch_offset(*atol, 0, batch, b), 1, &at);
      if (rtol == nullptr && at > 0.0) rt = 0.0;
    }
    if (rtol != nullptr) linalg::load_vector(*rtol, linalg::batch_offset(*rtol, 0, batch, b), 1, &rt);
    const int64_t off = linalg::batch_offset(out, 2, batch, b);
    if (hermitian) {
      double* a = base;
      double* v = a + static_cast<size_t>(n) * n;
      double* w = v + static_cast<size_t>(n) * n;
      linalg::load_matrix(self, linalg::batch_offset(self, 2, batch, b), n, n, a);
      for (int32_t i = 0; i < n; ++i) {  // eager's eigh reads the lower triangle
        for (int32_t j = i + 1; j < n; ++j) a[i * n + j] = a[j * n + i];
      }
      linalg::symmetric_eigen(a, n, w, v);
      double top = 0.0;
      for (int32_t i = 0; i < n; ++i) top = std::fmax(top, std::fabs(w[i]));
      const double tol = std::fmax(at, rt * top);
      for (int32_t i = 0; i < n; ++i) w[i] = std::fabs(w[i]) > tol ? 1.0 / w[i] : 0.0;
      for (int32_t i = 0; i < n; ++i) {  // V diag(1/w) V^T into a
        for (int32_t j = 0; j < n; ++j) {
          double s = 0.0;
          for (int32_t l = 0; l < n; ++l) s += v[i * n + l] * w[l] * v[j * n + l];
          a[i * n + j] = s;
        }
      }
      linalg::store_matrix(out, off, n, n, a);
      continue;
    }
    const SvdWork w = svd_work(base, z);
    double* p = w.work + z.big;
    const int32_t M = static_cast<int32_t>(z.big), N = static_cast<int32_t>(z.small);
    const bool swapped = factor_svd(self, batch, b, w, N, true);
    const double tol = std::fmax(at, rt * (N > 0 ? w.s[0] : 0.0));
    for (int32_t i = 0; i < N; ++i) w.s[i] = w.s[i] > tol ? 1.0 / w.s[i] : 0.0;
    // The factored matrix X (M x N) = U S V^T has pinv V S^+ U^T (N x M);
    // self's is that, or its transpose when X = self^T.
    for (int32_t i = 0; i < N; ++i) {
      for (int32_t j = 0; j < M; ++j) {
        double s = 0.0;
        for (int32_t l = 0; l < N; ++l) s += w.v[i * N + l] * w.s[l] * w.u[j * N + l];
        p[i * M + j] = s;
      }
    }
    linalg::store_matrix(out, off, N, M, p, swapped);
  }
}

}  // namespace ember::kernels::portable
