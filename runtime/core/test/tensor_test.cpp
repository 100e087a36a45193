#include <gtest/gtest.h>

#include "runtime/core/memory_allocator.h"
#include "runtime/core/result.h"
#include "runtime/core/tensor.h"

namespace ember {
namespace {

TEST(TensorTest, StridesFollowDimOrder) {
  int32_t sizes[4] = {2, 3, 4, 5};
  uint8_t contiguous[4] = {0, 1, 2, 3};
  uint8_t channels_last[4] = {0, 2, 3, 1};
  int64_t strides[4];
  Tensor t;
  t.dim = 4;
  t.sizes = sizes;
  t.strides = strides;
  t.dim_order = contiguous;
  t.update_strides();
  EXPECT_EQ(strides[0], 60);
  EXPECT_EQ(strides[3], 1);
  EXPECT_EQ(t.numel, 120);
  t.dim_order = channels_last;
  t.update_strides();
  EXPECT_EQ(strides[1], 1);   // C innermost
  EXPECT_EQ(strides[3], 3);   // W
  EXPECT_EQ(strides[2], 15);  // H
  EXPECT_EQ(strides[0], 60);
}

TEST(TensorTest, StaticTensorRefusesResize) {
  int32_t sizes[2] = {2, 3};
  uint8_t order[2] = {0, 1};
  int64_t strides[2];
  Tensor t;
  t.dim = 2;
  t.sizes = sizes;
  t.dim_order = order;
  t.strides = strides;
  t.update_strides();
  const int32_t same[2] = {2, 3};
  const int32_t other[2] = {3, 2};
  EXPECT_EQ(t.resize(same), Error::Ok);
  EXPECT_EQ(t.resize(other), Error::InvalidArgument);
}

TEST(TensorTest, CheckedNumelDetectsOverflow) {
  const int32_t big[3] = {1 << 30, 1 << 30, 1 << 30};
  EXPECT_EQ(checked_numel(big, INT64_MAX), -1);
  const int32_t neg[2] = {2, -1};
  EXPECT_EQ(checked_numel(neg, INT64_MAX), -1);
  const int32_t empty[2] = {0, 5};
  EXPECT_EQ(checked_numel(empty, 10), 0);
  // An empty shape fits a 0-byte plan whatever comes before its 0 (an empty
  // slice of a dynamic prefill), and a negative size after a 0 is still one.
  const int32_t empty_last[4] = {1, 4, 5, 0};
  EXPECT_EQ(checked_numel(empty_last, 0), 0);
  const int32_t huge_then_empty[3] = {1 << 30, 1 << 30, 0};
  EXPECT_EQ(checked_numel(huge_then_empty, 0), 0);
  const int32_t empty_then_neg[2] = {0, -1};
  EXPECT_EQ(checked_numel(empty_then_neg, 10), -1);
}

TEST(MemoryAllocatorTest, AlignsAndRefusesWhenFull) {
  alignas(64) uint8_t buf[128];
  MemoryAllocator a(buf, sizeof(buf));
  void* p = a.allocate(3, 1);
  void* q = a.allocate(8, 16);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 16, 0u);
  EXPECT_EQ(a.allocate(1000), nullptr);
  EXPECT_EQ(a.allocate(SIZE_MAX), nullptr);
}

TEST(ResultTest, CarriesValueOrError) {
  Result<int> ok(5);
  Result<int> bad(Error::NotFound);
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 5);
  EXPECT_EQ(bad.error(), Error::NotFound);
}

}  // namespace
}  // namespace ember
