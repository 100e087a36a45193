#include "kernels/portable/util/linalg.h"

#include <cmath>
#include <utility>

namespace ember::kernels::portable::linalg {

bool broadcast_batch(KernelContext& ctx, const Tensor& a, int32_t a_core, const char* a_name,
                     const Tensor* b, int32_t b_core, const char* b_name, Batch* batch) {
  const int32_t na = a.dim - a_core;
  const int32_t nb = b != nullptr ? b->dim - b_core : 0;
  batch->dim = na > nb ? na : nb;
  batch->count = 1;
  for (int32_t i = 0; i < batch->dim; ++i) {
    const int32_t ia = i - (batch->dim - na), ib = i - (batch->dim - nb);
    const int32_t sa = ia >= 0 ? a.sizes[ia] : 1;
    const int32_t sb = ib >= 0 ? b->sizes[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      ctx.fail(Error::InvalidArgument,
               "the batch dims of %s %s and %s %s do not broadcast", a_name,
               ShapeStr(a.shape()).c_str(), b_name, ShapeStr(b->shape()).c_str());
      return false;
    }
    batch->sizes[i] = sa == 1 ? sb : sa;
    batch->count *= batch->sizes[i];
  }
  return true;
}

int32_t batch_shape(const Batch& batch, const int32_t* tail, int32_t n_tail, int32_t* out) {
  for (int32_t i = 0; i < batch.dim; ++i) out[i] = batch.sizes[i];
  for (int32_t i = 0; i < n_tail; ++i) out[batch.dim + i] = tail[i];
  return batch.dim + n_tail;
}

int64_t batch_offset(const Tensor& t, int32_t core, const Batch& batch, int64_t b) {
  int64_t off = 0;
  const int32_t nt = t.dim - core;
  for (int32_t i = batch.dim - 1; i >= 0; --i) {
    const int64_t idx = b % batch.sizes[i];
    b /= batch.sizes[i];
    const int32_t d = i - (batch.dim - nt);
    if (d >= 0 && t.sizes[d] != 1) off += idx * t.strides[d];
  }
  return off;
}

bool check_float(KernelContext& ctx, const Tensor& t, const char* name) {
  if (t.dtype == ScalarType::Float || t.dtype == ScalarType::Double) return true;
  fail_dtype(ctx, name, t.dtype);
  return false;
}

bool check_square(KernelContext& ctx, const Tensor& t, const char* name) {
  if (t.dim >= 2 && t.sizes[t.dim - 1] == t.sizes[t.dim - 2]) return true;
  ctx.fail(Error::InvalidArgument, "%s must be a batch of square matrices, got shape %s", name,
           ShapeStr(t.shape()).c_str());
  return false;
}

namespace {

template <typename S, typename F>
void for_matrix(const Tensor& t, int64_t off, int32_t rows, int32_t cols, bool transpose, F&& f) {
  int64_t rs = t.strides[t.dim - 2], cs = t.strides[t.dim - 1];
  if (transpose) std::swap(rs, cs);
  S* base = t.data_ptr<S>() + off;
  for (int32_t i = 0; i < rows; ++i) {
    for (int32_t j = 0; j < cols; ++j) f(base[i * rs + j * cs], i * cols + j);
  }
}

}  // namespace

void load_matrix(const Tensor& t, int64_t off, int32_t rows, int32_t cols, double* dst,
                 bool transpose) {
  if (t.dtype == ScalarType::Float) {
    for_matrix<float>(t, off, rows, cols, transpose, [&](float& v, int64_t k) { dst[k] = v; });
  } else {
    for_matrix<double>(t, off, rows, cols, transpose, [&](double& v, int64_t k) { dst[k] = v; });
  }
}

void store_matrix(Tensor& t, int64_t off, int32_t rows, int32_t cols, const double* src,
                  bool transpose) {
  if (t.dtype == ScalarType::Float) {
    for_matrix<float>(t, off, rows, cols, transpose,
                      [&](float& v, int64_t k) { v = static_cast<float>(src[k]); });
  } else {
    for_matrix<double>(t, off, rows, cols, transpose, [&](double& v, int64_t k) { v = src[k]; });
  }
}

void load_vector(const Tensor& t, int64_t off, int32_t n, double* dst) {
  const int64_t s = t.strides[t.dim - 1];
  if (t.dtype == ScalarType::Float) {
    for (int32_t i = 0; i < n; ++i) dst[i] = t.data_ptr<const float>()[off + i * s];
  } else {
    for (int32_t i = 0; i < n; ++i) dst[i] = t.data_ptr<const double>()[off + i * s];
  }
}

void store_vector(Tensor& t, int64_t off, int32_t n, const double* src) {
  const int64_t s = t.strides[t.dim - 1];
  if (t.dtype == ScalarType::Float) {
    for (int32_t i = 0; i < n; ++i) t.data_ptr<float>()[off + i * s] = static_cast<float>(src[i]);
  } else {
    for (int32_t i = 0; i < n; ++i) t.data_ptr<double>()[off + i * s] = src[i];
  }
}

double* scratch_doubles(KernelContext& ctx, size_t doubles, size_t ints) {
  const size_t bytes = scratch_bytes(doubles, ints);
  void* p = ctx.scratch(bytes);
  if (p == nullptr) {
    ctx.fail(Error::MemoryAllocationFailed,
             "needs %zu bytes of scratch memory, the method has %zu (was prepare's "
             "reserve_scratch honoured?)",
             bytes, ctx.scratch_size());
  }
  return static_cast<double*>(p);
}

int32_t cholesky_lower(double* a, int32_t n) {
  for (int32_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (int32_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    // potrf stops at the first non-positive (or NaN) pivot.
    if (!(d > 0.0)) return j + 1;
    d = std::sqrt(d);
    a[j * n + j] = d;
    for (int32_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (int32_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / d;
    }
    for (int32_t i = 0; i < j; ++i) a[i * n + j] = 0.0;
  }
  return 0;
}

int32_t lu_factor(double* a, int32_t m, int32_t n, int32_t* piv) {
  const int32_t k = m < n ? m : n;
  int32_t info = 0;
  for (int32_t j = 0; j < k; ++j) {
    int32_t p = j;
    double best = std::fabs(a[j * n + j]);
    for (int32_t i = j + 1; i < m; ++i) {
      const double v = std::fabs(a[i * n + j]);
      if (v > best || (std::isnan(v) && !std::isnan(best))) {
        best = v;
        p = i;
      }
    }
    piv[j] = p + 1;
    if (a[p * n + j] == 0.0) {
      // getrf records the first zero pivot and goes on without eliminating.
      if (info == 0) info = j + 1;
      continue;
    }
    if (p != j) {
      for (int32_t c = 0; c < n; ++c) std::swap(a[j * n + c], a[p * n + c]);
    }
    const double inv = 1.0 / a[j * n + j];
    for (int32_t i = j + 1; i < m; ++i) {
      const double l = a[i * n + j] * inv;
      a[i * n + j] = l;
      if (l == 0.0) continue;
      for (int32_t c = j + 1; c < n; ++c) a[i * n + c] -= l * a[j * n + c];
    }
  }
  return info;
}

void tri_solve_vector(const double* t, int32_t n, bool upper, bool trans, bool unit, double* x,
                      int64_t stride) {
  // op(T)(i, j): T^T reads T(j, i) and is lower when T is upper.
  const int64_t rs = trans ? 1 : n, cs = trans ? n : 1;
  if (upper != trans) {
    for (int32_t i = n - 1; i >= 0; --i) {
      double s = x[i * stride];
      for (int32_t j = i + 1; j < n; ++j) s -= t[i * rs + j * cs] * x[j * stride];
      x[i * stride] = unit ? s : s / t[i * rs + i * cs];
    }
  } else {
    for (int32_t i = 0; i < n; ++i) {
      double s = x[i * stride];
      for (int32_t j = 0; j < i; ++j) s -= t[i * rs + j * cs] * x[j * stride];
      x[i * stride] = unit ? s : s / t[i * rs + i * cs];
    }
  }
}

void tri_solve(const double* t, bool upper, bool trans, bool unit, bool left, double* b,
               int32_t rows, int32_t cols) {
  if (left) {
    for (int32_t c = 0; c < cols; ++c) tri_solve_vector(t, rows, upper, trans, unit, b + c, cols);
  } else {
    // x op(T) = b  <=>  op(T)^T x^T = b^T, one row of B at a time.
    for (int32_t r = 0; r < rows; ++r) {
      tri_solve_vector(t, cols, upper, !trans, unit, b + static_cast<int64_t>(r) * cols, 1);
    }
  }
}

void lu_solve_vector(const double* lu, const int32_t* piv, int32_t n, bool trans, double* x,
                     int64_t stride) {
  if (!trans) {
    // A = P L U: apply the row swaps, then L (unit lower), then U.
    for (int32_t i = 0; i < n; ++i) {
      const int32_t p = piv[i] - 1;
      if (p != i) std::swap(x[i * stride], x[p * stride]);
    }
    tri_solve_vector(lu, n, false, false, true, x, stride);
    tri_solve_vector(lu, n, true, false, false, x, stride);
  } else {
    // A^T = U^T L^T P^T: U^T, then L^T, then the swaps in reverse order.
    tri_solve_vector(lu, n, true, true, false, x, stride);
    tri_solve_vector(lu, n, false, true, true, x, stride);
    for (int32_t i = n - 1; i >= 0; --i) {
      const int32_t p = piv[i] - 1;
      if (p != i) std::swap(x[i * stride], x[p * stride]);
    }
  }
}

void pivots_to_permutation(const int32_t* piv, int32_t k, int32_t m, int32_t* perm) {
  for (int32_t i = 0; i < m; ++i) perm[i] = i;
  for (int32_t i = 0; i < k; ++i) {
    const int32_t p = piv[i] - 1;
    if (p >= 0 && p < m) std::swap(perm[i], perm[p]);
  }
}

}  // namespace ember::kernels::portable::linalg

namespace ember::kernels::portable::linalg {

bool check_pivots(KernelContext& ctx, const Tensor& t, int64_t off, int32_t k, int32_t n,
                  const char* name, int32_t* dst) {
  const int64_t s = t.strides[t.dim - 1];
  for (int32_t i = 0; i < k; ++i) {
    const int32_t p = t.data_ptr<const int32_t>()[off + i * s];
    if (p < 1 || p > n) {
      ctx.fail(Error::InvalidArgument, "%s: pivot %d (entry %d) is out of range [1, %d]", name, p,
               i, n);
      return false;
    }
    dst[i] = p;
  }
  return true;
}

}  // namespace ember::kernels::portable::linalg

namespace ember::kernels::portable::linalg {

double householder(double* alpha, double* x, int32_t count, int64_t stride) {
  if (count <= 0) return 0.0;
  double scale = 0.0;
  for (int32_t i = 0; i < count; ++i) scale = std::fmax(scale, std::fabs(x[i * stride]));
  if (scale == 0.0) return 0.0;
  // The norm scaled by the largest element, so squares neither overflow nor
  // underflow.
  double ss = 0.0;
  for (int32_t i = 0; i < count; ++i) {
    const double v = x[i * stride] / scale;
    ss += v * v;
  }
  const double xnorm = scale * std::sqrt(ss);
  const double norm = std::hypot(*alpha, xnorm);
  const double beta = *alpha >= 0.0 ? -norm : norm;
  const double tau = (beta - *alpha) / beta;
  const double inv = 1.0 / (*alpha - beta);
  for (int32_t i = 0; i < count; ++i) x[i * stride] *= inv;
  *alpha = beta;
  return tau;
}

void reflect_left(const double* v, int64_t vs, int32_t len, double tau, double* c, int64_t ldc,
                  int32_t cols) {
  if (tau == 0.0) return;
  for (int32_t j = 0; j < cols; ++j) {
    double w = c[j];
    for (int32_t i = 1; i < len; ++i) w += v[i * vs] * c[i * ldc + j];
    w *= tau;
    c[j] -= w;
    for (int32_t i = 1; i < len; ++i) c[i * ldc + j] -= w * v[i * vs];
  }
}

void reflect_right(const double* v, int64_t vs, int32_t len, double tau, double* c, int64_t ldc,
                   int32_t rows) {
  if (tau == 0.0) return;
  for (int32_t r = 0; r < rows; ++r) {
    double* row = c + r * ldc;
    double w = row[0];
    for (int32_t i = 1; i < len; ++i) w += row[i] * v[i * vs];
    w *= tau;
    row[0] -= w;
    for (int32_t i = 1; i < len; ++i) row[i] -= w * v[i * vs];
  }
}

void qr_factor(double* a, int32_t m, int32_t n, double* tau) {
  const int32_t k = m < n ? m : n;
  for (int32_t j = 0; j < k; ++j) {
    double* d = a + static_cast<int64_t>(j) * n + j;
    tau[j] = householder(d, d + n, m - j - 1, n);
    // H_j from the left on the columns right of j.
    const double beta = *d;
    *d = 1.0;
    reflect_left(d, n, m - j, tau[j], d + 1, n, n - j - 1);
    *d = beta;
  }
}

void qr_form_q(const double* v, int32_t m, int32_t v_cols, const double* tau, int32_t k,
               double* q, int32_t q_cols) {
  for (int32_t i = 0; i < m; ++i) {
    for (int32_t j = 0; j < q_cols; ++j) q[i * q_cols + j] = i == j ? 1.0 : 0.0;
  }
  // Q = H_1 (H_2 (... H_k I)): H_j touches rows j.. only.
  for (int32_t j = k - 1; j >= 0; --j) {
    const double* col = v + static_cast<int64_t>(j) * v_cols + j;
    // v[0] = 1 is implicit: reflect_left reads only v[1..].
    reflect_left(col, v_cols, m - j, tau[j], q + static_cast<int64_t>(j) * q_cols, q_cols, q_cols);
  }
}

}  // namespace ember::kernels::portable::linalg

namespace ember::kernels::portable::linalg {

namespace {

constexpr int kMaxSweeps = 60;

// Flips column j of the rows x cols matrix m (and of `other`, when given) so
// that its largest-magnitude component is positive.
void fix_sign(double* m, int32_t rows, int32_t cols, int32_t j, double* other, int32_t o_rows,
              int32_t o_cols) {
  int32_t at = 0;
  for (int32_t i = 1; i < rows; ++i) {
    if (std::fabs(m[i * cols + j]) > std::fabs(m[at * cols + j])) at = i;
  }
  if (rows == 0 || m[at * cols + j] >= 0.0) return;
  for (int32_t i = 0; i < rows; ++i) m[i * cols + j] = -m[i * cols + j];
  if (other != nullptr) {
    for (int32_t i = 0; i < o_rows; ++i) other[i * o_cols + j] = -other[i * o_cols + j];
  }
}

void swap_columns(double* m, int32_t rows, int32_t cols, int32_t a, int32_t b) {
  for (int32_t i = 0; i < rows; ++i) std::swap(m[i * cols + a], m[i * cols + b]);
}

}  // namespace

void symmetric_eigen(double* a, int32_t n, double* w, double* v) {
  if (v != nullptr) {
    for (int32_t i = 0; i < n * n; ++i) v[i] = (i / n == i % n) ? 1.0 : 0.0;
  }
  double norm = 0.0;
  for (int32_t i = 0; i < n * n; ++i) norm += a[i] * a[i];
  const double tol = 1e-30 * norm;  // squared: off-diagonal mass below eps^2 |A|^2
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    double off = 0.0;
    for (int32_t p = 0; p < n; ++p) {
      for (int32_t q = p + 1; q < n; ++q) off += 2.0 * a[p * n + q] * a[p * n + q];
    }
    if (!(off > tol)) break;  // also stops on NaN
    for (int32_t p = 0; p < n; ++p) {
      for (int32_t q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (apq == 0.0) continue;
        // The rotation that zeroes a[p][q] (the smaller angle).
        const double theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::hypot(theta, 1.0));
        const double c = 1.0 / std::hypot(t, 1.0), s = t * c;
        for (int32_t k = 0; k < n; ++k) {  // A J
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (int32_t k = 0; k < n; ++k) {  // J^T (A J)
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        if (v != nullptr) {
          for (int32_t k = 0; k < n; ++k) {
            const double vkp = v[k * n + p], vkq = v[k * n + q];
            v[k * n + p] = c * vkp - s * vkq;
            v[k * n + q] = s * vkp + c * vkq;
          }
        }
      }
    }
  }
  for (int32_t i = 0; i < n; ++i) w[i] = a[i * n + i];
  // Ascending, by selection (n is small), moving the vectors along.
  for (int32_t i = 0; i < n; ++i) {
    int32_t best = i;
    for (int32_t j = i + 1; j < n; ++j) {
      if (w[j] < w[best]) best = j;
    }
    if (best != i) {
      std::swap(w[i], w[best]);
      if (v != nullptr) swap_columns(v, n, n, i, best);
    }
    if (v != nullptr) fix_sign(v, n, n, i, nullptr, 0, 0);
  }
}

void jacobi_svd(double* a, int32_t m, int32_t n, double* s, double* v, double* u,
                int32_t u_cols, double* work) {
  for (int32_t i = 0; i < n * n; ++i) v[i] = (i / n == i % n) ? 1.0 : 0.0;
  constexpr double kEps = 2.220446049250313e-16;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool rotated = false;
    for (int32_t p = 0; p < n; ++p) {
      for (int32_t q = p + 1; q < n; ++q) {
        double alpha = 0.0, beta = 0.0, gamma = 0.0;
        for (int32_t i = 0; i < m; ++i) {
          const double x = a[i * n + p], y = a[i * n + q];
          alpha += x * x;
          beta += y * y;
          gamma += x * y;
        }
        // Columns p and q already orthogonal to working precision.
        if (!(std::fabs(gamma) > kEps * std::sqrt(alpha * beta))) continue;
        rotated = true;
        const double zeta = (beta - alpha) / (2.0 * gamma);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::fabs(zeta) + std::hypot(zeta, 1.0));
        const double c = 1.0 / std::hypot(t, 1.0), sn = c * t;
        for (int32_t i = 0; i < m; ++i) {
          const double x = a[i * n + p], y = a[i * n + q];
          a[i * n + p] = c * x - sn * y;
          a[i * n + q] = sn * x + c * y;
        }
        for (int32_t i = 0; i < n; ++i) {
          const double x = v[i * n + p], y = v[i * n + q];
          v[i * n + p] = c * x - sn * y;
          v[i * n + q] = sn * x + c * y;
        }
      }
    }
    if (!rotated) break;
  }
  for (int32_t j = 0; j < n; ++j) {
    double ss = 0.0;
    for (int32_t i = 0; i < m; ++i) ss += a[i * n + j] * a[i * n + j];
    s[j] = std::sqrt(ss);
  }
  // Descending, moving the columns of A (U times s) and V along.
  for (int32_t i = 0; i < n; ++i) {
    int32_t best = i;
    for (int32_t j = i + 1; j < n; ++j) {
      if (s[j] > s[best]) best = j;
    }
    if (best != i) {
      std::swap(s[i], s[best]);
      swap_columns(a, m, n, i, best);
      swap_columns(v, n, n, i, best);
    }
    fix_sign(v, n, n, i, a, m, n);
  }
  if (u == nullptr) return;
  // U's columns: A's normalised, then (for s = 0 and beyond n) unit vectors
  // made orthogonal to those before by Gram-Schmidt, twice for accuracy.
  const double small = s[0] * kEps * (m > n ? m : n);
  int32_t next_unit = 0;
  for (int32_t j = 0; j < u_cols; ++j) {
    if (j < n && s[j] > small && s[j] > 0.0) {
      for (int32_t i = 0; i < m; ++i) u[i * u_cols + j] = a[i * n + j] / s[j];
      continue;
    }
    for (;;) {
      for (int32_t i = 0; i < m; ++i) work[i] = i == next_unit ? 1.0 : 0.0;
      ++next_unit;
      for (int pass = 0; pass < 2; ++pass) {
        for (int32_t k = 0; k < j; ++k) {
          double d = 0.0;
          for (int32_t i = 0; i < m; ++i) d += u[i * u_cols + k] * work[i];
          for (int32_t i = 0; i < m; ++i) work[i] -= d * u[i * u_cols + k];
        }
      }
      double nn = 0.0;
      for (int32_t i = 0; i < m; ++i) nn += work[i] * work[i];
      nn = std::sqrt(nn);
      // Some unit vector keeps at least 1/sqrt(m) of its norm.
      if (nn * nn * m > 0.25 || next_unit >= m) {
        for (int32_t i = 0; i < m; ++i) u[i * u_cols + j] = nn > 0.0 ? work[i] / nn : 0.0;
        break;
      }
    }
  }
}

}  // namespace ember::kernels::portable::linalg
