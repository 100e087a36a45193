// aten::geqrf.a(Tensor self, *, Tensor(a!) a, Tensor(b!) tau)
// aten::linalg_householder_product.out(Tensor input, Tensor tau, *, Tensor(a!) out)
// aten::ormqr.out(Tensor self, Tensor input2, Tensor input3, bool left=True, bool transpose=False, *, Tensor(a!) out)
// aten::linalg_qr.out(Tensor A, str mode="reduced", *, Tensor(a!) Q, Tensor(b!) R)
//
// Householder QR with LAPACK's reflector convention (dlarfg: beta =
// -sign(alpha)·norm, tau = (beta - alpha)/beta, tau = 0 for a zero column),
// so geqrf's a and tau, and linalg_qr's Q and R (geqrf + orgqr, as eager),
// match eager's LAPACK up to rounding, signs included.
// householder_product is orgqr (the first n columns of H_1 ... H_k), ormqr
// multiplies C by Q or Q^T from the left or right. float32 and float64,
// computed in double (util/linalg.h).
#include <string_view>

#include "kernels/generated/functions/portable/op_linalg_qr.h"
#include "kernels/portable/util/linalg.h"

namespace ember::kernels::portable {
namespace {

using linalg::Batch;

using linalg::cols;
using linalg::mat;
using linalg::rows;
int32_t min2(int32_t a, int32_t b) { return a < b ? a : b; }

bool check_matrix(KernelContext& ctx, const Tensor& t, const char* name) {
  if (!linalg::check_float(ctx, t, name)) return false;
  if (t.dim >= 2) return true;
  ctx.fail(Error::InvalidArgument, "%s must have at least 2 dims, got shape %s", name,
           ShapeStr(t.shape()).c_str());
  return false;
}

enum class QrMode { kReduced, kComplete, kR, kBad };

QrMode qr_mode(std::string_view mode) {
  if (mode == "reduced") return QrMode::kReduced;
  if (mode == "complete") return QrMode::kComplete;
  if (mode == "r") return QrMode::kR;
  return QrMode::kBad;
}

}  // namespace

Error geqrf_a_prepare(KernelPrepareContext& ctx, const Tensor& self, Tensor& a, Tensor& tau) {
  (void)a, (void)tau;
  ctx.reserve_scratch(linalg::scratch_bytes(mat(self) + static_cast<size_t>(cols(self))));
  return Error::Ok;
}

void geqrf_a(KernelContext& ctx, const Tensor& self, Tensor& a, Tensor& tau) {
  if (!check_matrix(ctx, self, "self") || !check_dtype(ctx, a, "a", self.dtype) ||
      !check_dtype(ctx, tau, "tau", self.dtype)) {
    return;
  }
  const int32_t m = rows(self), n = cols(self), k = min2(m, n);
  Batch batch;
  if (!linalg::broadcast_batch(ctx, self, 2, "self", nullptr, 0, nullptr, &batch) ||
      !resize_out(ctx, a, self.shape()) || !linalg::resize_batched(ctx, tau, batch, {k})) {
    return;
  }
  if (batch.count == 0) return;
  double* w = linalg::scratch_doubles(ctx, mat(self) + static_cast<size_t>(n));
  if (w == nullptr) return;
  double* t = w + mat(self);
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(self, linalg::batch_offset(self, 2, batch, b), m, n, w);
    linalg::qr_factor(w, m, n, t);
    linalg::store_matrix(a, linalg::batch_offset(a, 2, batch, b), m, n, w);
    linalg::store_vector(tau, linalg::batch_offset(tau, 1, batch, b), k, t);
  }
}

Error linalg_householder_product_out_prepare(KernelPrepareContext& ctx, const Tensor& input,
                                             const Tensor& tau, Tensor& out) {
  (void)out;
  ctx.reserve_scratch(linalg::scratch_bytes(2 * mat(input) + static_cast<size_t>(cols(tau))));
  return Error::Ok;
}

void linalg_householder_product_out(KernelContext& ctx, const Tensor& input, const Tensor& tau,
                                    Tensor& out) {
  if (!check_matrix(ctx, input, "input") || !check_dtype(ctx, tau, "tau", input.dtype) ||
      !check_dtype(ctx, out, "out", input.dtype)) {
    return;
  }
  const int32_t m = rows(input), n = cols(input), k = cols(tau);
  EMBER_KERNEL_CHECK(ctx, n <= m, "input %s must have at least as many rows as columns",
                     ShapeStr(input.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, tau.dim == input.dim - 1 && k <= n,
                     "tau %s must have shape batch + [k], k <= %d, for input %s",
                     ShapeStr(tau.shape()).c_str(), n, ShapeStr(input.shape()).c_str());
  Batch batch;
  if (!linalg::broadcast_batch(ctx, input, 2, "input", &tau, 1, "tau", &batch) ||
      !linalg::resize_batched(ctx, out, batch, {m, n})) {
    return;
  }
  if (out.numel == 0) return;
  double* v = linalg::scratch_doubles(ctx, 2 * mat(input) + static_cast<size_t>(k));
  if (v == nullptr) return;
  double* q = v + mat(input);
  double* t = q + mat(input);
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(input, linalg::batch_offset(input, 2, batch, b), m, n, v);
    linalg::load_vector(tau, linalg::batch_offset(tau, 1, batch, b), k, t);
    linalg::qr_form_q(v, m, n, t, k, q, n);
    linalg::store_matrix(out, linalg::batch_offset(out, 2, batch, b), m, n, q);
  }
}

Error ormqr_out_prepare(KernelPrepareContext& ctx, const Tensor& self, const Tensor& input2,
                        const Tensor& input3, bool left, bool transpose, Tensor& out) {
  (void)left, (void)transpose, (void)out;
  ctx.reserve_scratch(
      linalg::scratch_bytes(mat(self) + mat(input3) + static_cast<size_t>(cols(input2))));
  return Error::Ok;
}

void ormqr_out(KernelContext& ctx, const Tensor& self, const Tensor& input2, const Tensor& input3,
               bool left, bool transpose, Tensor& out) {
  if (!check_matrix(ctx, self, "self") || !check_dtype(ctx, input2, "input2", self.dtype) ||
      !check_matrix(ctx, input3, "input3") || !check_dtype(ctx, input3, "input3", self.dtype) ||
      !check_dtype(ctx, out, "out", self.dtype)) {
    return;
  }
  const int32_t m = rows(input3), n = cols(input3), k = cols(input2);
  const int32_t side = left ? m : n;  // Q is side x side
  const int32_t vr = rows(self), vc = cols(self);
  EMBER_KERNEL_CHECK(ctx, vr == side && k <= vc && k <= side && input2.dim == self.dim - 1,
                     "self %s (reflectors), input2 %s (tau) and input3 %s do not fit: self "
                     "needs %d rows and tau at most min(%d, %d) elements",
                     ShapeStr(self.shape()).c_str(), ShapeStr(input2.shape()).c_str(),
                     ShapeStr(input3.shape()).c_str(), side, vc, side);
  Batch vbatch, batch;
  if (!linalg::broadcast_batch(ctx, self, 2, "self", &input2, 1, "input2", &vbatch) ||
      !linalg::broadcast_batch(ctx, input3, 2, "input3", &self, 2, "self", &batch) ||
      !linalg::resize_batched(ctx, out, batch, {m, n})) {
    return;
  }
  if (out.numel == 0) return;
  double* v = linalg::scratch_doubles(ctx, mat(self) + mat(input3) + static_cast<size_t>(k));
  if (v == nullptr) return;
  double* c = v + mat(self);
  double* t = c + mat(input3);
  // Q = H_1 ... H_k: Q C applies H_k first, Q^T C H_1 first; C Q applies H_1
  // first, C Q^T H_k first.
  const bool forward = left == transpose;
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(self, linalg::batch_offset(self, 2, batch, b), vr, vc, v);
    linalg::load_vector(input2, linalg::batch_offset(input2, 1, batch, b), k, t);
    linalg::load_matrix(input3, linalg::batch_offset(input3, 2, batch, b), m, n, c);
    for (int32_t s = 0; s < k; ++s) {
      const int32_t j = forward ? s : k - 1 - s;
      const double* col = v + static_cast<int64_t>(j) * vc + j;
      if (left) {
        linalg::reflect_left(col, vc, m - j, t[j], c + static_cast<int64_t>(j) * n, n, n);
      } else {
        linalg::reflect_right(col, vc, n - j, t[j], c + j, n, m);
      }
    }
    linalg::store_matrix(out, linalg::batch_offset(out, 2, batch, b), m, n, c);
  }
}

Error linalg_qr_out_prepare(KernelPrepareContext& ctx, const Tensor& A, std::string_view mode,
                            Tensor& Q, Tensor& R) {
  (void)Q, (void)R;
  if (qr_mode(mode) == QrMode::kBad) {
    return ctx.fail(Error::InvalidArgument,
                    "mode: qr received unrecognized mode '%.*s' but expected one of 'reduced' "
                    "(default), 'r', or 'complete'",
                    static_cast<int>(mode.size()), mode.data());
  }
  const size_t m = static_cast<size_t>(rows(A)), n = static_cast<size_t>(cols(A));
  ctx.reserve_scratch(linalg::scratch_bytes(m * n + m * (m > n ? m : n) + n));
  return Error::Ok;
}

void linalg_qr_out(KernelContext& ctx, const Tensor& A, std::string_view mode, Tensor& Q,
                   Tensor& R) {
  if (!check_matrix(ctx, A, "A") || !check_dtype(ctx, Q, "Q", A.dtype) ||
      !check_dtype(ctx, R, "R", A.dtype)) {
    return;
  }
  const QrMode md = qr_mode(mode);
  const int32_t m = rows(A), n = cols(A), k = min2(m, n);
  const int32_t q_cols = md == QrMode::kComplete ? m : k;
  const int32_t r_rows = md == QrMode::kComplete ? m : k;
  Batch batch;
  if (!linalg::broadcast_batch(ctx, A, 2, "A", nullptr, 0, nullptr, &batch) ||
      !linalg::resize_batched(ctx, R, batch, {r_rows, n})) {
    return;
  }
  const int32_t empty[1] = {0};
  if (md == QrMode::kR ? !resize_out(ctx, Q, empty)
                       : !linalg::resize_batched(ctx, Q, batch, {m, q_cols})) {
    return;
  }
  if (batch.count == 0) return;
  const size_t mm = static_cast<size_t>(m), nn = static_cast<size_t>(n);
  double* a = linalg::scratch_doubles(ctx, mm * nn + mm * (mm > nn ? mm : nn) + nn);
  if (a == nullptr) return;
  double* q = a + mm * nn;
  double* t = q + mm * (mm > nn ? mm : nn);
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(A, linalg::batch_offset(A, 2, batch, b), m, n, a);
    linalg::qr_factor(a, m, n, t);
    if (md != QrMode::kR) {
      linalg::qr_form_q(a, m, n, t, k, q, q_cols);
      linalg::store_matrix(Q, linalg::batch_offset(Q, 2, batch, b), m, q_cols, q);
    }
    for (int32_t i = 0; i < r_rows; ++i) {
      for (int32_t j = 0; j < n; ++j) q[i * n + j] = j >= i ? a[i * n + j] : 0.0;
    }
    linalg::store_matrix(R, linalg::batch_offset(R, 2, batch, b), r_rows, n, q);
  }
}

}  // namespace ember::kernels::portable
