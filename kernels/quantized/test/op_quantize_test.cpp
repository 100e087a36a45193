// The quantized_decomposed kernels: rounding, clamping, per-channel layout,
// choose_qparams, and the parameter checks (run time and prepare).
// Comparisons with PyTorch eager over many values are in
// python/tests/test_quantization.py.
#include <cmath>

#include "kernels/test/tensor_factory.h"

namespace ember::testing {
namespace {

constexpr const char* kQ = "quantized_decomposed::quantize_per_tensor.out";
constexpr const char* kDq = "quantized_decomposed::dequantize_per_tensor.out";
constexpr const char* kQc = "quantized_decomposed::quantize_per_channel.out";
constexpr const char* kDqc = "quantized_decomposed::dequantize_per_channel.out";
constexpr const char* kChoose = "quantized_decomposed::choose_qparams.Tensor_out";
constexpr int64_t kInt8 = static_cast<int64_t>(ScalarType::Char);
constexpr int64_t kUInt8 = static_cast<int64_t>(ScalarType::Byte);

TEST(OpQuantizeTest, RoundsHalfToEvenAndClamps) {
  TensorFactory tf;
  auto& x = tf.make<float>({6}, {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 1000.f});
  auto& out = tf.make<int8_t>({6});
  ASSERT_TRUE(call_kernel(kQ, {&x.ev, tf.d(1.0), tf.i(0), tf.i(-128), tf.i(127), tf.i(kInt8),
                               &out.ev}).ok());
  EXPECT_EQ(out.values<int8_t>(), (std::vector<int8_t>{0, 2, 2, 0, -2, 127}));
  auto& u = tf.make<uint8_t>({6});
  ASSERT_TRUE(call_kernel(kQ, {&x.ev, tf.d(0.5), tf.i(10), tf.i(0), tf.i(255), tf.i(kUInt8),
                               &u.ev}).ok());
  EXPECT_EQ(u.values<uint8_t>(), (std::vector<uint8_t>{11, 13, 15, 9, 5, 255}));
}

TEST(OpQuantizeTest, DequantizeRoundTrip) {
  TensorFactory tf;
  auto& q = tf.make<int8_t>({3}, {-128, 0, 127});
  auto& out = tf.make<float>({3});
  ASSERT_TRUE(call_kernel(kDq, {&q.ev, tf.d(0.5), tf.i(-1), tf.i(-128), tf.i(127), tf.i(kInt8),
                                tf.none(), &out.ev}).ok());
  EXPECT_EQ(out.values<float>(), (std::vector<float>{-63.5f, 0.5f, 64.f}));
}

TEST(OpQuantizeTest, PerChannelOnAxisOneChannelsLast) {
  TensorFactory tf;
  // [1, 2, 1, 2] in channels-last memory; channel c has scale c + 1.
  auto& x = tf.make<float>({1, 2, 1, 2}, {1.f, 2.f, 3.f, 4.f}, {0, 2, 3, 1});
  auto& scales = tf.make<float>({2}, {1.f, 2.f});
  auto& zps = tf.make<int64_t>({2}, {0, 1});
  auto& out = tf.make<int8_t>({1, 2, 1, 2});
  ASSERT_TRUE(call_kernel(kQc, {&x.ev, &scales.ev, &zps.ev, tf.i(1), tf.i(-127), tf.i(127),
                                tf.i(kInt8), &out.ev}).ok());
  // Logical values 1, 2 (channel 0), 3, 4 (channel 1): 1, 2, round(1.5)+1, 2+1.
  EXPECT_EQ(out.values<int8_t>(), (std::vector<int8_t>{1, 2, 3, 3}));
  auto& back = tf.make<float>({1, 2, 1, 2});
  ASSERT_TRUE(call_kernel(kDqc, {&out.ev, &scales.ev, tf.none(), tf.i(1), tf.i(-127), tf.i(127),
                                 tf.i(kInt8), tf.none(), &back.ev}).ok());
  EXPECT_EQ(back.values<float>(), (std::vector<float>{1.f, 2.f, 6.f, 6.f}));
}

TEST(OpQuantizeTest, ChooseQparams) {
  TensorFactory tf;
  auto& x = tf.make<float>({4}, {-1.f, 0.f, 2.f, 3.f});
  auto& scale = tf.make<double>({1});
  auto& zp = tf.make<int64_t>({1});
  EValue ret;
  Tensor* outs[2] = {&scale.t, &zp.t};
  ret.tag = Tag::TensorList;
  ret.as_tensor_list = TensorListRef{outs, 2};
  ASSERT_TRUE(call_kernel(kChoose, {&x.ev, tf.i(-128), tf.i(127), tf.d(1e-7), tf.i(kInt8),
                                    &scale.ev, &zp.ev, &ret}, false).ok());
  const float s = 4.f / 255.f;
  EXPECT_EQ(scale.values<double>()[0], static_cast<double>(s));
  EXPECT_EQ(zp.values<int64_t>()[0], -128 - static_cast<int64_t>(std::nearbyint(-1.f / s)));
}

TEST(OpQuantizeTest, ChooseQparamsPrepareRefusesInvalidArguments) {
  TensorFactory tf;
  auto& x = tf.make<float>({2}, {-1.f, 1.f});
  auto& scale = tf.make<double>({1});
  auto& zp = tf.make<int64_t>({1});
  EValue ret;
  Tensor* outs[2] = {&scale.t, &zp.t};
  ret.tag = Tag::TensorList;
  ret.as_tensor_list = TensorListRef{outs, 2};
  const auto choose = [&](int64_t qmin, int64_t qmax, double eps, int64_t dtype) {
    return call_kernel(kChoose, {&x.ev, tf.i(qmin), tf.i(qmax), tf.d(eps), tf.i(dtype), &scale.ev,
                                 &zp.ev, &ret}, false);
  };
  const CallResult r = choose(1, 127, 1e-7, kInt8);
  EXPECT_EQ(r.error, Error::InvalidProgram);  // Refused at load, before any run.
  EXPECT_KERNEL_FAILS(r, kChoose, "[quant_min, quant_max] = [1, 127] must contain 0");
  EXPECT_KERNEL_FAILS(choose(-128, 127, 0.0, kInt8), kChoose, "eps 0 must be finite and > 0");
  EXPECT_KERNEL_FAILS(choose(-128, 127, 1e-7, static_cast<int64_t>(ScalarType::Float)), kChoose,
                      "dtype must be a quantized integer dtype");
}

TEST(OpQuantizeTest, RefusesInvalidParameters) {
  TensorFactory tf;
  auto& x = tf.make<float>({2});
  auto& out = tf.make<int8_t>({2});
  const auto q = [&](EValue* scale, int64_t zp, int64_t qmin, int64_t qmax) {
    return call_kernel(kQ, {&x.ev, scale, tf.i(zp), tf.i(qmin), tf.i(qmax), tf.i(kInt8), &out.ev});
  };
  EXPECT_KERNEL_FAILS(q(tf.d(0.0), 0, -128, 127), kQ, "scale 0 must be finite and > 0");
  EXPECT_KERNEL_FAILS(q(tf.d(-1.0), 0, -128, 127), kQ, "scale -1");
  EXPECT_KERNEL_FAILS(q(tf.d(NAN), 0, -128, 127), kQ, "scale nan");
  EXPECT_KERNEL_FAILS(q(tf.d(1.0), 200, -128, 127), kQ, "zero_point 200 is outside int8");
  EXPECT_KERNEL_FAILS(q(tf.d(1.0), 0, -300, 127), kQ, "quant_min");
  auto& f = tf.make<float>({2});
  EXPECT_KERNEL_FAILS(call_kernel(kQ, {&x.ev, tf.d(1.0), tf.i(0), tf.i(-128), tf.i(127),
                                       tf.i(kInt8), &f.ev}), kQ, "out: dtype float32");
}

TEST(OpQuantizeTest, PrepareReadsOnlyConstantTensors) {
  TensorFactory tf;
  auto& q = tf.make<int8_t>({2});
  auto& scales = tf.make<float>({2}, {1.f, -1.f});
  auto& zps = tf.make<int64_t>({2}, {0, 0});
  auto& out = tf.make<float>({2});
  EValue* args[] = {&q.ev,        &scales.ev,  &zps.ev, tf.i(0), tf.i(-127),
                    tf.i(127),    tf.i(kInt8), tf.none(), &out.ev, &out.ev};
  const Kernel* k = find_kernel(kDqc);
  ASSERT_NE(k, nullptr);
  ASSERT_NE(k->prepare, nullptr);
  bool constant[10] = {};
  const auto prepare = [&] {
    KernelPrepareContext ctx(kDqc, nullptr, args, constant, 10, nullptr);
    return k->prepare(ctx, args);
  };
  EXPECT_EQ(prepare(), Error::Ok);  // scales not readable yet
  constant[1] = true;
  EXPECT_EQ(prepare(), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("scale[1] = -1"), std::string::npos)
      << last_error_message();
  // A scale that is not a constant is checked when the kernel runs.
  EXPECT_KERNEL_FAILS(call_kernel(kDqc, {&q.ev, &scales.ev, &zps.ev, tf.i(0), tf.i(-127),
                                         tf.i(127), tf.i(kInt8), tf.none(), &out.ev}),
                      kDqc, "scale[1] = -1");
}

}  // namespace
}  // namespace ember::testing
