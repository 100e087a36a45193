// histogram.bin_ct: edges from the data's range, the last edge in the last bin.
#include <cmath>

#include "kernels/portable/test/return_list.h"
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpHistogramTest, EdgesAndCounts) {
  TensorFactory tf;
  auto& x = tf.make<float>({4}, {0, 1, 2, 3});
  auto& h = tf.make<float>({2});
  auto& e = tf.make<float>({3});
  ReturnList ret({&h, &e});
  ASSERT_TRUE(call_kernel("aten::histogram.bin_ct_out",
                          {&x.ev, tf.i(2), tf.none(), tf.none(), tf.b(false), &h.ev, &e.ev, &ret.ev}, false)
                  .ok());
  EXPECT_EQ(e.values<float>(), (std::vector<float>{0, 1.5, 3}));
  EXPECT_EQ(h.values<float>(), (std::vector<float>{2, 2}));
}

TEST(OpHistogramTest, Errors) {
  TensorFactory tf;
  auto& x = tf.make<float>({2}, {1, INFINITY});
  auto& h = tf.make<float>({2});
  auto& e = tf.make<float>({3});
  ReturnList ret({&h, &e});
  EXPECT_KERNEL_FAILS(call_kernel("aten::histogram.bin_ct_out",
                                  {&x.ev, tf.i(2), tf.none(), tf.none(), tf.b(false), &h.ev, &e.ev, &ret.ev}, false),
                      "aten::histogram.bin_ct_out", "is not finite");
  auto& xi = tf.make<int32_t>({2}, {1, 2});
  EXPECT_KERNEL_FAILS(call_kernel("aten::histogram.bin_ct_out",
                                  {&xi.ev, tf.i(2), tf.none(), tf.none(), tf.b(false), &h.ev, &e.ev, &ret.ev}, false),
                      "aten::histogram.bin_ct_out", "int32");
}

}  // namespace
}  // namespace ember::testing
