// aten::linalg_lu_factor_ex.out(Tensor A, *, bool pivot=True, bool check_errors=False, Tensor(a!) LU, Tensor(b!) pivots, Tensor(c!) info)
// aten::linalg_lu.out(Tensor A, *, bool pivot=True, Tensor(a!) P, Tensor(b!) L, Tensor(c!) U)
// aten::lu_unpack.out(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True, *, Tensor(a!) P, Tensor(b!) L, Tensor(c!) U)
// aten::linalg_lu_solve.out(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False, Tensor(a!) out)
//
// LU with partial pivoting of batches of m x n matrices, A = P L U, with
// LAPACK getrf's conventions (what eager returns): LU holds unit-lower L
// below the diagonal and U on and above, pivots are min(m, n) 1-based int32
// row swaps, info the 1-based index of the first zero pivot. pivot=False is
// refused, as eager refuses it on CPU. lu_unpack turns LU and pivots into
// P (m x m), L (m x k), U (k x n); lu_solve solves A X = B (adjoint: A^T X =
// B; left=False: X A = B) with broadcast batch dims. float32 and float64,
// computed in double (util/linalg.h).
#include "kernels/generated/functions/portable/op_linalg_lu.h"
#include "kernels/portable/util/linalg.h"

namespace ember::kernels::portable {
namespace {

using linalg::Batch;

using linalg::cols;
using linalg::mat;
using linalg::rows;

Error refuse_no_pivot(KernelPrepareContext& ctx, bool pivot) {
  if (!pivot) {
    return ctx.fail(Error::InvalidArgument,
                    "pivot=False: LU without pivoting is not implemented (nor on eager's CPU)");
  }
  return Error::Ok;
}

bool check_matrix(KernelContext& ctx, const Tensor& t, const char* name) {
  if (!linalg::check_float(ctx, t, name)) return false;
  if (t.dim >= 2) return true;
  ctx.fail(Error::InvalidArgument, "%s must have at least 2 dims, got shape %s", name,
           ShapeStr(t.shape()).c_str());
  return false;
}

// Writes P (m x m), L (m x k) and U (k x n) of the factored `lu` (m x n).
void unpack(const double* lu, const int32_t* piv, int32_t m, int32_t n, double* work,
            int32_t* perm, Tensor* P, int64_t p_off, Tensor* L, int64_t l_off, Tensor* U,
            int64_t u_off) {
  const int32_t k = m < n ? m : n;
  if (P != nullptr) {
    linalg::pivots_to_permutation(piv, k, m, perm);
    for (int32_t i = 0; i < m * m; ++i) work[i] = 0.0;
    for (int32_t i = 0; i < m; ++i) work[perm[i] * m + i] = 1.0;
    linalg::store_matrix(*P, p_off, m, m, work);
  }
  if (L != nullptr) {
    for (int32_t i = 0; i < m; ++i) {
      for (int32_t j = 0; j < k; ++j) {
        work[i * k + j] = i > j ? lu[i * n + j] : (i == j ? 1.0 : 0.0);
      }
    }
    linalg::store_matrix(*L, l_off, m, k, work);
    for (int32_t i = 0; i < k; ++i) {
      for (int32_t j = 0; j < n; ++j) work[i * n + j] = j >= i ? lu[i * n + j] : 0.0;
    }
    linalg::store_matrix(*U, u_off, k, n, work);
  }
}

}  // namespace

Error linalg_lu_factor_ex_out_prepare(KernelPrepareContext& ctx, const Tensor& A, bool pivot,
                                      bool check_errors, Tensor& LU, Tensor& pivots,
                                      Tensor& info) {
  (void)check_errors, (void)LU, (void)pivots, (void)info;
  ctx.reserve_scratch(linalg::scratch_bytes(mat(A), static_cast<size_t>(rows(A)) + cols(A)));
  return refuse_no_pivot(ctx, pivot);
}

void linalg_lu_factor_ex_out(KernelContext& ctx, const Tensor& A, bool pivot, bool check_errors,
                             Tensor& LU, Tensor& pivots, Tensor& info) {
  (void)pivot;
  if (!check_matrix(ctx, A, "A") || !check_dtype(ctx, LU, "LU", A.dtype) ||
      !check_dtype(ctx, pivots, "pivots", ScalarType::Int) ||
      !check_dtype(ctx, info, "info", ScalarType::Int)) {
    return;
  }
  const int32_t m = rows(A), n = cols(A), k = m < n ? m : n;
  Batch batch;
  if (!linalg::broadcast_batch(ctx, A, 2, "A", nullptr, 0, nullptr, &batch) ||
      !resize_out(ctx, LU, A.shape()) || !linalg::resize_batched(ctx, pivots, batch, {k}) ||
      !linalg::resize_batched(ctx, info, batch, {})) {
    return;
  }
  if (batch.count == 0) return;
  double* a = linalg::scratch_doubles(ctx, mat(A), static_cast<size_t>(m) + n);
  if (a == nullptr) return;
  int32_t* piv = reinterpret_cast<int32_t*>(a + mat(A));
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(A, linalg::batch_offset(A, 2, batch, b), m, n, a);
    const int32_t code = linalg::lu_factor(a, m, n, piv);
    linalg::store_matrix(LU, linalg::batch_offset(LU, 2, batch, b), m, n, a);
    const int64_t p_off = linalg::batch_offset(pivots, 1, batch, b);
    for (int32_t i = 0; i < k; ++i) {
      linalg::store_int(pivots, p_off + i * pivots.strides[pivots.dim - 1], piv[i]);
    }
    linalg::store_int(info, linalg::batch_offset(info, 0, batch, b), code);
    EMBER_KERNEL_CHECK(ctx, !check_errors || code == 0,
                       "torch.linalg.lu_factor_ex: U[%d,%d] is zero and using it on "
                       "lu_solve would result in a division by zero.",
                       code, code);
  }
}

Error linalg_lu_out_prepare(KernelPrepareContext& ctx, const Tensor& A, bool pivot, Tensor& P,
                            Tensor& L, Tensor& U) {
  (void)P, (void)L, (void)U;
  const size_t m = static_cast<size_t>(rows(A)), n = static_cast<size_t>(cols(A));
  const size_t big = m > n ? m : n;
  ctx.reserve_scratch(linalg::scratch_bytes(mat(A) + big * big, m + n));
  return refuse_no_pivot(ctx, pivot);
}

void linalg_lu_out(KernelContext& ctx, const Tensor& A, bool pivot, Tensor& P, Tensor& L,
                   Tensor& U) {
  (void)pivot;
  if (!check_matrix(ctx, A, "A") || !check_dtype(ctx, P, "P", A.dtype) ||
      !check_dtype(ctx, L, "L", A.dtype) || !check_dtype(ctx, U, "U", A.dtype)) {
    return;
  }
  const int32_t m = rows(A), n = cols(A), k = m < n ? m : n;
  Batch batch;
  if (!linalg::broadcast_batch(ctx, A, 2, "A", nullptr, 0, nullptr, &batch) ||
      !linalg::resize_batched(ctx, P, batch, {m, m}) ||
      !linalg::resize_batched(ctx, L, batch, {m, k}) ||
      !linalg::resize_batched(ctx, U, batch, {k, n})) {
    return;
  }
  if (batch.count == 0) return;
  const size_t big = static_cast<size_t>(m > n ? m : n);
  double* a = linalg::scratch_doubles(ctx, mat(A) + big * big, static_cast<size_t>(m) + n);
  if (a == nullptr) return;
  double* work = a + mat(A);
  int32_t* piv = reinterpret_cast<int32_t*>(work + big * big);
  int32_t* perm = piv + k;
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(A, linalg::batch_offset(A, 2, batch, b), m, n, a);
    (void)linalg::lu_factor(a, m, n, piv);
    unpack(a, piv, m, n, work, perm, &P, linalg::batch_offset(P, 2, batch, b), &L,
           linalg::batch_offset(L, 2, batch, b), &U, linalg::batch_offset(U, 2, batch, b));
  }
}

Error lu_unpack_out_prepare(KernelPrepareContext& ctx, const Tensor& LU_data,
                            const Tensor& LU_pivots, bool unpack_data, bool unpack_pivots,
                            Tensor& P, Tensor& L, Tensor& U) {
  (void)LU_pivots, (void)unpack_data, (void)unpack_pivots, (void)P, (void)L, (void)U;
  const size_t m = static_cast<size_t>(rows(LU_data)), n = static_cast<size_t>(cols(LU_data));
  const size_t big = m > n ? m : n;
  ctx.reserve_scratch(linalg::scratch_bytes(mat(LU_data) + big * big, m + n));
  return Error::Ok;
}

void lu_unpack_out(KernelContext& ctx, const Tensor& LU_data, const Tensor& LU_pivots,
                   bool unpack_data, bool unpack_pivots, Tensor& P, Tensor& L, Tensor& U) {
  if (!check_matrix(ctx, LU_data, "LU_data") ||
      !check_dtype(ctx, LU_pivots, "LU_pivots", ScalarType::Int) ||
      !check_dtype(ctx, P, "P", LU_data.dtype) || !check_dtype(ctx, L, "L", LU_data.dtype) ||
      !check_dtype(ctx, U, "U", LU_data.dtype)) {
    return;
  }
  const int32_t m = rows(LU_data), n = cols(LU_data), k = m < n ? m : n;
  EMBER_KERNEL_CHECK(ctx, LU_pivots.dim == LU_data.dim - 1 && cols(LU_pivots) == k,
                     "LU_pivots %s must have shape batch + [%d] for LU_data %s",
                     ShapeStr(LU_pivots.shape()).c_str(), k, ShapeStr(LU_data.shape()).c_str());
  Batch batch;
  if (!linalg::broadcast_batch(ctx, LU_data, 2, "LU_data", &LU_pivots, 1, "LU_pivots", &batch)) {
    return;
  }
  // Outputs not asked for are empty, as eager's (shape [0]).
  const int32_t empty[1] = {0};
  if (unpack_pivots ? !linalg::resize_batched(ctx, P, batch, {m, m}) : !resize_out(ctx, P, empty)) {
    return;
  }
  if (unpack_data ? (!linalg::resize_batched(ctx, L, batch, {m, k}) ||
                     !linalg::resize_batched(ctx, U, batch, {k, n}))
                  : (!resize_out(ctx, L, empty) || !resize_out(ctx, U, empty))) {
    return;
  }
  if (batch.count == 0) return;
  const size_t big = static_cast<size_t>(m > n ? m : n);
  double* a = linalg::scratch_doubles(ctx, mat(LU_data) + big * big, static_cast<size_t>(m) + n);
  if (a == nullptr) return;
  double* work = a + mat(LU_data);
  int32_t* piv = reinterpret_cast<int32_t*>(work + big * big);
  int32_t* perm = piv + k;
  for (int64_t b = 0; b < batch.count; ++b) {
    if (unpack_pivots &&
        !linalg::check_pivots(ctx, LU_pivots, linalg::batch_offset(LU_pivots, 1, batch, b), k, m,
                              "LU_pivots", piv)) {
      return;
    }
    if (unpack_data) linalg::load_matrix(LU_data, linalg::batch_offset(LU_data, 2, batch, b), m, n, a);
    unpack(a, piv, m, n, work, perm, unpack_pivots ? &P : nullptr,
           unpack_pivots ? linalg::batch_offset(P, 2, batch, b) : 0,
           unpack_data ? &L : nullptr, unpack_data ? linalg::batch_offset(L, 2, batch, b) : 0, &U,
           unpack_data ? linalg::batch_offset(U, 2, batch, b) : 0);
  }
}

Error linalg_lu_solve_out_prepare(KernelPrepareContext& ctx, const Tensor& LU,
                                  const Tensor& pivots, const Tensor& B, bool left, bool adjoint,
                                  Tensor& out) {
  (void)pivots, (void)left, (void)adjoint, (void)out;
  ctx.reserve_scratch(linalg::scratch_bytes(mat(LU) + mat(B), static_cast<size_t>(cols(LU))));
  return Error::Ok;
}

void linalg_lu_solve_out(KernelContext& ctx, const Tensor& LU, const Tensor& pivots,
                         const Tensor& B, bool left, bool adjoint, Tensor& out) {
  if (!linalg::check_float(ctx, LU, "LU") || !linalg::check_square(ctx, LU, "LU") ||
      !check_dtype(ctx, pivots, "pivots", ScalarType::Int) ||
      !check_dtype(ctx, B, "B", LU.dtype) || !check_dtype(ctx, out, "out", LU.dtype)) {
    return;
  }
  const int32_t n = cols(LU);
  EMBER_KERNEL_CHECK(ctx, B.dim >= 2 && (left ? rows(B) : cols(B)) == n,
                     "B %s must have %d %s, as LU %s", ShapeStr(B.shape()).c_str(), n,
                     left ? "rows" : "columns", ShapeStr(LU.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, pivots.dim == LU.dim - 1 && cols(pivots) == n,
                     "pivots %s must have shape batch + [%d] for LU %s",
                     ShapeStr(pivots.shape()).c_str(), n, ShapeStr(LU.shape()).c_str());
  Batch batch, lu_batch;
  if (!linalg::broadcast_batch(ctx, LU, 2, "LU", &pivots, 1, "pivots", &lu_batch) ||
      !linalg::broadcast_batch(ctx, B, 2, "B", &LU, 2, "LU", &batch) ||
      !linalg::resize_batched(ctx, out, batch, {rows(B), cols(B)})) {
    return;
  }
  if (out.numel == 0) return;
  double* lu = linalg::scratch_doubles(ctx, mat(LU) + mat(B), static_cast<size_t>(n));
  if (lu == nullptr) return;
  double* x = lu + mat(LU);
  int32_t* piv = reinterpret_cast<int32_t*>(x + mat(B));
  const int32_t r = rows(B), c = cols(B);
  for (int64_t b = 0; b < batch.count; ++b) {
    if (!linalg::check_pivots(ctx, pivots, linalg::batch_offset(pivots, 1, batch, b), n, n,
                              "pivots", piv)) {
      return;
    }
    linalg::load_matrix(LU, linalg::batch_offset(LU, 2, batch, b), n, n, lu);
    linalg::load_matrix(B, linalg::batch_offset(B, 2, batch, b), r, c, x);
    if (left) {
      for (int32_t j = 0; j < c; ++j) linalg::lu_solve_vector(lu, piv, n, adjoint, x + j, c);
    } else {
      // X op(A) = B  <=>  op(A)^T X^T = B^T, one row of B at a time.
      for (int32_t i = 0; i < r; ++i) {
        linalg::lu_solve_vector(lu, piv, n, !adjoint, x + static_cast<int64_t>(i) * c, 1);
      }
    }
    linalg::store_matrix(out, linalg::batch_offset(out, 2, batch, b), r, c, x);
  }
}

}  // namespace ember::kernels::portable
