#include <string_view>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

EValue* string_value(std::deque<EValue>& keep, std::string_view s) {
  EValue& v = keep.emplace_back();
  v.tag = Tag::String;
  v.as_string = s;
  return &v;
}

TEST(PrimAssertTest, TruePasses) {
  TensorFactory tf;
  std::deque<EValue> keep;
  EXPECT_TRUE(call_kernel("aten::_assert_scalar", {tf.b(true), string_value(keep, "x")},
                          /*add_return=*/false)
                  .ok());
  EXPECT_TRUE(call_kernel("aten::_assert_scalar", {tf.i(3), string_value(keep, "x")},
                          /*add_return=*/false)
                  .ok());
}

TEST(PrimAssertTest, FalseFailsWithTheMessage) {
  TensorFactory tf;
  std::deque<EValue> keep;
  const CallResult r =
      call_kernel("aten::_assert_scalar",
                  {tf.b(false), string_value(keep, "input 1 dim 1 must equal input 0 dim 1")},
                  /*add_return=*/false);
  EXPECT_EQ(r.error, Error::InvalidArgument);
  EXPECT_KERNEL_FAILS(r, "aten::_assert_scalar", "input 1 dim 1 must equal input 0 dim 1");
  EXPECT_KERNEL_FAILS(call_kernel("aten::_assert_scalar", {tf.i(0), string_value(keep, "zero")},
                                  /*add_return=*/false),
                      "aten::_assert_scalar", "zero");
}

TEST(PrimAssertTest, NonScalarIsRefused) {
  TensorFactory tf;
  std::deque<EValue> keep;
  EXPECT_KERNEL_FAILS(call_kernel("aten::_assert_scalar", {tf.none(), string_value(keep, "m")},
                                  /*add_return=*/false),
                      "aten::_assert_scalar", "must be a scalar");
}

}  // namespace
}  // namespace ember::testing
