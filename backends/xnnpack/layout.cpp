// Blocked transposes: tiles of 8 channels x 32 positions keep both the
// reads and the writes within a few cache lines.
#include "backends/xnnpack/layout.h"

#include <algorithm>

namespace ember::backends::xnnpack {
namespace {

constexpr int64_t kTileRows = 8;
constexpr int64_t kTileCols = 32;

// dst[j][i] = src[i][j] for an rows x cols matrix.
void transpose(const float* src, float* dst, int64_t rows, int64_t cols) {
  for (int64_t i0 = 0; i0 < rows; i0 += kTileRows) {
    const int64_t i1 = std::min(rows, i0 + kTileRows);
    for (int64_t j0 = 0; j0 < cols; j0 += kTileCols) {
      const int64_t j1 = std::min(cols, j0 + kTileCols);
      for (int64_t j = j0; j < j1; ++j) {
        for (int64_t i = i0; i < i1; ++i) dst[j * rows + i] = src[i * cols + j];
      }
    }
  }
}

}  // namespace

ArgumentLayout argument_layout(bool nchw, int32_t rank, const uint8_t* dim_order) {
  bool contiguous = true;
  for (int32_t d = 0; d < rank; ++d) contiguous = contiguous && dim_order[d] == d;
  if (contiguous) return nchw ? ArgumentLayout::kConvert : ArgumentLayout::kAsIs;
  if (nchw && rank == 4 && dim_order[0] == 0 && dim_order[1] == 2 && dim_order[2] == 3 &&
      dim_order[3] == 1) {
    return ArgumentLayout::kAsIs;  // Channels-last memory is already NHWC.
  }
  return ArgumentLayout::kUnreadable;
}

void nchw_to_nhwc(const float* src, float* dst, int64_t n, int64_t c, int64_t plane) {
  for (int64_t b = 0; b < n; ++b) transpose(src + b * c * plane, dst + b * c * plane, c, plane);
}

void nhwc_to_nchw(const float* src, float* dst, int64_t n, int64_t c, int64_t plane) {
  for (int64_t b = 0; b < n; ++b) transpose(src + b * c * plane, dst + b * c * plane, plane, c);
}

}  // namespace ember::backends::xnnpack
