#include "kernels/portable/util/copy.h"

#include <cstring>

#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/dtype.h"

namespace ember::kernels::portable {
namespace {

// Same-dtype copies move bits: one instantiation per element size.
template <typename U>
void copy_bits(const StridedLoop<2>& loop, const void* src, void* dst) {
  const U* s = static_cast<const U*>(src);
  U* d = static_cast<U*>(dst);
  loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
    if (st[0] == 1 && st[1] == 1) {
      std::memcpy(d + off[0], s + off[1], static_cast<size_t>(n) * sizeof(U));
    } else {
      for (int64_t i = 0; i < n; ++i) d[off[0] + i * st[0]] = s[off[1] + i * st[1]];
    }
  });
}

}  // namespace

void strided_copy(const Tensor& src, const int64_t* src_strides, Tensor& out) {
  const int64_t* strides[2] = {out.strides, src_strides};
  StridedLoop<2> loop;
  loop.init(out.shape(), strides);
  if (src.dtype == out.dtype) {
    switch (element_size(out.dtype)) {
      case 1: copy_bits<uint8_t>(loop, src.data, out.data); return;
      case 2: copy_bits<uint16_t>(loop, src.data, out.data); return;
      case 4: copy_bits<uint32_t>(loop, src.data, out.data); return;
      case 8: copy_bits<uint64_t>(loop, src.data, out.data); return;
      default: return;
    }
  }
  (void)dispatch_dtype<kAllTypes>(out.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    // Integers go through int64 so out-of-range values wrap instead of UB.
    using Via = std::conditional_t<std::is_integral_v<S>, int64_t, compute_t<S>>;
    S* d = out.data_ptr<S>();
    loop.run([&](const int64_t* off, int64_t n, const int64_t* st) {
      for (int64_t i = 0; i < n; ++i) {
        const Via v = load_as<Via>(src.data, src.dtype, off[1] + i * st[1]);
        d[off[0] + i * st[0]] = convert<S>(v);
      }
    });
  });
}

void reshape_copy(const Tensor& src, Tensor& out) {
  const size_t esize = element_size(out.dtype);
  if (out.numel == 0) return;
  if (src.is_contiguous_dim_order() && out.is_contiguous_dim_order()) {
    // The memory plan may give a view its input's memory (memory_planning.py):
    // then there is nothing to copy.
    if (out.data != src.data) {
      std::memcpy(out.data, src.data, static_cast<size_t>(out.numel) * esize);
    }
    return;
  }
  // Walk both tensors in logical row-major order with one odometer each.
  int64_t si[kTensorMaxDim] = {};
  int64_t oi[kTensorMaxDim] = {};
  int64_t soff = 0;
  int64_t ooff = 0;
  const char* s = static_cast<const char*>(src.data);
  char* o = static_cast<char*>(out.data);
  auto step = [](const Tensor& t, int64_t* idx, int64_t& off) {
    for (int32_t d = t.dim - 1; d >= 0; --d) {
      ++idx[d];
      off += t.strides[d];
      if (idx[d] < t.sizes[d]) return;
      off -= t.strides[d] * t.sizes[d];
      idx[d] = 0;
    }
  };
  for (int64_t i = 0; i < out.numel; ++i) {
    std::memcpy(o + ooff * static_cast<int64_t>(esize), s + soff * static_cast<int64_t>(esize),
                esize);
    step(src, si, soff);
    step(out, oi, ooff);
  }
}

}  // namespace ember::kernels::portable
