// aten::_embedding_bag.out(Tensor weight, Tensor indices, Tensor offsets,
//     bool scale_grad_by_freq=False, int mode=0, bool sparse=False,
//     Tensor? per_sample_weights=None, bool include_last_offset=False, int padding_idx=-1,
//     *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2, Tensor(d!) out3)
// aten::_embedding_bag_forward_only.out(... the same ...): what
//     nn.functional.embedding_bag exports to without gradients; the same results.
//
// 1-D indices split into bags by offsets: bag b holds indices
// [offsets[b], offsets[b + 1]); without include_last_offset the last bag runs
// to the end of indices (with it, PyTorch requires the last offset to be the
// number of indices; eager's results for other values vary by dtype).
// Modes 0 sum (optionally weighted by per_sample_weights), 1 mean, 2 max;
// entries equal to padding_idx (>= 0) are skipped; an empty bag gives zeros.
// The other outputs follow eager's CPU kernel, in indices' dtype: out1
// offset2bag [n] (in sum mode it may be empty, as eager's fast path leaves
// it); out2 bag_size [bags] (zeros in sum mode); out3 max_indices: [bags, D]
// row of each maximum in max mode (0 for an empty bag), else [bags]
// (bag_size in mean mode, zeros in sum). Accumulates in float for
// float16/bfloat16.
#include "kernels/generated/functions/portable/op_embedding_bag.h"
#include "kernels/portable/util/binary.h"
#include "kernels/portable/util/view.h"

namespace ember::kernels::portable {
namespace {

struct BagArgs {
  const Tensor* weight;
  const Tensor* indices;
  const Tensor* offsets;
  const Tensor* per_sample_weights;  // Null when absent.
  int64_t mode;
  int64_t padding_idx;
  int64_t bags;
  bool include_last_offset;
  Tensor* out[4];
};

// Start of bag b in indices.
int64_t bag_start(const BagArgs& a, int64_t b) {
  return load_index(*a.offsets, b * a.offsets->strides[0]);
}

void store_index(Tensor& t, int64_t off, int64_t v) {
  if (t.dtype == ScalarType::Long) {
    t.data_ptr<int64_t>()[off] = v;
  } else {
    t.data_ptr<int32_t>()[off] = static_cast<int32_t>(v);
  }
}

template <typename S>
void embedding_bag(const BagArgs& a) {
  using CT = compute_t<S>;
  const Tensor& w = *a.weight;
  const int64_t n = a.indices->sizes[0];
  const int64_t dims = w.sizes[1];
  const S* wp = w.data_ptr<const S>();
  const S* psw = a.per_sample_weights ? a.per_sample_weights->data_ptr<const S>() : nullptr;
  S* o0 = a.out[0]->data_ptr<S>();
  Tensor& o1 = *a.out[1];
  Tensor& o2 = *a.out[2];
  Tensor& o3 = *a.out[3];
  const int64_t* os0 = a.out[0]->strides;
  for (int64_t b = 0; b < a.bags; ++b) {
    const int64_t lo = bag_start(a, b);
    const int64_t hi = b + 1 < a.bags || a.include_last_offset ? bag_start(a, b + 1) : n;
    int64_t size = 0;
    for (int64_t i = lo; i < hi; ++i) {
      size += load_index(*a.indices, i * a.indices->strides[0]) != a.padding_idx ? 1 : 0;
    }
    for (int64_t d = 0; d < dims; ++d) {
      CT acc = CT(0);
      int64_t arg = -1;
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t row = load_index(*a.indices, i * a.indices->strides[0]);
        if (row == a.padding_idx) continue;
        const CT v = convert<CT>(wp[row * w.strides[0] + d * w.strides[1]]);
        if (a.mode == 2) {
          if (arg < 0 || v > acc) {
            acc = v;
            arg = row;
          }
        } else {
          acc += psw != nullptr
                     ? v * convert<CT>(psw[i * a.per_sample_weights->strides[0]])
                     : v;
        }
      }
      if (a.mode == 1 && size > 0) acc /= static_cast<CT>(size);
      o0[b * os0[0] + d * os0[1]] = convert<S>(acc);
      if (a.mode == 2) store_index(o3, b * o3.strides[0] + d * o3.strides[1], arg < 0 ? 0 : arg);
    }
    if (a.mode == 0) size = 0;
    store_index(o2, b * o2.strides[0], size);
    if (a.mode != 2) store_index(o3, b * o3.strides[0], size);
    if (o1.numel > 0) {
      for (int64_t i = lo; i < hi; ++i) store_index(o1, i * o1.strides[0], b);
    }
  }
}

}  // namespace

// scale_grad_by_freq and sparse only matter for the gradient.
void _embedding_bag_out(KernelContext& ctx, const Tensor& weight, const Tensor& indices,
                        const Tensor& offsets, bool, int64_t mode, bool,
                        const Tensor* per_sample_weights, bool include_last_offset,
                        int64_t padding_idx, Tensor& out0, Tensor& out1, Tensor& out2,
                        Tensor& out3) {
  BagArgs a{};
  a.mode = mode;
  a.padding_idx = padding_idx;
  a.out[0] = &out0;
  a.out[1] = &out1;
  a.out[2] = &out2;
  a.out[3] = &out3;
  const char* names[4] = {"out0", "out1", "out2", "out3"};
  EMBER_KERNEL_CHECK(ctx, a.mode >= 0 && a.mode <= 2,
                     "mode: expected 0 (sum), 1 (mean) or 2 (max), got %lld",
                     static_cast<long long>(a.mode));
  EMBER_KERNEL_CHECK(ctx, weight.dim == 2, "weight: expected 2-D, got shape %s",
                     ShapeStr(weight.shape()).c_str());
  if (!is_floating_type(weight.dtype)) {
    fail_dtype(ctx, "weight", weight.dtype);
    return;
  }
  EMBER_KERNEL_CHECK(ctx, indices.dim == 1, "indices: expected 1-D, got shape %s",
                     ShapeStr(indices.shape()).c_str());
  EMBER_KERNEL_CHECK(ctx, offsets.dim == 1, "offsets: expected 1-D, got shape %s",
                     ShapeStr(offsets.shape()).c_str());
  if (!check_index_dtype(ctx, indices, "indices") ||
      !check_dtype(ctx, offsets, "offsets", indices.dtype) ||
      !check_dtype(ctx, *a.out[0], "out0", weight.dtype)) {
    return;
  }
  for (int k = 1; k < 4; ++k) {
    if (!check_dtype(ctx, *a.out[k], names[k], indices.dtype)) return;
  }
  if (per_sample_weights != nullptr) {
    EMBER_KERNEL_CHECK(ctx, a.mode == 0,
                       "per_sample_weights: only supported with mode 0 (sum), got mode %lld",
                       static_cast<long long>(a.mode));
    EMBER_KERNEL_CHECK(ctx,
                       per_sample_weights->dim == 1 &&
                           per_sample_weights->sizes[0] == indices.sizes[0],
                       "per_sample_weights: expected shape [%d], got %s", indices.sizes[0],
                       ShapeStr(per_sample_weights->shape()).c_str());
    if (!check_dtype(ctx, *per_sample_weights, "per_sample_weights", weight.dtype)) return;
  }
  const int64_t n = indices.sizes[0];
  const int32_t rows = weight.sizes[0];
  a.bags = offsets.sizes[0] - (include_last_offset ? 1 : 0);
  EMBER_KERNEL_CHECK(ctx, a.bags >= 0, "offsets: include_last_offset needs at least one offset");
  a.weight = &weight;
  a.indices = &indices;
  a.offsets = &offsets;
  a.per_sample_weights = per_sample_weights;
  a.include_last_offset = include_last_offset;
  // Validate everything first so a failure leaves the outs untouched.
  int64_t prev = 0;
  for (int64_t b = 0; b < offsets.sizes[0]; ++b) {
    const int64_t start = bag_start(a, b);
    EMBER_KERNEL_CHECK(ctx, start >= prev && start <= n && (b > 0 || start == 0),
                       "offsets: entry %lld (%lld) must start at 0, not decrease, and stay "
                       "within %lld indices",
                       static_cast<long long>(b), static_cast<long long>(start),
                       static_cast<long long>(n));
    prev = start;
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = 0;
    if (!checked_index(ctx, load_index(indices, i * indices.strides[0]), rows, 0, false,
                       "indices", &v)) {
      return;
    }
  }
  const int32_t bags = static_cast<int32_t>(a.bags);
  const int32_t s0[2] = {bags, weight.sizes[1]};
  // Eager's sum mode leaves offset2bag empty on its fast path only (float
  // types, no weights, no padding_idx): keep whichever size the program planned.
  const int32_t s1[1] = {a.mode == 0 && a.out[1]->numel == 0 ? 0 : static_cast<int32_t>(n)};
  const int32_t s2[1] = {bags};
  if (!resize_out(ctx, *a.out[0], s0) || !resize_out(ctx, *a.out[1], s1) ||
      !resize_out(ctx, *a.out[2], s2) ||
      !resize_out(ctx, *a.out[3], a.mode == 2 ? std::span<const int32_t>(s0)
                                              : std::span<const int32_t>(s2))) {
    return;
  }
  (void)dispatch_dtype<kFloating>(weight.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    embedding_bag<S>(a);
  });
}

void _embedding_bag_forward_only_out(KernelContext& ctx, const Tensor& weight,
                                     const Tensor& indices, const Tensor& offsets,
                                     bool scale_grad_by_freq, int64_t mode, bool sparse,
                                     const Tensor* per_sample_weights, bool include_last_offset,
                                     int64_t padding_idx, Tensor& out0, Tensor& out1,
                                     Tensor& out2, Tensor& out3) {
  _embedding_bag_out(ctx, weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                     per_sample_weights, include_last_offset, padding_idx, out0, out1, out2,
                     out3);
}

}  // namespace ember::kernels::portable
