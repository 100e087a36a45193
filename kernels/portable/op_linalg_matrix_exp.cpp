// aten::linalg_matrix_exp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
//
// exp(A) of batches of square matrices by scaling and squaring with Padé
// approximants (Higham, "The scaling and squaring method for the matrix
// exponential revisited", SIAM J. Matrix Anal. Appl. 26(4), 2005, Alg. 2.3):
// the degree m in {3, 5, 7, 9, 13} is the lowest whose theta_m bounds the
// 1-norm of A (backward error below double's unit roundoff); above
// theta_13, A is scaled by 2^-s into it and the result squared s times.
// r_m(A) = q_m(A)^-1 p_m(A) is one LU solve (util/linalg.h). A matrix with a
// NaN or infinite entry gives NaN everywhere, as eager. float32 and float64,
// computed in double (eager uses Taylor polynomials instead: both are
// accurate to about the unit roundoff times the problem's conditioning).
#include <cmath>

#include "kernels/generated/functions/portable/op_linalg_matrix_exp.h"
#include "kernels/portable/util/linalg.h"

namespace ember::kernels::portable {
namespace {

using linalg::Batch;
using linalg::cols;

// Padé coefficients b_0..b_m (Higham 2005, Table 2.3 and eq. 2.2 ff.).
constexpr double kB3[] = {120.0, 60.0, 12.0, 1.0};
constexpr double kB5[] = {30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0};
constexpr double kB7[] = {17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0};
constexpr double kB9[] = {17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0,
                          2162160.0,     110880.0,     3960.0,       90.0,        1.0};
constexpr double kB13[] = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
                           1187353796428800.0,  129060195264000.0,   10559470521600.0,
                           670442572800.0,      33522128640.0,       1323241920.0,
                           40840800.0,          960960.0,            16380.0,
                           182.0,               1.0};
// theta_m: the largest 1-norm for which r_m is accurate to double's roundoff.
constexpr double kTheta[] = {1.495585217958292e-2, 2.539398330063230e-1, 9.504178996162932e-1,
                             2.097847961257068e0, 5.371920351148152e0};

// Buffers of n x n doubles a kernel call needs (A, A^2, A^4, A^6, A^8, U,
// V, one temporary).
constexpr size_t kMatrices = 8;

// c = a b (n x n, row-major; c distinct from both).
void matmul(const double* a, const double* b, double* c, int32_t n) {
  for (int32_t i = 0; i < n; ++i) {
    double* ci = c + static_cast<int64_t>(i) * n;
    for (int32_t j = 0; j < n; ++j) ci[j] = 0.0;
    for (int32_t k = 0; k < n; ++k) {
      const double aik = a[static_cast<int64_t>(i) * n + k];
      const double* bk = b + static_cast<int64_t>(k) * n;
      for (int32_t j = 0; j < n; ++j) ci[j] += aik * bk[j];
    }
  }
}

// dst = c0 I + sum of coef[i] * mats[i] (count of them).
void combine(double* dst, double c0, const double* coef, const double* const* mats, int32_t count,
             int32_t n) {
  const int64_t nn = static_cast<int64_t>(n) * n;
  for (int64_t e = 0; e < nn; ++e) dst[e] = e % (n + 1) == 0 ? c0 : 0.0;
  for (int32_t i = 0; i < count; ++i) {
    for (int64_t e = 0; e < nn; ++e) dst[e] += coef[i] * mats[i][e];
  }
}

double norm1(const double* a, int32_t n) {
  double best = 0.0;
  for (int32_t j = 0; j < n; ++j) {
    double s = 0.0;
    for (int32_t i = 0; i < n; ++i) s += std::fabs(a[static_cast<int64_t>(i) * n + j]);
    if (!(s <= best)) best = s;  // NaN propagates
  }
  return best;
}

// exp of the n x n matrix at `w` (row-major), in place, using the kMatrices
// n x n buffers from `w` on and `piv` (n ints).
void matrix_exp(double* w, int32_t n, int32_t* piv) {
  const int64_t nn = static_cast<int64_t>(n) * n;
  double* a = w;
  double* p2 = a + nn;
  double* p4 = p2 + nn;
  double* p6 = p4 + nn;
  double* p8 = p6 + nn;
  double* u = p8 + nn;
  double* v = u + nn;
  double* t = v + nn;
  const double norm = norm1(a, n);
  if (!std::isfinite(norm)) {
    for (int64_t e = 0; e < nn; ++e) a[e] = NAN;
    return;
  }
  int32_t degree = 0;  // index into kTheta
  while (degree < 4 && norm > kTheta[degree]) ++degree;
  int32_t squarings = 0;
  if (degree == 4 && norm > kTheta[4]) {
    squarings = static_cast<int32_t>(std::ceil(std::log2(norm / kTheta[4])));
    const double scale = std::ldexp(1.0, -squarings);
    for (int64_t e = 0; e < nn; ++e) a[e] *= scale;
  }
  matmul(a, a, p2, n);
  if (degree >= 1) matmul(p2, p2, p4, n);
  if (degree >= 2) matmul(p2, p4, p6, n);
  if (degree == 3) matmul(p4, p4, p8, n);
  const double* powers[] = {p2, p4, p6, p8};
  if (degree < 4) {
    static constexpr const double* kCoef[] = {kB3, kB5, kB7, kB9};
    const double* b = kCoef[degree];
    const int32_t count = degree + 1;  // powers A^2 .. A^(2 count) used
    double odd[4], even[4];
    for (int32_t i = 0; i < count; ++i) {
      odd[i] = b[2 * i + 3];
      even[i] = b[2 * i + 2];
    }
    combine(t, b[1], odd, powers, count, n);  // U = A (b1 I + b3 A^2 + ...)
    matmul(a, t, u, n);
    combine(v, b[0], even, powers, count, n);  // V = b0 I + b2 A^2 + ...
  } else {
    const double* b = kB13;
    const double high_u[] = {b[9], b[11], b[13]}, low_u[] = {b[3], b[5], b[7]};
    const double high_v[] = {b[8], b[10], b[12]}, low_v[] = {b[2], b[4], b[6]};
    // U = A [A^6 (b13 A^6 + b11 A^4 + b9 A^2) + b7 A^6 + b5 A^4 + b3 A^2 + b1 I]
    combine(t, 0.0, high_u, powers, 3, n);
    matmul(p6, t, v, n);
    combine(t, b[1], low_u, powers, 3, n);
    for (int64_t e = 0; e < nn; ++e) t[e] += v[e];
    matmul(a, t, u, n);
    // V = A^6 (b12 A^6 + b10 A^4 + b8 A^2) + b6 A^6 + b4 A^4 + b2 A^2 + b0 I
    combine(t, 0.0, high_v, powers, 3, n);
    matmul(p6, t, v, n);
    combine(t, b[0], low_v, powers, 3, n);
    for (int64_t e = 0; e < nn; ++e) v[e] += t[e];
  }
  // (V - U) X = (V + U).
  for (int64_t e = 0; e < nn; ++e) {
    t[e] = v[e] - u[e];
    v[e] += u[e];
  }
  (void)linalg::lu_factor(t, n, n, piv);
  for (int32_t j = 0; j < n; ++j) linalg::lu_solve_vector(t, piv, n, false, v + j, n);
  double* x = v;
  double* y = t;
  for (int32_t s = 0; s < squarings; ++s) {
    matmul(x, x, y, n);
    double* z = x;
    x = y;
    y = z;
  }
  for (int64_t e = 0; e < nn; ++e) a[e] = x[e];
}

}  // namespace

Error linalg_matrix_exp_out_prepare(KernelPrepareContext& ctx, const Tensor& self, Tensor& out) {
  (void)out;
  const size_t n = static_cast<size_t>(cols(self));
  ctx.reserve_scratch(linalg::scratch_bytes(kMatrices * n * n, n));
  return Error::Ok;
}

void linalg_matrix_exp_out(KernelContext& ctx, const Tensor& self, Tensor& out) {
  if (!linalg::check_float(ctx, self, "self") || !linalg::check_square(ctx, self, "self") ||
      !check_dtype(ctx, out, "out", self.dtype)) {
    return;
  }
  const int32_t n = cols(self);
  Batch batch;
  if (!linalg::broadcast_batch(ctx, self, 2, "self", nullptr, 0, nullptr, &batch) ||
      !resize_out(ctx, out, self.shape())) {
    return;
  }
  if (out.numel == 0) return;
  const size_t nn = static_cast<size_t>(n) * n;
  double* w = linalg::scratch_doubles(ctx, kMatrices * nn, static_cast<size_t>(n));
  if (w == nullptr) return;
  int32_t* piv = reinterpret_cast<int32_t*>(w + kMatrices * nn);
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(self, linalg::batch_offset(self, 2, batch, b), n, n, w);
    matrix_exp(w, n, piv);
    linalg::store_matrix(out, linalg::batch_offset(out, 2, batch, b), n, n, w);
  }
}

}  // namespace ember::kernels::portable
