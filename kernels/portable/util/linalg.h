// Shared numerics of the linear-algebra kernels (op_linalg_*.cpp).
//
// The kernels take one matrix of a batch at a time into row-major double
// buffers from the method's scratch memory (`load_matrix`), work there with
// the textbook algorithms below and write the result back through the outs'
// strides (`store_matrix`): any dim order in and out, float32 computed in
// double (so float32 results are at least as accurate as LAPACK's), no heap.
// The factorisations follow LAPACK's conventions, so their outputs match
// eager's: getrf's 1-based pivots and info, potrf's info.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "kernels/portable/util/args.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember::kernels::portable::linalg {

/// The batch an op iterates: sizes of the leading (broadcast) dims.
struct Batch {
  int32_t dim = 0;
  int32_t sizes[kTensorMaxDim] = {};
  int64_t count = 1;
};

/// Broadcasts the leading `t.dim - core` dims of `a` (and `b` when given)
/// into `batch`; false after failing with a message naming both shapes.
bool broadcast_batch(KernelContext& ctx, const Tensor& a, int32_t a_core, const char* a_name,
                     const Tensor* b, int32_t b_core, const char* b_name, Batch* batch);

/// `batch` followed by `tail` (n_tail sizes) into `out` (its rank); the shape
/// of an out.
int32_t batch_shape(const Batch& batch, const int32_t* tail, int32_t n_tail, int32_t* out);

/// Element offset of batch entry `b` (row-major over `batch`) in `t`, whose
/// last `core` dims are the matrix (or vector) and whose leading dims
/// broadcast against `batch` (right-aligned, size 1 repeats).
int64_t batch_offset(const Tensor& t, int32_t core, const Batch& batch, int64_t b);

/// Fails unless `t` is float32 or float64 (`name: unsupported dtype ...`).
bool check_float(KernelContext& ctx, const Tensor& t, const char* name);

/// Fails unless `t` has at least 2 dims and its last two are equal.
bool check_square(KernelContext& ctx, const Tensor& t, const char* name);

/// Reads the rows x cols matrix at element offset `off` of `t` (strides of
/// its last two dims; `transpose` reads the transposed matrix, cols x rows
/// of `t`) into `dst`, row-major.
void load_matrix(const Tensor& t, int64_t off, int32_t rows, int32_t cols, double* dst,
                 bool transpose = false);
/// Writes `src` (rows x cols, row-major) at element offset `off` of `t`,
/// transposed when `transpose` (into the cols x rows matrix of `t`).
void store_matrix(Tensor& t, int64_t off, int32_t rows, int32_t cols, const double* src,
                  bool transpose = false);
/// Reads / writes n elements along `t`'s last dim.
void load_vector(const Tensor& t, int64_t off, int32_t n, double* dst);
void store_vector(Tensor& t, int64_t off, int32_t n, const double* src);
/// Rows and columns of the matrices of a (batched) matrix tensor: its last
/// two dims (0 where it has fewer), and the elements of one matrix.
inline int32_t rows(const Tensor& t) { return t.dim >= 2 ? t.sizes[t.dim - 2] : 0; }
inline int32_t cols(const Tensor& t) { return t.dim >= 1 ? t.sizes[t.dim - 1] : 0; }
inline size_t mat(const Tensor& t) { return static_cast<size_t>(rows(t)) * cols(t); }
// Elements of a square matrix of t's last dimension (scratch sizes).
inline size_t sq(const Tensor& t) { return static_cast<size_t>(cols(t)) * cols(t); }
/// Writes an int32 value (info, pivots) at element offset `off`.
inline void store_int(Tensor& t, int64_t off, int32_t v) { t.data_ptr<int32_t>()[off] = v; }

/// Scratch memory for `doubles` doubles (and `ints` int32 after them), or null
/// after failing with how much was needed.
double* scratch_doubles(KernelContext& ctx, size_t doubles, size_t ints = 0);
/// Bytes `scratch_doubles` needs.
inline size_t scratch_bytes(size_t doubles, size_t ints = 0) {
  return doubles * sizeof(double) + ints * sizeof(int32_t) + 64;
}

// --- numerics, row-major double matrices -----------------------------------

/// Cholesky A = L L^T of the n x n matrix `a` (its lower triangle is read):
/// `a` becomes L (upper triangle zeroed). Returns 0, or as LAPACK's potrf the
/// order of the first leading minor that is not positive definite.
int32_t cholesky_lower(double* a, int32_t n);

/// LU with partial pivoting of the m x n matrix `a` in place (LAPACK getrf:
/// unit-lower L below the diagonal, U on and above; `piv` gets min(m, n)
/// 1-based row swaps, the first maximum |a| of the column). Returns 0, or
/// the 1-based index of the first exactly zero pivot.
int32_t lu_factor(double* a, int32_t m, int32_t n, int32_t* piv);

/// Solves op(A) x = b for one vector (elements `stride` apart) with A = P L U
/// from `lu_factor` (n x n): op(A) = A, or A^T when `trans`.
void lu_solve_vector(const double* lu, const int32_t* piv, int32_t n, bool trans, double* x,
                     int64_t stride);

/// Solves op(T) x = b for one vector (elements `stride` apart), T n x n
/// triangular (`upper`, else lower; the other triangle is not read), op(T) = T
/// or T^T (`trans`); a unit diagonal is assumed (not read) when `unit`.
void tri_solve_vector(const double* t, int32_t n, bool upper, bool trans, bool unit, double* x,
                      int64_t stride);

/// Solves op(T) X = B (left) or X op(T) = B (!left) in place in `b`, B being
/// rows x cols (row-major), T square of side rows (left) or cols (!left).
void tri_solve(const double* t, bool upper, bool trans, bool unit, bool left, double* b,
               int32_t rows, int32_t cols);

/// The permutation of `lu_factor`'s pivots: row i of P^T A is row perm[i] of
/// A (A = P L U). `perm` has m entries.
void pivots_to_permutation(const int32_t* piv, int32_t k, int32_t m, int32_t* perm);

/// LAPACK's dlarfg: the reflector H = I - tau v v^T (v = [1; x']) with
/// H [alpha; x] = [beta; 0]: `alpha` becomes beta (-sign(alpha) times the
/// norm), `x` (count elements, `stride` apart) becomes v's tail; returns tau
/// (0, H = I, when x is zero).
double householder(double* alpha, double* x, int32_t count, int64_t stride);

/// Applies H = I - tau v v^T (v[0] = 1, tail v[1..len) at `v` + k*vs) to the
/// `len` rows starting at `c` of a matrix with row stride `ldc` and `cols`
/// columns (left), or to its `len` columns starting at `c` and `rows` rows
/// (right: C H).
void reflect_left(const double* v, int64_t vs, int32_t len, double tau, double* c, int64_t ldc,
                  int32_t cols);
void reflect_right(const double* v, int64_t vs, int32_t len, double tau, double* c, int64_t ldc,
                   int32_t rows);

/// Householder QR of the m x n matrix `a` in place, as LAPACK's geqrf: R on
/// and above the diagonal, the reflectors' tails below, tau min(m, n).
void qr_factor(double* a, int32_t m, int32_t n, double* tau);

/// The first `q_cols` columns of Q = H_1 ... H_k (m x q_cols, row-major into
/// `q`) from reflectors below the diagonal of `v` (m x v_cols) and `tau` (k),
/// as LAPACK's orgqr.
void qr_form_q(const double* v, int32_t m, int32_t v_cols, const double* tau, int32_t k,
               double* q, int32_t q_cols);

/// Eigen-decomposition of the symmetric n x n matrix `a` (both triangles
/// read; destroyed) by cyclic Jacobi rotations: `w` gets the eigenvalues in
/// ascending order, `v` (n x n, row-major, when not null) the eigenvectors as
/// columns, each with its largest-magnitude component positive (the sign is
/// otherwise arbitrary).
void symmetric_eigen(double* a, int32_t n, double* w, double* v);

/// SVD A = U diag(s) V^T of the m x n matrix `a` (m >= n; destroyed: becomes
/// U's first n columns) by one-sided Jacobi: `s` (n) descending, `v` (n x n)
/// V with columns as right singular vectors, `u` (m x u_cols, u_cols = n or
/// m) U completed to orthonormal columns where s is 0 or u_cols > n. Scratch
/// `work` of m doubles. Each singular pair's sign is fixed by V's largest
/// component being positive.
void jacobi_svd(double* a, int32_t m, int32_t n, double* s, double* v, double* u,
                int32_t u_cols, double* work);

}  // namespace ember::kernels::portable::linalg

namespace ember::kernels::portable::linalg {

/// Resizes `out` to `batch` + `tail`; false after failing.
inline bool resize_batched(KernelContext& ctx, Tensor& out, const Batch& batch,
                           std::initializer_list<int32_t> tail) {
  int32_t shape[kTensorMaxDim + 2];
  const int32_t rank = batch_shape(batch, tail.begin(), static_cast<int32_t>(tail.size()), shape);
  return resize_out(ctx, out, {shape, static_cast<size_t>(rank)});
}

/// Fails unless `t` is int32 holding 1-based pivots in [1, n] (n entries per
/// batch entry along its last dim, at `off`).
bool check_pivots(KernelContext& ctx, const Tensor& t, int64_t off, int32_t k, int32_t n,
                  const char* name, int32_t* dst);

}  // namespace ember::kernels::portable::linalg
