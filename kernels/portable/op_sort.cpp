// aten::sort.values(Tensor self, int dim=-1, bool descending=False, *, Tensor(a!) values,
//     Tensor(b!) indices)
// aten::sort.values_stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False,
//     Tensor(a!) values, Tensor(b!) indices)
// aten::topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True, *,
//     Tensor(a!) values, Tensor(b!) indices)
//
// Orders compare values with NaN above every number and break ties by the
// original index, so every sort is stable (the `stable` flag changes
// nothing) and topk picks the first of equal values. The indices output is
// the working memory: a heap sort (no allocation) over indices, then a
// gather of values. topk always returns its values sorted, a valid order for
// sorted=False too.
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/reduce.h"
#include "kernels/generated/functions/portable/op_sort.h"

namespace ember::kernels::portable {
namespace {

// "a comes before b" over element indices of one row.
template <typename S>
struct RowOrder {
  const S* row;
  int64_t step;
  bool descending;

  bool operator()(int64_t a, int64_t b) const {
    using CT = compute_t<S>;
    const CT va = convert<CT>(row[a * step]);
    const CT vb = convert<CT>(row[b * step]);
    const bool na = is_nan_value(va);
    const bool nb = is_nan_value(vb);
    if (na != nb) return descending ? na : nb;
    if (!na && va != vb) return descending ? va > vb : va < vb;
    return a < b;
  }
};

// Max-heap by `before` (the root is the element ordered last) over a strided
// index array.
template <typename Before>
void sift_down(int64_t* idx, int64_t stride, int64_t start, int64_t n, const Before& before) {
  int64_t root = start;
  while (true) {
    int64_t child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && before(idx[child * stride], idx[(child + 1) * stride])) ++child;
    if (!before(idx[root * stride], idx[child * stride])) return;
    const int64_t t = idx[root * stride];
    idx[root * stride] = idx[child * stride];
    idx[child * stride] = t;
    root = child;
  }
}

template <typename Before>
void heap_sort(int64_t* idx, int64_t stride, int64_t n, const Before& before) {
  for (int64_t i = n / 2 - 1; i >= 0; --i) sift_down(idx, stride, i, n, before);
  for (int64_t end = n - 1; end > 0; --end) {
    const int64_t t = idx[0];
    idx[0] = idx[end * stride];
    idx[end * stride] = t;
    sift_down(idx, stride, 0, end, before);
  }
}

struct SortArgs {
  const Tensor* self;
  int32_t dim;
  Tensor* values;
  Tensor* indices;
};

// Selects the first k of `len` elements per row in order (k == len: a sort).
template <typename S>
void sort_rows(const SortArgs& a, int64_t k, bool descending) {
  const Tensor& self = *a.self;
  const int32_t dim = a.dim;
  const int64_t len = self.dim == 0 ? 1 : self.sizes[dim];
  const int64_t in_step = self.dim == 0 ? 0 : self.strides[dim];
  const int64_t v_step = self.dim == 0 ? 0 : a.values->strides[dim];
  const int64_t i_step = self.dim == 0 ? 0 : a.indices->strides[dim];
  // Kept dims: one row per position, operands values, indices, self.
  int32_t kept[kTensorMaxDim];
  int64_t sv[kTensorMaxDim], si[kTensorMaxDim], ss[kTensorMaxDim];
  int32_t nk = 0;
  for (int32_t d = 0; d < self.dim; ++d) {
    if (d == dim) continue;
    kept[nk] = self.sizes[d];
    sv[nk] = a.values->strides[d];
    si[nk] = a.indices->strides[d];
    ss[nk] = self.strides[d];
    ++nk;
  }
  const int64_t* strides[3] = {sv, si, ss};
  StridedLoop<3> loop;
  loop.init({kept, static_cast<size_t>(nk)}, strides);
  const S* in = self.data_ptr<const S>();
  S* vals = a.values->data_ptr<S>();
  int64_t* idx0 = a.indices->data_ptr<int64_t>();
  loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
    for (int64_t r = 0; r < n; ++r) {
      const RowOrder<S> before{in + off[2] + r * st[2], in_step, descending};
      int64_t* idx = idx0 + off[1] + r * st[1];
      for (int64_t i = 0; i < k; ++i) idx[i * i_step] = i;
      if (k < len) {
        // Keep the best k so far in a heap whose root is the worst of them.
        for (int64_t i = k / 2 - 1; i >= 0; --i) sift_down(idx, i_step, i, k, before);
        for (int64_t i = k; i < len && k > 0; ++i) {
          if (before(i, idx[0])) {
            idx[0] = i;
            sift_down(idx, i_step, 0, k, before);
          }
        }
      }
      heap_sort(idx, i_step, k, before);
      S* v = vals + off[0] + r * st[0];
      for (int64_t i = 0; i < k; ++i) {
        const S x = before.row[idx[i * i_step] * in_step];
        if constexpr (kIsBoolStorage<S>) {
          v[i * v_step] = BoolByte(static_cast<bool>(x));  // Any non-zero byte sorts as 1.
        } else {
          v[i * v_step] = x;
        }
      }
    }
  });
}

// Checks outputs and resizes them to self's shape with `dim` of size k.
bool check_sort_outputs(KernelContext& ctx, const SortArgs& a, int64_t k) {
  if (!check_supported(ctx, *a.self, "self") ||
      !check_dtype(ctx, *a.values, "values", a.self->dtype) ||
      !check_dtype(ctx, *a.indices, "indices", ScalarType::Long)) {
    return false;
  }
  int32_t sizes[kTensorMaxDim];
  for (int32_t d = 0; d < a.self->dim; ++d) {
    sizes[d] = d == a.dim ? static_cast<int32_t>(k) : a.self->sizes[d];
  }
  const std::span<const int32_t> shape{sizes, static_cast<size_t>(a.self->dim)};
  return resize_out(ctx, *a.values, shape) && resize_out(ctx, *a.indices, shape);
}

void run_sort(KernelContext& ctx, const Tensor& self, int64_t dim, bool descending,
              Tensor& values, Tensor& indices) {
  SortArgs a{&self, 0, &values, &indices};
  if (!normalize_dim(ctx, dim, self.dim, "dim", &a.dim)) return;
  const int64_t len = self.dim == 0 ? 1 : self.sizes[a.dim];
  if (!check_sort_outputs(ctx, a, len)) return;
  if (values.numel == 0) return;
  (void)dispatch_dtype<kAllTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    sort_rows<S>(a, len, descending);
  });
}

}  // namespace

void sort_values(KernelContext& ctx, const Tensor& self, int64_t dim, bool descending,
                 Tensor& values, Tensor& indices) {
  run_sort(ctx, self, dim, descending, values, indices);
}

void sort_values_stable(KernelContext& ctx, const Tensor& self, std::optional<bool> stable,
                        int64_t dim, bool descending, Tensor& values, Tensor& indices) {
  (void)stable;  // Every sort is stable.
  run_sort(ctx, self, dim, descending, values, indices);
}

void topk_values(KernelContext& ctx, const Tensor& self, int64_t k, int64_t dim, bool largest,
                 bool sorted, Tensor& values, Tensor& indices) {
  (void)sorted;  // The values come back sorted either way.
  SortArgs a{&self, 0, &values, &indices};
  if (!normalize_dim(ctx, dim, self.dim, "dim", &a.dim)) return;
  const int64_t len = self.dim == 0 ? 1 : self.sizes[a.dim];
  EMBER_KERNEL_CHECK(ctx, k >= 0 && k <= len, "k: %lld is out of range for dim %d of size %lld",
                     static_cast<long long>(k), a.dim, static_cast<long long>(len));
  if (self.dtype == ScalarType::Bool) {
    fail_dtype(ctx, "self", self.dtype);
    return;
  }
  if (!check_sort_outputs(ctx, a, k)) return;
  if (values.numel == 0) return;
  (void)dispatch_dtype<kRealTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    sort_rows<S>(a, k, largest);
  });
}

}  // namespace ember::kernels::portable
