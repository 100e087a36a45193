#include "kernels/portable/util/advanced_index.h"

#include "kernels/portable/util/broadcast.h"

namespace ember::kernels::portable {
namespace {

bool is_mask(const Tensor& t) { return t.dtype == ScalarType::Bool || t.dtype == ScalarType::Byte; }

/// Mask element at row-major position `pos` is nonzero.
bool mask_at(const Tensor& m, int64_t pos) {
  int64_t off = 0;
  for (int32_t d = m.dim - 1; d >= 0; --d) {
    off += (pos % m.sizes[d]) * m.strides[d];
    pos /= m.sizes[d];
  }
  return static_cast<const uint8_t*>(m.data)[off] != 0;
}

}  // namespace

bool AdvancedIndex::init(KernelContext& ctx, const Tensor& s, std::span<Tensor* const> indices,
                         const char* name) {
  self = &s;
  count = 0;
  int32_t sd = 0;
  int first_entry = -1, last_entry = -1;
  bool is_adv[kTensorMaxDim] = {};
  for (size_t k = 0; k < indices.size(); ++k) {
    const Tensor* t = indices[k];
    if (t == nullptr) {
      ++sd;
      if (sd > s.dim) break;
      continue;
    }
    if (sd >= s.dim) {  // Every entry covers at least one dim.
      ctx.fail(Error::InvalidArgument, "%s: too many indices for self of shape %s", name,
               ShapeStr(s.shape()).c_str());
      return false;
    }
    Entry& e = entries[count++];
    e = Entry{};
    e.t = t;
    e.first_dim = sd;
    if (is_mask(*t)) {
      e.mask = true;
      e.ndims = t->dim;
      if (t->dim == 0) {
        ctx.fail(Error::InvalidArgument, "%s: entry %zu is a 0-dim mask (unsupported)", name, k);
        return false;
      }
      bool match = sd + t->dim <= s.dim;
      for (int32_t d = 0; match && d < t->dim; ++d) match = t->sizes[d] == s.sizes[sd + d];
      if (!match) {
        ctx.fail(Error::InvalidArgument,
                 "%s: mask %zu of shape %s does not match self of shape %s at dim %d", name, k,
                 ShapeStr(t->shape()).c_str(), ShapeStr(s.shape()).c_str(), sd);
        return false;
      }
      for (int64_t p = 0; p < t->numel; ++p) e.nnz += mask_at(*t, p) ? 1 : 0;
    } else if (t->dtype != ScalarType::Long && t->dtype != ScalarType::Int) {
      ctx.fail(Error::InvalidArgument,
               "%s: entry %zu has dtype %s; expected int64, int32, bool or uint8", name, k,
               scalar_type_name(t->dtype));
      return false;
    }
    if (sd + e.ndims > s.dim) {
      ctx.fail(Error::InvalidArgument, "%s: too many indices for self of shape %s", name,
               ShapeStr(s.shape()).c_str());
      return false;
    }
    for (int32_t d = 0; d < e.ndims; ++d) is_adv[sd + d] = true;
    sd += e.ndims;
    if (first_entry < 0) first_entry = static_cast<int>(k);
    last_entry = static_cast<int>(k);
  }
  if (sd > s.dim) {
    ctx.fail(Error::InvalidArgument, "%s: too many indices for self of shape %s", name,
             ShapeStr(s.shape()).c_str());
    return false;
  }
  if (count == 0) {
    ctx.fail(Error::InvalidArgument, "%s: needs at least one index tensor", name);
    return false;
  }
  // Broadcast the index shapes (a mask counts as [nnz]).
  bdim = 0;
  for (int32_t k = 0; k < count; ++k) {
    const Entry& e = entries[k];
    int32_t one[1] = {static_cast<int32_t>(e.nnz)};
    std::span<const int32_t> sh = e.mask ? std::span<const int32_t>(one, 1) : e.t->shape();
    int32_t next[kTensorMaxDim];
    int32_t next_dim = 0;
    if (!broadcast_shapes({bshape, static_cast<size_t>(bdim)}, sh, next, &next_dim)) {
      ctx.fail(Error::InvalidArgument, "%s: index shapes %s and %s do not broadcast", name,
               ShapeStr({bshape, static_cast<size_t>(bdim)}).c_str(), ShapeStr(sh).c_str());
      return false;
    }
    bdim = next_dim;
    for (int32_t d = 0; d < bdim; ++d) bshape[d] = next[d];
  }
  for (int32_t k = 0; k < count; ++k) {
    Entry& e = entries[k];
    if (!e.mask) broadcast_strides(*e.t, {bshape, static_cast<size_t>(bdim)}, e.bstrides);
  }
  const bool adjacent = last_entry - first_entry + 1 == count;
  int32_t covered = 0;
  for (int32_t d = 0; d < s.dim; ++d) covered += is_adv[d] ? 1 : 0;
  if (bdim + s.dim - covered > kTensorMaxDim) {
    ctx.fail(Error::InvalidArgument, "%s: the result would have %d dims, more than the maximum %d",
             name, bdim + s.dim - covered, kTensorMaxDim);
    return false;
  }
  int32_t n = 0;
  auto push_self = [&](int32_t d) {
    result_shape[n] = s.sizes[d];
    result_to_self[n++] = d;
  };
  auto push_block = [&]() {
    bpos = n;
    for (int32_t d = 0; d < bdim; ++d) {
      result_shape[n] = bshape[d];
      result_to_self[n++] = -1;
    }
  };
  if (adjacent) {
    const int32_t first_dim = entries[0].first_dim;
    for (int32_t d = 0; d < first_dim; ++d) push_self(d);
    push_block();
    for (int32_t d = first_dim; d < s.dim; ++d) {
      if (!is_adv[d]) push_self(d);
    }
  } else {
    push_block();
    for (int32_t d = 0; d < s.dim; ++d) {
      if (!is_adv[d]) push_self(d);
    }
  }
  result_dim = n;
  return true;
}

int64_t AdvancedIndex::mask_position(Entry& e, int64_t j) {
  if (j < e.cursor_j) {
    e.cursor_j = -1;
    e.cursor_pos = -1;
  }
  while (e.cursor_j < j) {
    ++e.cursor_pos;
    if (mask_at(*e.t, e.cursor_pos)) ++e.cursor_j;
  }
  return e.cursor_pos;
}

bool AdvancedIndex::offset(KernelContext& ctx, const int32_t* idx, const int64_t* strides,
                           const char* name, int64_t* out) {
  int64_t off = 0;
  for (int32_t r = 0; r < result_dim; ++r) {
    if (result_to_self[r] >= 0) off += idx[r] * strides[result_to_self[r]];
  }
  const int32_t* b = idx + bpos;
  for (int32_t k = 0; k < count; ++k) {
    Entry& e = entries[k];
    if (e.mask) {
      const int64_t j = (bdim == 0 || e.nnz == 1) ? 0 : b[bdim - 1];
      int64_t pos = mask_position(e, j);
      for (int32_t d = e.ndims - 1; d >= 0; --d) {
        const int32_t sdim = e.first_dim + d;
        off += (pos % self->sizes[sdim]) * strides[sdim];
        pos /= self->sizes[sdim];
      }
    } else {
      const int64_t raw = load_index(*e.t, offset_of(b, e.bstrides, bdim));
      int64_t v = 0;
      if (!checked_index(ctx, raw, self->sizes[e.first_dim], e.first_dim, true, name, &v)) {
        return false;
      }
      off += v * strides[e.first_dim];
    }
  }
  *out = off;
  return true;
}

}  // namespace ember::kernels::portable
