// Histograms with equal-width bins, as torch.histogram(self, bins: int) and
// torch.histogramdd(self, bins: list of int) compute them:
//
// aten::histogram.bin_ct_out(Tensor self, int bins=100, *, float[]? range=None,
//     Tensor? weight=None, bool density=False, Tensor(a!) hist, Tensor(b!) bin_edges)
//   self's elements as one axis: hist [bins], bin_edges [bins + 1].
// aten::_histogramdd_bin_edges.out(Tensor self, int[] bins, *, float[]? range=None,
//     Tensor? weight=None, bool density=False, Tensor(a!)[] out) -> ()
//   self [..., D]: out[d] [bins[d] + 1], the edges along coordinate d.
// aten::_histogramdd_from_bin_cts.out(Tensor self, int[] bins, *, float[]? range=None,
//     Tensor? weight=None, bool density=False, Tensor(a!) out) -> Tensor(a!)
//   self [..., D]: out [bins[0], ..., bins[D-1]].
//
// As eager: each coordinate's range is range[2d], range[2d + 1] or (without
// one) the min and max of self's values in it (0, 1 for an empty self); an
// empty range [v, v] becomes [v - 0.5, v + 0.5]; a non-finite or reversed one
// is an error. Edges are linspace(left, right, bins + 1) in self's dtype
// (the first half start + step·i, the second end - step·(n - 1 - i)). A
// point outside [first edge, last edge] (or NaN) is not counted; otherwise
// its bin is trunc((x - left) · bins / (right - left)), corrected by a local
// search among the neighbouring edges (the bin whose edges hold x, numpy's
// rule), the last edge going into the last bin. hist adds weight (or 1) in
// self's dtype; density divides by the total, then by each bin's widths.
// Floating dtypes; weight has self's dtype and self's shape without the last
// dim (histogramdd) or self's shape (histogram).
#include <algorithm>
#include <cmath>

#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"
#include "kernels/generated/functions/portable/op_histogram.h"

namespace ember::kernels::portable {
namespace {

constexpr int kMaxCoords = kTensorMaxDim;

// EMBER_KERNEL_CHECK for the helpers that return false after failing.
#define CHECK_OR_FALSE(ctx, cond, ...)                          \
  do {                                                          \
    if (!(cond)) {                                              \
      (ctx).fail(::ember::Error::InvalidArgument, __VA_ARGS__); \
      return false;                                             \
    }                                                           \
  } while (0)

/// Storage offset of logical (row-major) element `i` of `t`.
int64_t element_offset(const Tensor& t, int64_t i) {
  int64_t off = 0;
  for (int32_t d = t.dim - 1; d >= 0; --d) {
    off += (i % t.sizes[d]) * t.strides[d];
    i /= t.sizes[d];
  }
  return off;
}

struct Layout {
  int64_t points = 0;  // M rows of D coordinates
  int32_t coords = 1;
  bool flat = false;  // histogram: every element is a point of 1 coordinate
};

template <typename S>
S value_at(const Tensor& self, const Layout& l, int64_t p, int32_t d) {
  const S* x = self.data_ptr<const S>();
  return x[element_offset(self, l.flat ? p : p * l.coords + d)];
}

/// The outer edges of each coordinate, in self's dtype's compute type; false
/// after failing.
template <typename S>
bool outer_edges(KernelContext& ctx, const Tensor& self, const Layout& l,
                 std::optional<DoubleSpan> range, double* left, double* right) {
  using CT = compute_t<S>;
  if (range.has_value()) {
    CHECK_OR_FALSE(ctx, static_cast<int64_t>(range->size()) == 2 * l.coords,
                       "range: expected %d values (min, max per coordinate), got %zu",
                       2 * l.coords, range->size());
  }
  for (int32_t d = 0; d < l.coords; ++d) {
    double lo = 0, hi = 1;  // an empty self without a range: [0, 1], as eager
    if (range.has_value()) {
      lo = (*range)[2 * d];
      hi = (*range)[2 * d + 1];
    } else if (l.points > 0) {
      CT mn = convert<CT>(value_at<S>(self, l, 0, d)), mx = mn;
      bool nan = mn != mn;
      for (int64_t p = 1; p < l.points; ++p) {
        const CT v = convert<CT>(value_at<S>(self, l, p, d));
        nan = nan || v != v;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
      }
      lo = nan ? NAN : static_cast<double>(mn);
      hi = nan ? NAN : static_cast<double>(mx);
    }
    CHECK_OR_FALSE(ctx, std::isfinite(lo) && std::isfinite(hi),
                       "range: coordinate %d's range [%g, %g] is not finite", d, lo, hi);
    CHECK_OR_FALSE(ctx, lo <= hi, "range: coordinate %d's min %g is larger than its max %g",
                       d, lo, hi);
    if (lo == hi) {
      lo -= 0.5;
      hi += 0.5;
    }
    left[d] = lo;
    right[d] = hi;
  }
  return true;
}

/// linspace(lo, hi, n) into `edges` (1-D, S), as eager's kernel.
template <typename S>
void write_edges(double lo, double hi, int64_t n, Tensor& edges) {
  using CT = compute_t<S>;
  S* e = edges.data_ptr<S>();
  const int64_t st = edges.strides[0];
  const CT start = convert<CT>(convert<S>(lo)), end = convert<CT>(convert<S>(hi));
  if (n == 1) {
    e[0] = convert<S>(start);
    return;
  }
  const CT step = convert<CT>(convert<S>((end - start) / static_cast<CT>(n - 1)));
  const int64_t halfway = n / 2;
  for (int64_t i = 0; i < n; ++i) {
    const CT v = i < halfway ? start + step * static_cast<CT>(i)
                             : end - step * static_cast<CT>(n - i - 1);
    e[i * st] = convert<S>(v);
  }
}

/// The bin of `x` along one coordinate given its edges (S values), or -1.
template <typename S>
int64_t bin_of(compute_t<S> x, const S* edges, int64_t st, int64_t nedges) {
  using CT = compute_t<S>;
  auto r = [](CT v) { return convert<CT>(convert<S>(v)); };
  const CT left = convert<CT>(edges[0]), right = convert<CT>(edges[(nedges - 1) * st]);
  if (!(x >= left && x <= right)) return -1;
  int64_t pos =
      static_cast<int64_t>(r(r(r(x - left) * static_cast<CT>(nedges - 1)) / r(right - left)));
  // numpy's rule: the bin whose edges hold x, searched next to the estimate.
  const int64_t lo = std::max<int64_t>(0, pos - 1), hi = std::min<int64_t>(pos + 2, nedges);
  int64_t k = lo;
  while (k < hi && !(x < convert<CT>(edges[k * st]))) ++k;  // upper_bound
  pos = k - 1;
  if (pos == nedges - 1) pos -= 1;
  return pos;
}

/// Counts into `hist` (shape bins, S) using the edges tensors.
template <typename S>
void count(KernelContext& ctx, const Tensor& self, const Layout& l, const Tensor* weight,
           const Tensor* const* edges, bool density, Tensor& hist) {
  using CT = compute_t<S>;
  S* h = hist.data_ptr<S>();
  for (int64_t i = 0; i < hist.numel; ++i) h[i] = convert<S>(CT(0));  // hist is fresh, dense
  const S* w = weight ? weight->data_ptr<const S>() : nullptr;
  for (int64_t p = 0; p < l.points; ++p) {
    int64_t at = 0;
    bool in = true;
    for (int32_t d = 0; d < l.coords && in; ++d) {
      const int64_t nedges = edges[d]->sizes[0];
      const int64_t b = bin_of<S>(convert<CT>(value_at<S>(self, l, p, d)),
                                  edges[d]->data_ptr<const S>(), edges[d]->strides[0], nedges);
      in = b >= 0;
      at += b * hist.strides[d];
    }
    if (!in) continue;
    const CT add = w ? convert<CT>(w[element_offset(*weight, p)]) : CT(1);
    h[at] = convert<S>(static_cast<CT>(convert<CT>(h[at]) + add));
  }
  if (!density) return;
  CT total = 0;
  for (int64_t i = 0; i < hist.numel; ++i) total += convert<CT>(h[i]);
  for (int64_t i = 0; i < hist.numel; ++i) {
    h[i] = convert<S>(static_cast<CT>(convert<CT>(h[i]) / total));
  }
  for (int32_t d = 0; d < l.coords; ++d) {
    const S* e = edges[d]->data_ptr<const S>();
    const int64_t est = edges[d]->strides[0];
    for (int64_t i = 0; i < hist.numel; ++i) {
      const int64_t b = (i / hist.strides[d]) % hist.sizes[d];
      const CT width =
          convert<CT>(convert<S>(convert<CT>(e[(b + 1) * est]) - convert<CT>(e[b * est])));
      h[i] = convert<S>(static_cast<CT>(convert<CT>(h[i]) / width));
    }
  }
  (void)ctx;
}

bool layout_of(KernelContext& ctx, const Tensor& self, const Tensor* weight, bool flat,
               Layout* l) {
  if (!is_floating_type(self.dtype)) {
    fail_dtype(ctx, "self", self.dtype);
    return false;
  }
  l->flat = flat;
  if (flat) {
    l->points = self.numel;
    l->coords = 1;
  } else {
    CHECK_OR_FALSE(ctx, self.dim >= 1 && self.sizes[self.dim - 1] <= kMaxCoords,
                       "self: expected [..., D] with D <= %d coordinates, got shape %s",
                       kMaxCoords, ShapeStr(self.shape()).c_str());
    l->coords = self.sizes[self.dim - 1];
    l->points = l->coords > 0 ? self.numel / l->coords : 0;
  }
  if (weight != nullptr) {
    if (!check_dtype(ctx, *weight, "weight", self.dtype)) return false;
    CHECK_OR_FALSE(ctx, weight->numel == l->points,
                       "weight: expected one weight per point (%lld), got shape %s",
                       static_cast<long long>(l->points), ShapeStr(weight->shape()).c_str());
  }
  return true;
}

bool check_bins(KernelContext& ctx, IntSpan bins, int32_t coords) {
  CHECK_OR_FALSE(ctx, static_cast<int64_t>(bins.size()) == coords,
                     "bins: expected %d bin counts (one per coordinate), got %zu", coords,
                     bins.size());
  for (size_t d = 0; d < bins.size(); ++d) {
    CHECK_OR_FALSE(ctx, bins[d] > 0 && bins[d] < INT32_MAX,
                       "bins: coordinate %zu needs a positive bin count, got %lld", d,
                       static_cast<long long>(bins[d]));
  }
  return true;
}

/// Edges into `edges[d]` (resized to bins[d] + 1) for every coordinate.
bool make_edges(KernelContext& ctx, const Tensor& self, const Layout& l, IntSpan bins,
                std::optional<DoubleSpan> range, Tensor* const* edges) {
  double left[kMaxCoords], right[kMaxCoords];
  bool ok = true;
  (void)dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    if (!outer_edges<S>(ctx, self, l, range, left, right)) {
      ok = false;
      return;
    }
    for (int32_t d = 0; d < l.coords && ok; ++d) {
      if (!check_dtype(ctx, *edges[d], "bin_edges", self.dtype)) {
        ok = false;
        return;
      }
      const int32_t n[1] = {static_cast<int32_t>(bins[d] + 1)};
      if (!resize_out(ctx, *edges[d], n)) {
        ok = false;
        return;
      }
      write_edges<S>(left[d], right[d], bins[d] + 1, *edges[d]);
    }
  });
  return ok;
}

#undef CHECK_OR_FALSE

}  // namespace

void histogram_bin_ct_out(KernelContext& ctx, const Tensor& self, int64_t bins,
                          std::optional<DoubleSpan> range, const Tensor* weight, bool density,
                          Tensor& hist, Tensor& bin_edges) {
  Layout l;
  if (!layout_of(ctx, self, weight, true, &l)) return;
  const int64_t b[1] = {bins};
  if (!check_bins(ctx, b, 1) || !check_dtype(ctx, hist, "hist", self.dtype)) return;
  EMBER_KERNEL_CHECK(ctx, hist.dim == 1 && bin_edges.dim == 1,
                     "hist, bin_edges: expected 1-D outs, got shapes %s and %s",
                     ShapeStr(hist.shape()).c_str(), ShapeStr(bin_edges.shape()).c_str());
  Tensor* edges[1] = {&bin_edges};
  if (!make_edges(ctx, self, l, b, range, edges)) return;
  const int32_t hs[1] = {static_cast<int32_t>(bins)};
  if (!resize_out(ctx, hist, hs)) return;
  const Tensor* ce[1] = {&bin_edges};
  (void)dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    count<typename decltype(tag)::type>(ctx, self, l, weight, ce, density, hist);
  });
}

void _histogramdd_bin_edges_out(KernelContext& ctx, const Tensor& self, IntSpan bins,
                                std::optional<DoubleSpan> range, const Tensor* weight,
                                bool density, TensorList out) {
  (void)density;
  Layout l;
  if (!layout_of(ctx, self, weight, false, &l) || !check_bins(ctx, bins, l.coords)) return;
  EMBER_KERNEL_CHECK(ctx, static_cast<int64_t>(out.size()) == l.coords,
                     "out: expected %d tensors (one per coordinate), got %zu", l.coords,
                     out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    EMBER_KERNEL_CHECK(ctx, out[d] != nullptr && out[d]->dim == 1,
                       "out: tensor %zu must be 1-D", d);
  }
  (void)make_edges(ctx, self, l, bins, range, out.data());
}

void _histogramdd_from_bin_cts_out(KernelContext& ctx, const Tensor& self, IntSpan bins,
                                   std::optional<DoubleSpan> range, const Tensor* weight,
                                   bool density, Tensor& out) {
  Layout l;
  if (!layout_of(ctx, self, weight, false, &l) || !check_bins(ctx, bins, l.coords) ||
      !check_dtype(ctx, out, "out", self.dtype)) {
    return;
  }
  int32_t shape[kTensorMaxDim];
  for (int32_t d = 0; d < l.coords; ++d) shape[d] = static_cast<int32_t>(bins[d]);
  if (!resize_out(ctx, out, {shape, static_cast<size_t>(l.coords)})) return;
  // No tensor holds the edges here (the kernel has no heap): each is computed
  // when needed, with the same formula write_edges uses.
  double left[kMaxCoords], right[kMaxCoords];
  (void)dispatch_dtype<kFloating>(self.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using CT = compute_t<S>;
    if (!outer_edges<S>(ctx, self, l, range, left, right)) return;
    // Each coordinate's edges as eager's linspace: edge(i) computed on demand.
    auto edge = [&](int32_t d, int64_t i) -> CT {
      const int64_t n = bins[d] + 1;
      const CT start = convert<CT>(convert<S>(left[d])), end = convert<CT>(convert<S>(right[d]));
      const CT step = convert<CT>(convert<S>((end - start) / static_cast<CT>(n - 1)));
      const CT v = i < n / 2 ? start + step * static_cast<CT>(i)
                             : end - step * static_cast<CT>(n - i - 1);
      return convert<CT>(convert<S>(v));
    };
    auto r = [](CT v) { return convert<CT>(convert<S>(v)); };
    S* h = out.data_ptr<S>();
    // out is dense (fresh); its strides give each coordinate's step.
    for (int64_t i = 0; i < out.numel; ++i) h[i] = convert<S>(CT(0));
    const S* w = weight ? weight->data_ptr<const S>() : nullptr;
    for (int64_t p = 0; p < l.points; ++p) {
      int64_t at = 0;
      bool in = true;
      for (int32_t d = 0; d < l.coords && in; ++d) {
        const int64_t nedges = bins[d] + 1;
        const CT x = convert<CT>(value_at<S>(self, l, p, d));
        const CT lo_e = edge(d, 0), hi_e = edge(d, nedges - 1);
        if (!(x >= lo_e && x <= hi_e)) {
          in = false;
          break;
        }
        int64_t pos = static_cast<int64_t>(
            r(r(r(x - lo_e) * static_cast<CT>(nedges - 1)) / r(hi_e - lo_e)));
        const int64_t lo = std::max<int64_t>(0, pos - 1);
        const int64_t hi = std::min<int64_t>(pos + 2, nedges);
        int64_t k = lo;
        while (k < hi && !(x < edge(d, k))) ++k;
        pos = k - 1;
        if (pos == nedges - 1) pos -= 1;
        at += pos * out.strides[d];
      }
      if (!in) continue;
      const CT add = w ? convert<CT>(w[element_offset(*weight, p)]) : CT(1);
      h[at] = convert<S>(static_cast<CT>(convert<CT>(h[at]) + add));
    }
    if (!density) return;
    CT total = 0;
    for (int64_t i = 0; i < out.numel; ++i) total += convert<CT>(h[i]);
    for (int64_t i = 0; i < out.numel; ++i) {
      h[i] = convert<S>(static_cast<CT>(convert<CT>(h[i]) / total));
    }
    for (int32_t d = 0; d < l.coords; ++d) {
      for (int64_t i = 0; i < out.numel; ++i) {
        const int64_t b = (i / out.strides[d]) % out.sizes[d];
        const CT width = r(edge(d, b + 1) - edge(d, b));
        h[i] = convert<S>(static_cast<CT>(convert<CT>(h[i]) / width));
      }
    }
  });
}

}  // namespace ember::kernels::portable
