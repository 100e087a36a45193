// aten::_linalg_eigh.eigenvalues(Tensor A, str UPLO="L", bool compute_v=True, *, Tensor(a!) eigenvalues, Tensor(b!) eigenvectors)
//
// Eigenvalues (ascending) and eigenvectors (columns) of batches of symmetric
// matrices, from the triangle UPLO names (the other is not read), by cyclic
// Jacobi rotations (util/linalg.h): accurate to a few ulps of the matrix's
// norm, and fast enough for the small matrices models hold (O(n^3) per
// sweep, a handful of sweeps). Each eigenvector is defined up to sign (and
// up to a rotation within a repeated eigenvalue); Ember makes its
// largest-magnitude component positive, LAPACK may not: compare up to sign.
// compute_v=False leaves eigenvectors empty, as eager. float32 and float64,
// computed in double.
#include <string_view>

#include "kernels/generated/functions/portable/op_linalg_eigh.h"
#include "kernels/portable/util/linalg.h"

namespace ember::kernels::portable {
namespace {

int32_t side(const Tensor& t) { return t.dim >= 1 ? t.sizes[t.dim - 1] : 0; }
size_t sq(const Tensor& t) { return static_cast<size_t>(side(t)) * side(t); }

}  // namespace

Error _linalg_eigh_eigenvalues_prepare(KernelPrepareContext& ctx, const Tensor& A,
                                       std::string_view UPLO, bool compute_v,
                                       Tensor& eigenvalues, Tensor& eigenvectors) {
  (void)compute_v, (void)eigenvalues, (void)eigenvectors;
  if (UPLO != "L" && UPLO != "U") {
    return ctx.fail(Error::InvalidArgument, "UPLO: expected 'L' or 'U', got '%.*s'",
                    static_cast<int>(UPLO.size()), UPLO.data());
  }
  ctx.reserve_scratch(linalg::scratch_bytes(2 * sq(A) + static_cast<size_t>(side(A))));
  return Error::Ok;
}

void _linalg_eigh_eigenvalues(KernelContext& ctx, const Tensor& A, std::string_view UPLO,
                              bool compute_v, Tensor& eigenvalues, Tensor& eigenvectors) {
  if (!linalg::check_float(ctx, A, "A") || !linalg::check_square(ctx, A, "A") ||
      !check_dtype(ctx, eigenvalues, "eigenvalues", A.dtype) ||
      !check_dtype(ctx, eigenvectors, "eigenvectors", A.dtype)) {
    return;
  }
  const int32_t n = side(A);
  linalg::Batch batch;
  const int32_t empty[1] = {0};
  if (!linalg::broadcast_batch(ctx, A, 2, "A", nullptr, 0, nullptr, &batch) ||
      !linalg::resize_batched(ctx, eigenvalues, batch, {n}) ||
      !(compute_v ? resize_out(ctx, eigenvectors, A.shape())
                  : resize_out(ctx, eigenvectors, empty))) {
    return;
  }
  if (eigenvalues.numel == 0 && (!compute_v || eigenvectors.numel == 0)) return;
  double* a = linalg::scratch_doubles(ctx, 2 * sq(A) + static_cast<size_t>(n));
  if (a == nullptr) return;
  double* v = a + sq(A);
  double* w = v + sq(A);
  const bool lower = UPLO == "L";
  for (int64_t b = 0; b < batch.count; ++b) {
    linalg::load_matrix(A, linalg::batch_offset(A, 2, batch, b), n, n, a);
    for (int32_t i = 0; i < n; ++i) {  // mirror the named triangle
      for (int32_t j = i + 1; j < n; ++j) {
        if (lower) {
          a[i * n + j] = a[j * n + i];
        } else {
          a[j * n + i] = a[i * n + j];
        }
      }
    }
    linalg::symmetric_eigen(a, n, w, compute_v ? v : nullptr);
    linalg::store_vector(eigenvalues, linalg::batch_offset(eigenvalues, 1, batch, b), n, w);
    if (compute_v) {
      linalg::store_matrix(eigenvectors, linalg::batch_offset(eigenvectors, 2, batch, b), n, n, v);
    }
  }
}

}  // namespace ember::kernels::portable
