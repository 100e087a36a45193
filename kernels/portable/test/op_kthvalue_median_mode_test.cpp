// kthvalue, median, nanmedian, mode: the working row lives in the method's
// scratch (reserved by prepare); without it the kernel fails, naming it.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/portable/test/return_list.h"
#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

TEST(OpSelectionTest, FailsWithoutScratchAndRunsWithIt) {
  TensorFactory tf;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto& x = tf.make<float>({2, 4}, {3, nan, 1, 2, 4, 1, 3, 2});
  auto& v = tf.make<float>({2});
  auto& i = tf.make<int64_t>({2});
  ReturnList ret({&v, &i});
  // This harness reserves no scratch, as a method whose prepare did not run.
  EXPECT_KERNEL_FAILS(call_kernel("aten::median.dim_values",
                                  {&x.ev, tf.i(1), tf.b(false), &v.ev, &i.ev, &ret.ev}, false),
                      "aten::median.dim_values", "scratch");
  alignas(64) static uint8_t scratch[4 * 16];
  KernelContext ctx("aten::median.dim_values");
  ctx.set_scratch(scratch, sizeof(scratch));
  ASSERT_TRUE(call_kernel(ctx, "aten::median.dim_values",
                          {&x.ev, tf.i(1), tf.b(false), &v.ev, &i.ev, &ret.ev}, false).ok());
  EXPECT_TRUE(std::isnan(v.values<float>()[0]));  // a NaN row: NaN at its first NaN
  EXPECT_EQ(v.values<float>()[1], 2);               // the lower median of 4, 1, 3, 2
  EXPECT_EQ(i.values<int64_t>(), (std::vector<int64_t>{1, 3}));
  KernelContext nctx("aten::nanmedian.dim_values");
  nctx.set_scratch(scratch, sizeof(scratch));
  ASSERT_TRUE(call_kernel(nctx, "aten::nanmedian.dim_values",
                          {&x.ev, tf.i(1), tf.b(false), &v.ev, &i.ev, &ret.ev}, false).ok());
  EXPECT_EQ(v.values<float>(), (std::vector<float>{2, 2}));
  EXPECT_EQ(i.values<int64_t>(), (std::vector<int64_t>{3, 3}));
  // Too little scratch for a row of 4: refused, not overrun.
  KernelContext small("aten::kthvalue.values");
  small.set_scratch(scratch, 3 * 16);
  EXPECT_KERNEL_FAILS(call_kernel(small, "aten::kthvalue.values",
                                  {&x.ev, tf.i(1), tf.i(1), tf.b(false), &v.ev, &i.ev, &ret.ev},
                                  false),
                      "aten::kthvalue.values", "scratch");
}

}  // namespace
}  // namespace ember::testing
