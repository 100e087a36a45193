#include <cmath>
#include <string>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

// Calls a scalar prim op; the result lands in a fresh output value.
EValue scalar_op(TensorFactory& tf, const std::string& op, std::vector<EValue*> operands,
                 CallResult* result = nullptr) {
  EValue* out = tf.none();
  operands.push_back(out);
  const std::string name = "executorch_prim::" + op + ".Scalar";
  CallResult r = call_kernel(name.c_str(), operands, /*add_return=*/false);
  if (result != nullptr) *result = r;
  EXPECT_TRUE(result != nullptr || r.ok()) << r.message;
  return *out;
}

int64_t as_int(const EValue& v) {
  EXPECT_EQ(v.tag, Tag::Int);
  return v.as_int;
}
double as_double(const EValue& v) {
  EXPECT_EQ(v.tag, Tag::Double);
  return v.as_double;
}
bool as_bool(const EValue& v) {
  EXPECT_EQ(v.tag, Tag::Bool);
  return v.as_bool;
}

TEST(PrimScalarTest, Arithmetic) {
  TensorFactory tf;
  EXPECT_EQ(as_int(scalar_op(tf, "add", {tf.i(2), tf.i(3)})), 5);
  EXPECT_EQ(as_double(scalar_op(tf, "add", {tf.i(2), tf.d(0.5)})), 2.5);
  EXPECT_EQ(as_int(scalar_op(tf, "add", {tf.b(true), tf.i(1)})), 2);
  EXPECT_EQ(as_int(scalar_op(tf, "sub", {tf.i(2), tf.i(3)})), -1);
  EXPECT_EQ(as_int(scalar_op(tf, "mul", {tf.i(-4), tf.i(3)})), -12);
  EXPECT_EQ(as_double(scalar_op(tf, "truediv", {tf.i(7), tf.i(2)})), 3.5);
  EXPECT_EQ(as_int(scalar_op(tf, "sym_max", {tf.i(7), tf.i(2)})), 7);
  EXPECT_EQ(as_double(scalar_op(tf, "sym_min", {tf.i(7), tf.d(2.5)})), 2.5);
  EXPECT_EQ(as_int(scalar_op(tf, "neg", {tf.i(7)})), -7);
  EXPECT_EQ(as_double(scalar_op(tf, "neg", {tf.d(1.5)})), -1.5);
}

TEST(PrimScalarTest, PythonFloorDivAndMod) {
  TensorFactory tf;
  EXPECT_EQ(as_int(scalar_op(tf, "floordiv", {tf.i(7), tf.i(2)})), 3);
  EXPECT_EQ(as_int(scalar_op(tf, "floordiv", {tf.i(-7), tf.i(2)})), -4);
  EXPECT_EQ(as_int(scalar_op(tf, "floordiv", {tf.i(7), tf.i(-2)})), -4);
  EXPECT_EQ(as_int(scalar_op(tf, "mod", {tf.i(-7), tf.i(2)})), 1);
  EXPECT_EQ(as_int(scalar_op(tf, "mod", {tf.i(7), tf.i(-2)})), -1);
  EXPECT_EQ(as_int(scalar_op(tf, "mod", {tf.i(6), tf.i(-2)})), 0);
  EXPECT_EQ(as_double(scalar_op(tf, "floordiv", {tf.d(-7.5), tf.i(2)})), -4.0);
  EXPECT_EQ(as_double(scalar_op(tf, "mod", {tf.d(-7.5), tf.i(2)})), 0.5);
  EXPECT_EQ(as_double(scalar_op(tf, "mod", {tf.d(7.5), tf.d(-2)})), -0.5);
  EXPECT_EQ(as_int(scalar_op(tf, "floordiv", {tf.i(INT64_MIN), tf.i(-1)})), INT64_MIN);
}

TEST(PrimScalarTest, DivisionByZeroFails) {
  TensorFactory tf;
  for (const char* op : {"floordiv", "mod", "truediv"}) {
    CallResult r;
    scalar_op(tf, op, {tf.i(1), tf.i(0)}, &r);
    EXPECT_KERNEL_FAILS(r, std::string("executorch_prim::") + op, "by zero");
    scalar_op(tf, op, {tf.d(1), tf.d(0)}, &r);
    EXPECT_KERNEL_FAILS(r, std::string("executorch_prim::") + op, "by zero");
  }
}

TEST(PrimScalarTest, Comparisons) {
  TensorFactory tf;
  EXPECT_TRUE(as_bool(scalar_op(tf, "eq", {tf.i(2), tf.d(2.0)})));
  EXPECT_FALSE(as_bool(scalar_op(tf, "gt", {tf.i(2), tf.i(2)})));
  EXPECT_TRUE(as_bool(scalar_op(tf, "ge", {tf.i(2), tf.i(2)})));
  EXPECT_TRUE(as_bool(scalar_op(tf, "lt", {tf.d(-0.5), tf.i(0)})));
  EXPECT_TRUE(as_bool(scalar_op(tf, "le", {tf.b(true), tf.i(1)})));
  // Exact for large ints (a double compare would say equal).
  EXPECT_FALSE(as_bool(scalar_op(tf, "eq", {tf.i((1ll << 53) + 1), tf.i(1ll << 53)})));
}

TEST(PrimScalarTest, RoundingAndConversions) {
  TensorFactory tf;
  EXPECT_EQ(as_int(scalar_op(tf, "ceil", {tf.d(1.2)})), 2);
  EXPECT_EQ(as_int(scalar_op(tf, "ceil", {tf.d(-1.2)})), -1);
  EXPECT_EQ(as_int(scalar_op(tf, "trunc", {tf.d(-1.7)})), -1);
  EXPECT_EQ(as_int(scalar_op(tf, "round", {tf.d(2.5)})), 2);
  EXPECT_EQ(as_int(scalar_op(tf, "round", {tf.d(3.5)})), 4);
  EXPECT_EQ(as_int(scalar_op(tf, "round", {tf.d(-2.5)})), -2);
  EXPECT_EQ(as_int(scalar_op(tf, "round", {tf.d(2.6)})), 3);
  EXPECT_EQ(as_int(scalar_op(tf, "round", {tf.i(5)})), 5);
  EXPECT_EQ(as_double(scalar_op(tf, "sym_float", {tf.i(3)})), 3.0);
  EXPECT_EQ(as_int(scalar_op(tf, "sym_int", {tf.d(-3.9)})), -3);
  EXPECT_FALSE(as_bool(scalar_op(tf, "sym_not", {tf.b(true)})));
  EXPECT_EQ(as_int(scalar_op(tf, "sym_ite", {tf.b(true), tf.i(1), tf.i(2)})), 1);
  EXPECT_EQ(as_double(scalar_op(tf, "sym_ite", {tf.b(false), tf.i(1), tf.d(2.5)})), 2.5);
  CallResult r;
  scalar_op(tf, "ceil", {tf.d(INFINITY)}, &r);
  EXPECT_KERNEL_FAILS(r, "executorch_prim::ceil.Scalar", "integer");
  scalar_op(tf, "add", {tf.none(), tf.i(1)}, &r);
  EXPECT_KERNEL_FAILS(r, "executorch_prim::add.Scalar", "None");
}

TEST(PrimTensorTest, SymSizeNumelLocalScalar) {
  TensorFactory tf;
  auto& t = tf.make<float>({2, 5});
  EValue* out = tf.none();
  ASSERT_TRUE(call_kernel("aten::sym_size.int", {&t.ev, tf.i(-1), out}, false).ok());
  EXPECT_EQ(as_int(*out), 5);
  EXPECT_KERNEL_FAILS(call_kernel("aten::sym_size.int", {&t.ev, tf.i(2), out}, false),
                      "aten::sym_size.int", "out of range");
  ASSERT_TRUE(call_kernel("aten::sym_numel", {&t.ev, out}, false).ok());
  EXPECT_EQ(as_int(*out), 10);
  auto& f = tf.make<double>({1, 1}, {2.5});
  ASSERT_TRUE(call_kernel("aten::_local_scalar_dense", {&f.ev, out}, false).ok());
  EXPECT_EQ(as_double(*out), 2.5);
  auto& i = tf.make<int8_t>({}, {-3});
  ASSERT_TRUE(call_kernel("aten::_local_scalar_dense", {&i.ev, out}, false).ok());
  EXPECT_EQ(as_int(*out), -3);
  auto& b = tf.make<bool>({1}, {true});
  ASSERT_TRUE(call_kernel("aten::_local_scalar_dense", {&b.ev, out}, false).ok());
  EXPECT_TRUE(as_bool(*out));
  EXPECT_KERNEL_FAILS(call_kernel("aten::_local_scalar_dense", {&t.ev, out}, false),
                      "aten::_local_scalar_dense", "one element");
}

TEST(PrimTensorTest, EtViewAliases) {
  TensorFactory tf;
  auto& a = tf.make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto& out = tf.make<float>({3, 2});
  out.t.data = nullptr;  // A view gets no planned memory.
  ASSERT_TRUE(
      call_kernel("executorch_prim::et_view.default", {&a.ev, tf.list({-1, 2}), &out.ev}, false)
          .ok());
  EXPECT_EQ(out.t.data, a.t.data);
  EXPECT_EQ(out.values<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  auto& wrong = tf.make<float>({6, 1});
  EXPECT_KERNEL_FAILS(
      call_kernel("executorch_prim::et_view.default", {&a.ev, tf.list({4, -1}), &wrong.ev}, false),
      "executorch_prim::et_view.default", "invalid");
  auto& cl = tf.make<float>({1, 2, 1, 1}, {}, kChannelsLast);
  auto& o2 = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(
      call_kernel("executorch_prim::et_view.default", {&cl.ev, tf.list({2}), &o2.ev}, false),
      "executorch_prim::et_view.default", "dim order");
}

TEST(PrimTensorTest, EtCopyIndex) {
  TensorFactory tf;
  auto& to = tf.make<int32_t>({3, 2});
  auto& from = tf.make<int32_t>({2}, {7, 8});
  ASSERT_TRUE(
      call_kernel("executorch_prim::et_copy_index.tensor", {&to.ev, &from.ev, tf.i(1)}, false).ok());
  EXPECT_EQ(to.values<int32_t>(), (std::vector<int32_t>{0, 0, 7, 8, 0, 0}));
  // A bounded copy_to grows along dim 0.
  auto& grow = tf.zeros(ScalarType::Int, {0, 2}, {}, TensorShapeDynamism::DynamicBound, 6);
  ASSERT_TRUE(call_kernel("executorch_prim::et_copy_index.tensor", {&grow.ev, &from.ev, tf.i(0)},
                          false)
                  .ok());
  EXPECT_EQ(grow.values<int32_t>(), (std::vector<int32_t>{7, 8}));
  EXPECT_KERNEL_FAILS(
      call_kernel("executorch_prim::et_copy_index.tensor", {&to.ev, &from.ev, tf.i(3)}, false),
      "executorch_prim::et_copy_index.tensor", "out of range");
  auto& bad = tf.make<int32_t>({3});
  EXPECT_KERNEL_FAILS(
      call_kernel("executorch_prim::et_copy_index.tensor", {&to.ev, &bad.ev, tf.i(0)}, false),
      "executorch_prim::et_copy_index.tensor", "cannot hold");
}

}  // namespace
}  // namespace ember::testing
