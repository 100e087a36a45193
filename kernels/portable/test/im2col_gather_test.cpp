// im2col_gather_strip (util/im2col_gather.h) on every ISA level the host has,
// against its definition: strips of 8, 16 and 32 columns, partial strips,
// padding (−1) offsets, k ranges that start and end inside a channel's taps,
// and a table whose rows are followed by valid offsets (the gather must not
// read past `cols`).
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/portable/util/cpu_isa.h"
#include "kernels/portable/util/im2col_gather.h"

namespace ember::kernels::portable {
namespace {

TEST(Im2colGatherTest, MatchesTheDefinitionOnEveryIsa) {
  const int64_t channels = 5, plane = 7 * 7, taps = 9, row = 64;
  std::mt19937 rng(3);
  std::vector<float> x(static_cast<size_t>(channels * plane));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.25f - 3.0f;
  // Offsets within a plane, about a third of them padding; the row's tail
  // past `positions` holds valid offsets too, which no column past `cols` may read.
  std::vector<int32_t> offsets(static_cast<size_t>(taps * row));
  for (auto& o : offsets) o = rng() % 3 == 0 ? -1 : static_cast<int32_t>(rng() % plane);
  const Im2colTable table{offsets.data(), row, taps};
  struct Strip {
    int nr;
    int64_t j0, cols, p0, kc;
  };
  const Strip strips[] = {{32, 0, 32, 0, 45},  {32, 17, 13, 4, 30}, {16, 32, 16, 8, 17},
                          {16, 40, 1, 0, 9},   {8, 5, 8, 13, 20},   {8, 56, 3, 2, 43},
                          {32, 30, 0, 0, 2}};
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (isa > cpu_isa()) continue;
    for (const Strip& s : strips) {
      SCOPED_TRACE(::testing::Message() << "isa " << isa_name(isa) << " nr " << s.nr << " j0 "
                                        << s.j0 << " cols " << s.cols << " p0 " << s.p0);
      std::vector<float> dst(static_cast<size_t>(s.kc * s.nr), 99.0f);
      im2col_gather_strip_at(isa, x.data(), plane, table, s.p0, s.kc, s.j0, s.cols, s.nr,
                             dst.data());
      int padding = 0;
      for (int64_t p = 0; p < s.kc; ++p) {
        const int64_t c = (s.p0 + p) / taps, t = (s.p0 + p) % taps;
        for (int64_t j = 0; j < s.nr; ++j) {
          const int32_t off = j < s.cols ? offsets[static_cast<size_t>(t * row + s.j0 + j)] : -1;
          padding += j < s.cols && off < 0;
          const float want = off >= 0 ? x[static_cast<size_t>(c * plane + off)] : 0.0f;
          ASSERT_EQ(dst[static_cast<size_t>(p * s.nr + j)], want) << "p " << p << " j " << j;
        }
      }
      if (s.cols > 4) {
        EXPECT_GT(padding, 0) << "no padding offset was exercised";
      }
    }
  }
}

}  // namespace
}  // namespace ember::kernels::portable
