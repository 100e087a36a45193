// aten::linalg_cholesky_ex.L(Tensor self, *, bool upper=False, bool check_errors=False, Tensor(a!) L, Tensor(b!) info)
// aten::cholesky.out(Tensor self, bool upper=False, *, Tensor(a!) out)
// aten::cholesky_solve.out(Tensor self, Tensor input2, bool upper=False, *, Tensor(a!) out)
// aten::cholesky_inverse.out(Tensor self, bool upper=False, *, Tensor(a!) out)
//
// Cholesky A = L L^T (upper: U^T U with U = L^T) of batches of symmetric
// positive-definite matrices; only the lower triangle of A is read, as
// LAPACK's potrf does with uplo=L (eager's upper=True reads the upper one:
// the same for symmetric input). info is potrf's: 0, or the order of the
// first leading minor that is not positive definite; the factor's values are
// then unspecified. cholesky_solve solves A X = B from the factor (input2)
// with broadcast batch dims; cholesky_inverse gives A^-1. float32 and
// float64, computed in double (util/linalg.h).
#include "kernels/generated/functions/portable/op_linalg_cholesky.h"
#include "kernels/portable/util/linalg.h"

namespace ember::kernels::portable {
namespace {

using linalg::Batch;

int32_t side(const Tensor& t) { return t.dim >= 1 ? t.sizes[t.dim - 1] : 0; }
size_t sq(const Tensor& t) { return static_cast<size_t>(side(t)) * side(t); }

// Factors every matrix of self into `out`; info per batch entry to `info`
// when given, else fails (with eager's message) on the first failure.
void cholesky_into(KernelContext& ctx, const Tensor& self, bool upper, Tensor& out, Tensor* info,
                   const char* api) {
  if (!linalg::check_float(ctx, self, "self") || !check_dtype(ctx, out, "L", self.dtype) ||
      !linalg::check_square(ctx, self, "self")) {
    return;
  }
  if (info != nullptr && !check_dtype(ctx, *info, "info", ScalarType::Int)) return;
  Batch batch;
  if (!linalg::broadcast_batch(ctx, self, 2, "self", nullptr, 0, nullptr, &batch)) return;
  const int32_t n = side(self);
  if (!resize_out(ctx, out, self.shape()) ||
      (info != nullptr && !linalg::resize_batched(ctx, *info, batch, {}))) {
    return;
  }
  if (batch.count == 0) return;
  double* a = linalg::scratch_doubles(ctx, sq(self));
  if (a == nullptr) return;
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(self, linalg::batch_offset(self, 2, batch, b), n, n, a, upper);
    const int32_t code = linalg::cholesky_lower(a, n);
    linalg::store_matrix(out, linalg::batch_offset(out, 2, batch, b), n, n, a, upper);
    if (info != nullptr) {
      linalg::store_int(*info, linalg::batch_offset(*info, 0, batch, b), code);
    } else if (code != 0) {
      ctx.fail(Error::InvalidArgument,
               "%s: The factorization could not be completed because the input is not "
               "positive-definite (the leading minor of order %d is not positive-definite).",
               api, code);
      return;
    }
  }
}

// Solves A X = B in place in x (n x k) with A = L L^T, or U^T U when upper.
void cholesky_solve_matrix(const double* f, int32_t n, bool upper, double* x, int32_t k) {
  linalg::tri_solve(f, upper, upper, false, true, x, n, k);
  linalg::tri_solve(f, upper, !upper, false, true, x, n, k);
}

}  // namespace

Error linalg_cholesky_ex_L_prepare(KernelPrepareContext& ctx, const Tensor& self, bool upper,
                                   bool check_errors, Tensor& L, Tensor& info) {
  (void)upper, (void)check_errors, (void)L, (void)info;
  ctx.reserve_scratch(linalg::scratch_bytes(sq(self)));
  return Error::Ok;
}

void linalg_cholesky_ex_L(KernelContext& ctx, const Tensor& self, bool upper, bool check_errors,
                          Tensor& L, Tensor& info) {
  cholesky_into(ctx, self, upper, L, &info, "linalg.cholesky");
  if (check_errors && ctx.failure() == Error::Ok) {
    // check_errors=True raises in eager: fail on the first nonzero info.
    for (int64_t i = 0; i < info.numel; ++i) {
      const int32_t code = info.data_ptr<const int32_t>()[i];
      EMBER_KERNEL_CHECK(ctx, code == 0,
                         "linalg.cholesky: The factorization could not be completed because the "
                         "input is not positive-definite (the leading minor of order %d is not "
                         "positive-definite).",
                         code);
    }
  }
}

Error cholesky_out_prepare(KernelPrepareContext& ctx, const Tensor& self, bool upper,
                           Tensor& out) {
  (void)upper, (void)out;
  ctx.reserve_scratch(linalg::scratch_bytes(sq(self)));
  return Error::Ok;
}

void cholesky_out(KernelContext& ctx, const Tensor& self, bool upper, Tensor& out) {
  cholesky_into(ctx, self, upper, out, nullptr, "cholesky");
}

Error cholesky_solve_out_prepare(KernelPrepareContext& ctx, const Tensor& self,
                                 const Tensor& input2, bool upper, Tensor& out) {
  (void)upper, (void)out;
  const size_t k = self.dim >= 1 ? static_cast<size_t>(side(self)) : 0;
  const size_t n = static_cast<size_t>(side(input2));
  ctx.reserve_scratch(linalg::scratch_bytes(n * n + n * k));
  return Error::Ok;
}

void cholesky_solve_out(KernelContext& ctx, const Tensor& self, const Tensor& input2, bool upper,
                        Tensor& out) {
  if (!linalg::check_float(ctx, self, "self") || !check_dtype(ctx, input2, "input2", self.dtype) ||
      !check_dtype(ctx, out, "out", self.dtype) || !linalg::check_square(ctx, input2, "input2")) {
    return;
  }
  const int32_t n = side(input2);
  EMBER_KERNEL_CHECK(ctx, self.dim >= 2 && self.sizes[self.dim - 2] == n,
                     "self %s must have %d rows, as input2 %s", ShapeStr(self.shape()).c_str(), n,
                     ShapeStr(input2.shape()).c_str());
  const int32_t k = side(self);
  Batch batch;
  if (!linalg::broadcast_batch(ctx, self, 2, "self", &input2, 2, "input2", &batch) ||
      !linalg::resize_batched(ctx, out, batch, {n, k})) {
    return;
  }
  if (out.numel == 0) return;
  double* f = linalg::scratch_doubles(ctx, static_cast<size_t>(n) * n + static_cast<size_t>(n) * k);
  if (f == nullptr) return;
  double* x = f + static_cast<size_t>(n) * n;
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(input2, linalg::batch_offset(input2, 2, batch, b), n, n, f);
    linalg::load_matrix(self, linalg::batch_offset(self, 2, batch, b), n, k, x);
    cholesky_solve_matrix(f, n, upper, x, k);
    linalg::store_matrix(out, linalg::batch_offset(out, 2, batch, b), n, k, x);
  }
}

Error cholesky_inverse_out_prepare(KernelPrepareContext& ctx, const Tensor& self, bool upper,
                                   Tensor& out) {
  (void)upper, (void)out;
  ctx.reserve_scratch(linalg::scratch_bytes(2 * sq(self)));
  return Error::Ok;
}

void cholesky_inverse_out(KernelContext& ctx, const Tensor& self, bool upper, Tensor& out) {
  if (!linalg::check_float(ctx, self, "self") || !check_dtype(ctx, out, "out", self.dtype) ||
      !linalg::check_square(ctx, self, "self") || !resize_out(ctx, out, self.shape())) {
    return;
  }
  Batch batch;
  if (!linalg::broadcast_batch(ctx, self, 2, "self", nullptr, 0, nullptr, &batch)) return;
  if (out.numel == 0) return;
  const int32_t n = side(self);
  double* f = linalg::scratch_doubles(ctx, 2 * sq(self));
  if (f == nullptr) return;
  double* x = f + sq(self);
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(self, linalg::batch_offset(self, 2, batch, b), n, n, f);
    for (int32_t i = 0; i < n * n; ++i) x[i] = (i / n == i % n) ? 1.0 : 0.0;
    cholesky_solve_matrix(f, n, upper, x, n);
    linalg::store_matrix(out, linalg::batch_offset(out, 2, batch, b), n, n, x);
  }
}

}  // namespace ember::kernels::portable
