// transpose_f32 (util/transpose_f32.h) on every ISA level the host has:
// shapes on both sides of the 8×8 register blocks and the 16×16 copy blocks,
// row strides wider than the rows, against the element-by-element definition.
#include <vector>

#include <gtest/gtest.h>

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/transpose_f32.h"

namespace ember::kernels::portable {
namespace {

TEST(TransposeF32Test, MatchesTheDefinitionOnEveryIsa) {
  const int64_t shapes[][2] = {{1, 1}, {8, 8}, {7, 9}, {16, 16}, {17, 33}, {49, 512},
                               {196, 40}, {3, 64}, {64, 3}, {0, 5}};
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2}) {
    if (isa > cpu_isa()) continue;
    for (const auto& s : shapes) {
      const int64_t rows = s[0], cols = s[1], src_rs = cols + 3, dst_rs = rows + 5;
      SCOPED_TRACE(::testing::Message() << "isa " << isa_name(isa) << " " << rows << "x" << cols);
      std::vector<float> src(static_cast<size_t>(rows * src_rs + 1));
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.5f - 7.0f;
      std::vector<float> dst(static_cast<size_t>(cols * dst_rs + 1), -1.0f);
      transpose_f32(src.data(), src_rs, dst.data(), dst_rs, rows, cols, isa);
      for (int64_t j = 0; j < cols; ++j) {
        for (int64_t i = 0; i < dst_rs; ++i) {
          const float want = i < rows ? src[static_cast<size_t>(i * src_rs + j)] : -1.0f;
          ASSERT_EQ(dst[static_cast<size_t>(j * dst_rs + i)], want)
              << "dst[" << j << "][" << i << "]";
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember::kernels::portable
