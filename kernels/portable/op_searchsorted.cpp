// aten::searchsorted.Tensor_out(Tensor sorted_sequence, Tensor self, *, bool out_int32=False,
//     bool right=False, str? side=None, Tensor? sorter=None, Tensor(a!) out)
// aten::bucketize.Tensor_out(Tensor self, Tensor boundaries, *, bool out_int32=False,
//     bool right=False, Tensor(a!) out)
//
// For each value, the insertion index into a sorted row: the first position
// whose element is >= the value (left), or > it (right; side="right" says the
// same). bucketize searches one 1-D `boundaries`; searchsorted a 1-D sequence
// for every value, or, N-D, row r (its leading dims equal self's) for the
// values of self's row r; `sorter` (int64, the sequence's shape) gives the
// sorted order of an unsorted sequence. The comparisons are eager's
// (!(element >= value) moves right), so a NaN value lands at the end. Values
// and sequence share a real dtype; out is int64 (int32 with out_int32).
#include <string_view>

#include "kernels/generated/functions/portable/op_searchsorted.h"
#include "kernels/portable/util/args.h"
#include "kernels/portable/util/binary.h"

namespace ember::kernels::portable {
namespace {

struct Search {
  const Tensor* seq = nullptr;
  const Tensor* sorter = nullptr;  // Null: seq is sorted.
  bool right = false;
  bool per_row = false;  // seq is N-D: row r of seq serves row r of the values.
};

template <typename S>
int64_t insertion_index(const S* seq, int64_t seq_step, const int64_t* order, int64_t order_step,
                        int64_t len, S value, bool right) {
  int64_t lo = 0, hi = len;
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    const int64_t at = order != nullptr ? order[mid * order_step] : mid;
    const S e = seq[at * seq_step];
    if (right ? !(e > value) : !(e >= value)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

template <typename S>
void run_search(const Search& s, const Tensor& values, Tensor& out) {
  const Tensor& seq = *s.seq;
  const int32_t last = seq.dim - 1;
  const int64_t len = seq.sizes[last];
  const int64_t seq_step = seq.strides[last];
  const int64_t order_step = s.sorter != nullptr ? s.sorter->strides[last] : 0;
  const S* vbase = values.data_ptr<const S>();
  const S* sbase = seq.data_ptr<const S>();
  const int64_t* obase = s.sorter != nullptr ? s.sorter->data_ptr<const int64_t>() : nullptr;
  int64_t coord[kTensorMaxDim] = {};
  for (int64_t i = 0; i < values.numel; ++i) {
    int64_t v_off = 0, o_off = 0, row_seq = 0, row_order = 0;
    for (int32_t d = 0; d < values.dim; ++d) {
      v_off += coord[d] * values.strides[d];
      o_off += coord[d] * out.strides[d];
      if (s.per_row && d < last) {
        row_seq += coord[d] * seq.strides[d];
        if (s.sorter != nullptr) row_order += coord[d] * s.sorter->strides[d];
      }
    }
    const int64_t index =
        insertion_index<S>(sbase + row_seq, seq_step, obase != nullptr ? obase + row_order : nullptr,
                           order_step, len, vbase[v_off], s.right);
    if (out.dtype == ScalarType::Int) {
      out.data_ptr<int32_t>()[o_off] = static_cast<int32_t>(index);
    } else {
      out.data_ptr<int64_t>()[o_off] = index;
    }
    for (int32_t d = values.dim - 1; d >= 0; --d) {  // Next logical position.
      if (++coord[d] < values.sizes[d]) break;
      coord[d] = 0;
    }
  }
}

void search_out(KernelContext& ctx, const Search& s, const Tensor& values, bool out_int32,
                const char* seq_name, Tensor& out) {
  const Tensor& seq = *s.seq;
  EMBER_KERNEL_CHECK(ctx, seq.dim >= 1, "%s: expected at least 1-D, got a 0-d tensor", seq_name);
  if (!check_supported(ctx, values, "self") ||
      !check_dtype(ctx, seq, seq_name, values.dtype) ||
      !check_dtype(ctx, out, "out", out_int32 ? ScalarType::Int : ScalarType::Long)) {
    return;
  }
  if (s.per_row) {
    bool leading_match = values.dim == seq.dim;
    for (int32_t d = 0; leading_match && d + 1 < seq.dim; ++d) {
      leading_match = values.sizes[d] == seq.sizes[d];
    }
    EMBER_KERNEL_CHECK(ctx, leading_match,
                       "%s: an N-D sequence needs self with the same leading dims, got %s and %s",
                       seq_name, ShapeStr(seq.shape()).c_str(), ShapeStr(values.shape()).c_str());
  }
  if (s.sorter != nullptr) {
    if (!check_dtype(ctx, *s.sorter, "sorter", ScalarType::Long) ||
        !check_same_shape(ctx, *s.sorter, "sorter", seq, seq_name)) {
      return;
    }
    const int64_t len = seq.sizes[seq.dim - 1];
    const int64_t* order = s.sorter->data_ptr<const int64_t>();
    // Bounds of every sorter entry, in logical order (it indexes seq's rows).
    int64_t coord[kTensorMaxDim] = {};
    for (int64_t i = 0; i < s.sorter->numel; ++i) {
      int64_t off = 0;
      for (int32_t d = 0; d < s.sorter->dim; ++d) off += coord[d] * s.sorter->strides[d];
      EMBER_KERNEL_CHECK(ctx, order[off] >= 0 && order[off] < len,
                         "sorter: index %lld is out of range for a sequence of %lld",
                         static_cast<long long>(order[off]), static_cast<long long>(len));
      for (int32_t d = s.sorter->dim - 1; d >= 0; --d) {
        if (++coord[d] < s.sorter->sizes[d]) break;
        coord[d] = 0;
      }
    }
  }
  if (!resize_out(ctx, out, values.shape())) return;
  if (values.numel == 0) return;
  const bool ok = dispatch_dtype<kRealTypes>(values.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    run_search<S>(s, values, out);
  });
  if (!ok) fail_dtype(ctx, "self", values.dtype);
}

}  // namespace

void searchsorted_Tensor_out(KernelContext& ctx, const Tensor& sorted_sequence, const Tensor& self,
                             bool out_int32, bool right, std::optional<std::string_view> side,
                             const Tensor* sorter, Tensor& out) {
  Search s;
  s.seq = &sorted_sequence;
  s.sorter = sorter;
  s.right = right;
  if (side.has_value()) {
    EMBER_KERNEL_CHECK(ctx, *side == "left" || *side == "right",
                       "side: expected 'left' or 'right', got '%.*s'",
                       static_cast<int>(side->size()), side->data());
    EMBER_KERNEL_CHECK(ctx, !(right && *side == "left"),
                       "side: 'left' contradicts right=True");
    s.right = *side == "right";
  }
  s.per_row = sorted_sequence.dim > 1;
  search_out(ctx, s, self, out_int32, "sorted_sequence", out);
}

void bucketize_Tensor_out(KernelContext& ctx, const Tensor& self, const Tensor& boundaries,
                          bool out_int32, bool right, Tensor& out) {
  EMBER_KERNEL_CHECK(ctx, boundaries.dim == 1, "boundaries: expected 1-D, got shape %s",
                     ShapeStr(boundaries.shape()).c_str());
  Search s;
  s.seq = &boundaries;
  s.right = right;
  search_out(ctx, s, self, out_int32, "boundaries", out);
}

}  // namespace ember::kernels::portable
