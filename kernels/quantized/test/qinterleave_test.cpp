// The byte shuffles of qinterleave.h against their definitions, at every row
// length a phase plane may have (vector bodies, overlapping last vectors and
// scalar tails), with exactly sized outputs so ASan sees a write past them.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/quantized/util/qinterleave.h"

namespace ember::kernels::quantized {
namespace {

TEST(QInterleaveTest, Deinterleave2SplitsEveryLength) {
  for (int64_t n = 0; n <= 130; ++n) {
    SCOPED_TRACE("n " + std::to_string(n));
    std::vector<int8_t> src(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) src[static_cast<size_t>(i)] = static_cast<int8_t>(i * 37 - 100);
    const int64_t evens = (n + 1) / 2, odds = n / 2;
    auto even = std::make_unique<int8_t[]>(static_cast<size_t>(evens));
    auto odd = std::make_unique<int8_t[]>(static_cast<size_t>(odds));
    deinterleave2(src.data(), n, even.get(), odd.get());
    for (int64_t c = 0; c < evens; ++c) ASSERT_EQ(even[static_cast<size_t>(c)], src[2 * c]) << c;
    for (int64_t c = 0; c < odds; ++c) ASSERT_EQ(odd[static_cast<size_t>(c)], src[2 * c + 1]) << c;
  }
}

}  // namespace
}  // namespace ember::kernels::quantized
