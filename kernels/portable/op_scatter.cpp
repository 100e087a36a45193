// gather and the scatter family: one index tensor along one dim.
//
// aten::gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False,
//     Tensor(a!) out) -> Tensor(a!)
//   out[i] = self[i with i[dim] = index[i]]; out has index's shape.
// aten::scatter.src_out(Tensor self, int dim, Tensor index, Tensor src, *,
//     Tensor(a!) out) -> Tensor(a!)
// aten::scatter.value_out(Tensor self, int dim, Tensor index, Scalar value, *,
//     Tensor(a!) out) -> Tensor(a!)
// aten::scatter_add.out(Tensor self, int dim, Tensor index, Tensor src, *,
//     Tensor(a!) out) -> Tensor(a!)
//   out = self, then for every i of index: out[i with i[dim] = index[i]]
//   (=|+=) src[i] (or value).
// aten::scatter_reduce.two_out(Tensor self, int dim, Tensor index, Tensor src,
//     str reduce, *, bool include_self=True, Tensor(a!) out) -> Tensor(a!)
//   reduce is sum, prod, mean (integers: floor division), amax or amin (NaN
//   propagates); without include_self, targets start from the reduction's
//   identity and a mean counts only scattered values.
// index is int64 (int32 accepted); index values must lie in [0, size) of
// self's dim (no wrapping, as in PyTorch). index.size(d) <= self.size(d) for
// d != dim, and <= src.size(d) for every d. self, src and out share a dtype.
#include <cmath>
#include <limits>
#include <string_view>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/view.h"
#include "kernels/generated/functions/portable/op_scatter.h"

namespace ember::kernels::portable {
namespace {

/// Sizes and strides of a tensor with 0-dim tensors seen as [1].
struct Dims {
  int32_t dim = 1;
  int32_t sizes[kTensorMaxDim] = {1};
  int64_t strides[kTensorMaxDim] = {0};
  explicit Dims(const Tensor& t) {
    if (t.dim == 0) return;
    dim = t.dim;
    for (int32_t d = 0; d < dim; ++d) {
      sizes[d] = t.sizes[d];
      strides[d] = t.strides[d];
    }
  }
};

/// Validates dim and index against self (and src); false after failing.
bool check_gather_scatter(KernelContext& ctx, const Tensor& self, int64_t dim,
                          const Tensor& index, const Tensor* src, int32_t* d) {
  if (!check_supported(ctx, self, "self") || !check_index_dtype(ctx, index, "index")) {
    return false;
  }
  if (src != nullptr && !check_dtype(ctx, *src, "src", self.dtype)) return false;
  const Dims s(self), i(index);
  if (!normalize_dim(ctx, dim, self.dim, "dim", d)) return false;
  if (index.numel == 0) return true;
  if (i.dim != s.dim) {
    ctx.fail(Error::InvalidArgument, "index: has shape %s but self has shape %s (ranks differ)",
             ShapeStr(index.shape()).c_str(), ShapeStr(self.shape()).c_str());
    return false;
  }
  for (int32_t k = 0; k < i.dim; ++k) {
    if ((k != *d && i.sizes[k] > s.sizes[k]) ||
        (src != nullptr && i.sizes[k] > Dims(*src).sizes[k])) {
      ctx.fail(Error::InvalidArgument,
               "index: shape %s exceeds self's shape %s (outside dim %d) or src's shape %s",
               ShapeStr(index.shape()).c_str(), ShapeStr(self.shape()).c_str(), *d,
               src ? ShapeStr(src->shape()).c_str() : "-");
      return false;
    }
  }
  if (src != nullptr && Dims(*src).dim != i.dim) {
    ctx.fail(Error::InvalidArgument, "src: has shape %s but index has shape %s (ranks differ)",
             ShapeStr(src->shape()).c_str(), ShapeStr(index.shape()).c_str());
    return false;
  }
  return true;
}

/// Calls f(target_offset, index_pos_offset_in_src, idx) for each index
/// element, where target is `target`'s element at idx with idx[dim] replaced
/// by the index value. False after failing on an out-of-range index.
template <typename F>
bool for_each_target(KernelContext& ctx, const Tensor& index, const Dims& target, int32_t dim,
                     const char* name, F&& f) {
  const Dims i(index);
  bool ok = true;
  for_each_index({i.sizes, static_cast<size_t>(i.dim)}, [&](const int32_t* idx) {
    int64_t v = 0;
    if (!checked_index(ctx, load_index(index, offset_of(idx, i.strides, i.dim)),
                       target.sizes[dim], dim, false, name, &v)) {
      ok = false;
      return false;
    }
    int64_t off = 0;
    for (int32_t d = 0; d < target.dim; ++d) off += (d == dim ? v : idx[d]) * target.strides[d];
    f(off, idx);
    return true;
  });
  return ok;
}

/// max (or min) of a and b; NaN wins, as in PyTorch.
template <typename CT>
inline CT pick_max(CT a, CT b, bool max) {
  if constexpr (std::is_floating_point_v<CT>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return (max ? a >= b : a <= b) ? a : b;
}

enum class Reduce { kAssign, kSum, kProd, kMean, kMax, kMin };

/// out = self, then scatters src (or `value` when src is null) with `r`.
void scatter_impl(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                  const Tensor* src, const EValue* value, Reduce r, bool include_self,
                  Tensor& out) {
  if (!check_dtype(ctx, out, "out", self.dtype)) return;
  int32_t d = 0;
  if (!check_gather_scatter(ctx, self, dim, index, src, &d)) return;
  if (!resize_out(ctx, out, self.shape())) return;
  if (out.numel == 0) return;
  if (out.data != self.data) strided_copy(self, self.strides, out);
  if (index.numel == 0) return;
  const Dims o(out);
  const Dims sd = src ? Dims(*src) : Dims(index);
  const bool ok = dispatch_dtype<kAllTypes>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    S* op = out.data_ptr<S>();
    const S* sp = src ? src->data_ptr<S>() : nullptr;
    S fill{};
    if (value != nullptr) {
      fill = (std::is_integral_v<S> && !value->is_double())
                 ? static_cast<S>(value->scalar_as_int())
                 : convert<S>(scalar_as<CT>(*value));
    }
    auto src_at = [&](const int32_t* idx) {
      return sp ? sp[offset_of(idx, sd.strides, sd.dim)] : fill;
    };
    if (r == Reduce::kAssign) {
      (void)for_each_target(ctx, index, o, d, "index",
                            [&](int64_t off, const int32_t* idx) { op[off] = src_at(idx); });
      return;
    }
    if (!include_self) {
      CT identity{};
      if (r == Reduce::kProd) identity = CT(1);
      if (r == Reduce::kMax) {
        identity = std::numeric_limits<CT>::has_infinity ? -std::numeric_limits<CT>::infinity()
                                                         : std::numeric_limits<CT>::lowest();
      }
      if (r == Reduce::kMin) {
        identity = std::numeric_limits<CT>::has_infinity ? std::numeric_limits<CT>::infinity()
                                                         : std::numeric_limits<CT>::max();
      }
      if (!for_each_target(ctx, index, o, d, "index", [&](int64_t off, const int32_t*) {
            op[off] = convert<S>(identity);
          })) {
        return;
      }
    }
    (void)for_each_target(ctx, index, o, d, "index", [&](int64_t off, const int32_t* idx) {
      const CT a = convert<CT>(op[off]);
      const CT b = convert<CT>(src_at(idx));
      CT res = a;
      switch (r) {
        case Reduce::kSum:
        case Reduce::kMean: res = wrap_add(a, b); break;
        case Reduce::kProd: res = wrap_mul(a, b); break;
        case Reduce::kMax: res = pick_max<CT>(a, b, true); break;
        case Reduce::kMin: res = pick_max<CT>(a, b, false); break;
        default: break;
      }
      op[off] = convert<S>(res);
    });
    if (r != Reduce::kMean || ctx.failure() != Error::Ok) return;
    if constexpr (!kIsBoolStorage<S>) {
      // Targets collide only within one fiber along `d` (other coordinates
      // equal): count hits per target fiber by fiber, a block of targets at
      // a time, without scratch memory beyond the stack.
      const Dims i(index);
      constexpr int32_t kBlock = 256;
      int32_t outer[kTensorMaxDim];
      for (int32_t k = 0; k < i.dim; ++k) outer[k] = k == d ? 1 : i.sizes[k];
      for_each_index({outer, static_cast<size_t>(i.dim)}, [&](const int32_t* base) {
        int32_t idx[kTensorMaxDim];
        for (int32_t k = 0; k < i.dim; ++k) idx[k] = base[k];
        for (int32_t m0 = 0; m0 < o.sizes[d]; m0 += kBlock) {
          int32_t count[kBlock] = {};
          bool any = false;
          for (int32_t j = 0; j < i.sizes[d]; ++j) {
            idx[d] = j;
            const int64_t v = load_index(index, offset_of(idx, i.strides, i.dim)) - m0;
            if (v >= 0 && v < kBlock) {
              ++count[v];
              any = true;
            }
          }
          if (!any) continue;
          for (int32_t m = 0; m < kBlock && m0 + m < o.sizes[d]; ++m) {
            const int64_t n = count[m] + (include_self ? 1 : 0);
            if (count[m] == 0 || n == 0) continue;
            idx[d] = m0 + m;
            S& t = op[offset_of(idx, o.strides, o.dim)];
            if constexpr (kIsFloatStorage<S>) {
              t = convert<S>(convert<CT>(t) / static_cast<CT>(n));
            } else {
              const int64_t x = static_cast<int64_t>(t);
              int64_t q = x / n;
              if ((x % n != 0) && ((x < 0) != (n < 0))) --q;  // Floor division.
              t = static_cast<S>(q);
            }
          }
        }
        return true;
      });
    }
  });
  if (!ok) fail_dtype(ctx, "self", self.dtype);
}

}  // namespace

void gather_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                bool sparse_grad, Tensor& out) {
  (void)sparse_grad;
  if (!check_dtype(ctx, out, "out", self.dtype)) return;
  int32_t d = 0;
  if (!check_gather_scatter(ctx, self, dim, index, nullptr, &d)) return;
  if (!resize_out(ctx, out, index.shape())) return;
  if (out.numel == 0) return;
  const Dims s(self), o(out);
  dispatch_element_size(self.dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* sp = self.data_ptr<U>();
    U* op = out.data_ptr<U>();
    (void)for_each_target(ctx, index, s, d, "index", [&](int64_t soff, const int32_t* idx) {
      op[offset_of(idx, o.strides, o.dim)] = sp[soff];
    });
  });
}

void scatter_src_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                     const Tensor& src, Tensor& out) {
  scatter_impl(ctx, self, dim, index, &src, nullptr, Reduce::kAssign, true, out);
}

void scatter_value_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                       const EValue& value, Tensor& out) {
  scatter_impl(ctx, self, dim, index, nullptr, &value, Reduce::kAssign, true, out);
}

void scatter_add_out(KernelContext& ctx, const Tensor& self, int64_t dim, const Tensor& index,
                     const Tensor& src, Tensor& out) {
  scatter_impl(ctx, self, dim, index, &src, nullptr, Reduce::kSum, true, out);
}

void scatter_reduce_two_out(KernelContext& ctx, const Tensor& self, int64_t dim,
                            const Tensor& index, const Tensor& src, std::string_view reduce,
                            bool include_self, Tensor& out) {
  Reduce r;
  if (reduce == "sum") r = Reduce::kSum;
  else if (reduce == "prod") r = Reduce::kProd;
  else if (reduce == "mean") r = Reduce::kMean;
  else if (reduce == "amax") r = Reduce::kMax;
  else if (reduce == "amin") r = Reduce::kMin;
  else {
    ctx.fail(Error::InvalidArgument,
             "reduce: '%.*s' is not one of sum, prod, mean, amax, amin",
             static_cast<int>(reduce.size()), reduce.data());
    return;
  }
  EMBER_KERNEL_CHECK(ctx, !(r == Reduce::kMean && self.dtype == ScalarType::Bool),
                     "self: reduce 'mean' does not support dtype bool");
  scatter_impl(ctx, self, dim, index, &src, nullptr, r, include_self, out);
}

}  // namespace ember::kernels::portable
