// aten::_linalg_solve_ex.result(Tensor A, Tensor B, *, bool left=True, bool check_errors=False, Tensor(a!) result, Tensor(b!) LU, Tensor(c!) pivots, Tensor(d!) info)
// aten::linalg_inv_ex.inverse(Tensor A, *, bool check_errors=False, Tensor(a!) inverse, Tensor(b!) info)
// aten::_linalg_det.result(Tensor A, *, Tensor(a!) result, Tensor(b!) LU, Tensor(c!) pivots)
// aten::_linalg_slogdet.sign(Tensor A, *, Tensor(a!) sign, Tensor(b!) logabsdet, Tensor(c!) LU, Tensor(d!) pivots)
// aten::linalg_solve_triangular.out(Tensor self, Tensor B, *, bool upper, bool left=True, bool unitriangular=False, Tensor(a!) out)
// aten::triangular_solve.X(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False, *, Tensor(a!) X, Tensor(b!) M)
//
// Square solves, inverse and determinants from LU with partial pivoting
// (util/linalg.h), and triangular solves. As eager's, the LU and pivots
// outputs of solve_ex factor A, those of det and slogdet A^T (the same
// determinant); inv_ex is solve_ex(A, I); info is
// getrf's (first zero pivot, 1-based): a singular A gives inf/nan results,
// det 0, slogdet sign 0 and logabsdet -inf. Batch dims of A and B broadcast;
// B of solve_ex may be a vector (batch + [n]). float32 and float64, computed
// in double.
#include <cmath>

#include "kernels/generated/functions/portable/op_linalg_solve.h"
#include "kernels/portable/util/linalg.h"

namespace ember::kernels::portable {
namespace {

using linalg::Batch;

using linalg::cols;
using linalg::rows;
using linalg::sq;

bool check_square_float(KernelContext& ctx, const Tensor& A, const char* name) {
  return linalg::check_float(ctx, A, name) && linalg::check_square(ctx, A, name);
}

// Factors A (A^T when `transpose`) of batch entry b into `lu`/`piv` and
// writes LU, pivots (when given) at their batch offsets; returns getrf's info.
int32_t factor(const Tensor& A, bool transpose, const Batch& batch, int64_t b, double* lu,
               int32_t* piv, Tensor* LU, Tensor* pivots) {
  const int32_t n = cols(A);
  linalg::load_matrix(A, linalg::batch_offset(A, 2, batch, b), n, n, lu, transpose);
  const int32_t info = linalg::lu_factor(lu, n, n, piv);
  if (LU != nullptr) linalg::store_matrix(*LU, linalg::batch_offset(*LU, 2, batch, b), n, n, lu);
  if (pivots != nullptr) {
    const int64_t off = linalg::batch_offset(*pivots, 1, batch, b);
    for (int32_t i = 0; i < n; ++i) {
      linalg::store_int(*pivots, off + i * pivots->strides[pivots->dim - 1], piv[i]);
    }
  }
  return info;
}

// sign * exp(logabs) = det of the factored matrix: the permutation's sign
// (a swap per piv[i] != i + 1) times the diagonal's product.
void lu_det(const double* lu, const int32_t* piv, int32_t n, double* sign, double* logabs,
            double* det) {
  double s = 1.0, la = 0.0, d = 1.0;
  for (int32_t i = 0; i < n; ++i) {
    const double u = lu[i * n + i];
    if (piv[i] != i + 1) {
      s = -s;
      d = -d;
    }
    d *= u;
    if (u < 0) s = -s;
    la += std::log(std::fabs(u));
  }
  if (d == 0.0 || std::isnan(d)) {
    for (int32_t i = 0; i < n; ++i) {
      if (lu[i * n + i] == 0.0) s = 0.0;
    }
  }
  if (s == 0.0) la = -INFINITY;
  *sign = s;
  *logabs = la;
  *det = d;
}

}  // namespace

// --- solve_ex ---------------------------------------------------------------

namespace {

// torch's rule: B is a batch of vectors when it is 1-D or A's shape minus
// A's last dim.
bool vector_rhs(const Tensor& A, const Tensor& B) {
  if (B.dim == 1) return true;
  if (B.dim != A.dim - 1) return false;
  for (int32_t d = 0; d < B.dim; ++d) {
    if (B.sizes[d] != A.sizes[d]) return false;
  }
  return true;
}

}  // namespace

Error _linalg_solve_ex_result_prepare(KernelPrepareContext& ctx, const Tensor& A,
                                      const Tensor& B, bool left, bool check_errors,
                                      Tensor& result, Tensor& LU, Tensor& pivots, Tensor& info) {
  (void)left, (void)check_errors, (void)result, (void)LU, (void)pivots, (void)info;
  const size_t b_mat = vector_rhs(A, B) ? static_cast<size_t>(cols(B))
                                        : static_cast<size_t>(rows(B)) * cols(B);
  ctx.reserve_scratch(linalg::scratch_bytes(sq(A) + b_mat, static_cast<size_t>(cols(A))));
  return Error::Ok;
}

void _linalg_solve_ex_result(KernelContext& ctx, const Tensor& A, const Tensor& B, bool left,
                             bool check_errors, Tensor& result, Tensor& LU, Tensor& pivots,
                             Tensor& info) {
  if (!check_square_float(ctx, A, "A") || !check_dtype(ctx, B, "B", A.dtype) ||
      !check_dtype(ctx, result, "result", A.dtype) || !check_dtype(ctx, LU, "LU", A.dtype) ||
      !check_dtype(ctx, pivots, "pivots", ScalarType::Int) ||
      !check_dtype(ctx, info, "info", ScalarType::Int)) {
    return;
  }
  const int32_t n = cols(A);
  const bool vec = vector_rhs(A, B);
  // A vector is a column (left) or a row (right) of one.
  const int32_t r = vec ? (left ? n : 1) : rows(B);
  const int32_t c = vec ? (left ? 1 : n) : cols(B);
  EMBER_KERNEL_CHECK(ctx, vec ? cols(B) == n : (B.dim >= 2 && (left ? r : c) == n),
                     "incompatible shapes of A %s and B %s for %s", ShapeStr(A.shape()).c_str(),
                     ShapeStr(B.shape()).c_str(), left ? "A X = B" : "X A = B");
  const int32_t b_core = vec ? 1 : 2;
  Batch batch, a_batch;
  if (!linalg::broadcast_batch(ctx, B, b_core, "B", &A, 2, "A", &batch) ||
      !linalg::broadcast_batch(ctx, A, 2, "A", nullptr, 0, nullptr, &a_batch)) {
    return;
  }
  const bool ok = vec ? linalg::resize_batched(ctx, result, batch, {n})
                      : linalg::resize_batched(ctx, result, batch, {r, c});
  if (!ok || !resize_out(ctx, LU, A.shape()) || !linalg::resize_batched(ctx, pivots, a_batch, {n}) ||
      !linalg::resize_batched(ctx, info, a_batch, {})) {
    return;
  }
  if (batch.count == 0) return;
  double* lu = linalg::scratch_doubles(ctx, sq(A) + static_cast<size_t>(r) * c,
                                       static_cast<size_t>(n));
  if (lu == nullptr) return;
  double* x = lu + sq(A);
  int32_t* piv = reinterpret_cast<int32_t*>(x + static_cast<size_t>(r) * c);
  for (int64_t b = 0; b < batch.count; ++b) {
    const int32_t code = factor(A, false, batch, b, lu, piv, &LU, &pivots);
    linalg::store_int(info, linalg::batch_offset(info, 0, batch, b), code);
    EMBER_KERNEL_CHECK(ctx, !check_errors || code == 0,
                       "torch.linalg.solve_ex: The solver failed because the input matrix is "
                       "singular.");
    const int64_t b_off = linalg::batch_offset(B, b_core, batch, b);
    const int64_t r_off = linalg::batch_offset(result, b_core, batch, b);
    if (vec) {
      linalg::load_vector(B, b_off, n, x);
    } else {
      linalg::load_matrix(B, b_off, r, c, x);
    }
    // X A = B is A^T X^T = B^T, row by row.
    if (left) {
      for (int32_t j = 0; j < c; ++j) linalg::lu_solve_vector(lu, piv, n, false, x + j, c);
    } else {
      for (int32_t i = 0; i < r; ++i) {
        linalg::lu_solve_vector(lu, piv, n, true, x + static_cast<int64_t>(i) * c, 1);
      }
    }
    if (vec) {
      linalg::store_vector(result, r_off, n, x);
    } else {
      linalg::store_matrix(result, r_off, r, c, x);
    }
  }
}

// --- inv_ex -----------------------------------------------------------------

Error linalg_inv_ex_inverse_prepare(KernelPrepareContext& ctx, const Tensor& A, bool check_errors,
                                    Tensor& inverse, Tensor& info) {
  (void)check_errors, (void)inverse, (void)info;
  ctx.reserve_scratch(linalg::scratch_bytes(2 * sq(A), static_cast<size_t>(cols(A))));
  return Error::Ok;
}

void linalg_inv_ex_inverse(KernelContext& ctx, const Tensor& A, bool check_errors,
                           Tensor& inverse, Tensor& info) {
  if (!check_square_float(ctx, A, "A") || !check_dtype(ctx, inverse, "inverse", A.dtype) ||
      !check_dtype(ctx, info, "info", ScalarType::Int)) {
    return;
  }
  const int32_t n = cols(A);
  Batch batch;
  if (!linalg::broadcast_batch(ctx, A, 2, "A", nullptr, 0, nullptr, &batch) ||
      !resize_out(ctx, inverse, A.shape()) || !linalg::resize_batched(ctx, info, batch, {})) {
    return;
  }
  if (batch.count == 0) return;
  double* lu = linalg::scratch_doubles(ctx, 2 * sq(A), static_cast<size_t>(n));
  if (lu == nullptr) return;
  double* x = lu + sq(A);
  int32_t* piv = reinterpret_cast<int32_t*>(x + sq(A));
  for (int64_t b = 0; b < batch.count; ++b) {
    const int32_t code = factor(A, false, batch, b, lu, piv, nullptr, nullptr);
    linalg::store_int(info, linalg::batch_offset(info, 0, batch, b), code);
    EMBER_KERNEL_CHECK(ctx, !check_errors || code == 0,
                       "linalg.inv: The diagonal element %d is zero, the inversion could not be "
                       "completed because the input matrix is singular.",
                       code);
    for (int32_t i = 0; i < n * n; ++i) x[i] = (i / n == i % n) ? 1.0 : 0.0;
    for (int32_t j = 0; j < n; ++j) linalg::lu_solve_vector(lu, piv, n, false, x + j, n);
    linalg::store_matrix(inverse, linalg::batch_offset(inverse, 2, batch, b), n, n, x);
  }
}

// --- det, slogdet -----------------------------------------------------------

namespace {

// Factors each matrix of A (as A^T) into LU/pivots and calls
// f(batch entry, sign, logabsdet, det).
template <typename F>
void for_each_det(KernelContext& ctx, const Tensor& A, Tensor& LU, Tensor& pivots, F&& f) {
  const int32_t n = cols(A);
  Batch batch;
  if (!linalg::broadcast_batch(ctx, A, 2, "A", nullptr, 0, nullptr, &batch) ||
      !resize_out(ctx, LU, A.shape()) || !linalg::resize_batched(ctx, pivots, batch, {n})) {
    return;
  }
  if (batch.count == 0) return;
  double* lu = linalg::scratch_doubles(ctx, sq(A), static_cast<size_t>(n));
  if (lu == nullptr) return;
  int32_t* piv = reinterpret_cast<int32_t*>(lu + sq(A));
  for (int64_t b = 0; b < batch.count; ++b) {
    (void)factor(A, true, batch, b, lu, piv, &LU, &pivots);
    double sign = 0, logabs = 0, det = 0;
    lu_det(lu, piv, n, &sign, &logabs, &det);
    f(batch, b, sign, logabs, det);
  }
}

}  // namespace

Error _linalg_det_result_prepare(KernelPrepareContext& ctx, const Tensor& A, Tensor& result,
                                 Tensor& LU, Tensor& pivots) {
  (void)result, (void)LU, (void)pivots;
  ctx.reserve_scratch(linalg::scratch_bytes(sq(A), static_cast<size_t>(cols(A))));
  return Error::Ok;
}

void _linalg_det_result(KernelContext& ctx, const Tensor& A, Tensor& result, Tensor& LU,
                        Tensor& pivots) {
  if (!check_square_float(ctx, A, "A") || !check_dtype(ctx, result, "result", A.dtype) ||
      !check_dtype(ctx, LU, "LU", A.dtype) ||
      !check_dtype(ctx, pivots, "pivots", ScalarType::Int)) {
    return;
  }
  Batch batch;
  if (!linalg::broadcast_batch(ctx, A, 2, "A", nullptr, 0, nullptr, &batch) ||
      !linalg::resize_batched(ctx, result, batch, {})) {
    return;
  }
  for_each_det(ctx, A, LU, pivots, [&](const Batch& bt, int64_t b, double, double, double det) {
    linalg::store_vector(result, linalg::batch_offset(result, 0, bt, b), 1, &det);
  });
}

Error _linalg_slogdet_sign_prepare(KernelPrepareContext& ctx, const Tensor& A, Tensor& sign,
                                   Tensor& logabsdet, Tensor& LU, Tensor& pivots) {
  (void)sign, (void)logabsdet, (void)LU, (void)pivots;
  ctx.reserve_scratch(linalg::scratch_bytes(sq(A), static_cast<size_t>(cols(A))));
  return Error::Ok;
}

void _linalg_slogdet_sign(KernelContext& ctx, const Tensor& A, Tensor& sign, Tensor& logabsdet,
                          Tensor& LU, Tensor& pivots) {
  if (!check_square_float(ctx, A, "A") || !check_dtype(ctx, sign, "sign", A.dtype) ||
      !check_dtype(ctx, logabsdet, "logabsdet", A.dtype) || !check_dtype(ctx, LU, "LU", A.dtype) ||
      !check_dtype(ctx, pivots, "pivots", ScalarType::Int)) {
    return;
  }
  Batch batch;
  if (!linalg::broadcast_batch(ctx, A, 2, "A", nullptr, 0, nullptr, &batch) ||
      !linalg::resize_batched(ctx, sign, batch, {}) ||
      !linalg::resize_batched(ctx, logabsdet, batch, {})) {
    return;
  }
  for_each_det(ctx, A, LU, pivots, [&](const Batch& bt, int64_t b, double s, double la, double) {
    linalg::store_vector(sign, linalg::batch_offset(sign, 0, bt, b), 1, &s);
    linalg::store_vector(logabsdet, linalg::batch_offset(logabsdet, 0, bt, b), 1, &la);
  });
}

// --- triangular solves ------------------------------------------------------

namespace {

// Solves op(T) X = B (left) or X op(T) = B, T from `t_in`, B from `b_in`,
// broadcast batch dims, into `out`; `copy_t` (triangular_solve's M) gets T
// broadcast.
void triangular(KernelContext& ctx, const Tensor& t_in, const char* t_name, const Tensor& b_in,
                const char* b_name, bool upper, bool trans, bool unit, bool left, Tensor& out,
                Tensor* copy_t) {
  if (!linalg::check_float(ctx, b_in, b_name) || !check_square_float(ctx, t_in, t_name) ||
      !check_dtype(ctx, b_in, b_name, t_in.dtype) ||
      !check_dtype(ctx, out, "out", t_in.dtype) ||
      (copy_t != nullptr && !check_dtype(ctx, *copy_t, "M", t_in.dtype))) {
    return;
  }
  const int32_t n = cols(t_in);
  EMBER_KERNEL_CHECK(ctx, b_in.dim >= 2 && (left ? rows(b_in) : cols(b_in)) == n,
                     "%s %s must have %d %s, as %s %s", b_name, ShapeStr(b_in.shape()).c_str(), n,
                     left ? "rows" : "columns", t_name, ShapeStr(t_in.shape()).c_str());
  const int32_t r = rows(b_in), c = cols(b_in);
  Batch batch;
  if (!linalg::broadcast_batch(ctx, b_in, 2, b_name, &t_in, 2, t_name, &batch) ||
      !linalg::resize_batched(ctx, out, batch, {r, c}) ||
      (copy_t != nullptr && !linalg::resize_batched(ctx, *copy_t, batch, {n, n}))) {
    return;
  }
  if (batch.count == 0) return;
  double* t = linalg::scratch_doubles(ctx, sq(t_in) + static_cast<size_t>(r) * c);
  if (t == nullptr) return;
  double* x = t + sq(t_in);
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(t_in, linalg::batch_offset(t_in, 2, batch, b), n, n, t);
    linalg::load_matrix(b_in, linalg::batch_offset(b_in, 2, batch, b), r, c, x);
    linalg::tri_solve(t, upper, trans, unit, left, x, r, c);
    linalg::store_matrix(out, linalg::batch_offset(out, 2, batch, b), r, c, x);
    if (copy_t != nullptr) {
      linalg::store_matrix(*copy_t, linalg::batch_offset(*copy_t, 2, batch, b), n, n, t);
    }
  }
}

}  // namespace

Error linalg_solve_triangular_out_prepare(KernelPrepareContext& ctx, const Tensor& self,
                                          const Tensor& B, bool upper, bool left,
                                          bool unitriangular, Tensor& out) {
  (void)upper, (void)left, (void)unitriangular, (void)out;
  ctx.reserve_scratch(linalg::scratch_bytes(sq(self) + static_cast<size_t>(rows(B)) * cols(B)));
  return Error::Ok;
}

void linalg_solve_triangular_out(KernelContext& ctx, const Tensor& self, const Tensor& B,
                                 bool upper, bool left, bool unitriangular, Tensor& out) {
  triangular(ctx, self, "self", B, "B", upper, false, unitriangular, left, out, nullptr);
}

Error triangular_solve_X_prepare(KernelPrepareContext& ctx, const Tensor& self, const Tensor& A,
                                 bool upper, bool transpose, bool unitriangular, Tensor& X,
                                 Tensor& M) {
  (void)upper, (void)transpose, (void)unitriangular, (void)X, (void)M;
  ctx.reserve_scratch(linalg::scratch_bytes(sq(A) + static_cast<size_t>(rows(self)) * cols(self)));
  return Error::Ok;
}

void triangular_solve_X(KernelContext& ctx, const Tensor& self, const Tensor& A, bool upper,
                        bool transpose, bool unitriangular, Tensor& X, Tensor& M) {
  triangular(ctx, A, "A", self, "self", upper, transpose, unitriangular, true, X, &M);
}

}  // namespace ember::kernels::portable
