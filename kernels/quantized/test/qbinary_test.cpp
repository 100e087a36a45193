// qbinary.h's spans (ember_quantized::add and ::mul) against the scalar
// definition written out here, at every length up to a few vectors (vector
// bodies, masked and scalar tails), with b as a span and as one broadcast
// value, on parameters that make half of the results rounding ties. ctest
// runs this at every ISA level the host has (EMBER_ISA), so each vector span
// is held to the same bits. Outputs are sized exactly so ASan sees a write
// past them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/quantized/util/qbinary.h"

namespace ember::kernels::quantized {
namespace {

// dequantize_per_tensor, the float op, quantize_per_tensor: eager's chain.
int8_t reference(QBinaryOp op, int8_t a, int8_t b, const QBinaryArgs& q) {
  const float x = (static_cast<float>(a) - static_cast<float>(q.a_zero_point)) *
                  static_cast<float>(q.a_scale);
  const float y = (static_cast<float>(b) - static_cast<float>(q.b_zero_point)) *
                  static_cast<float>(q.b_scale);
  const float v = (op == QBinaryOp::kAdd ? x + y : x * y) * static_cast<float>(1.0 / q.output_scale);
  float r = std::nearbyint(v) + static_cast<float>(q.output_zero_point);  // half to even
  r = std::fmin(std::fmax(r, static_cast<float>(q.output_min)), static_cast<float>(q.output_max));
  return static_cast<int8_t>(r);
}

void check_spans(QBinaryOp op, const QBinaryArgs& q) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(-128, 127);
  for (int64_t n = 0; n <= 70; ++n) {
    for (bool scalar : {false, true}) {
      SCOPED_TRACE("n " + std::to_string(n) + (scalar ? ", b broadcast" : ""));
      std::vector<int8_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(scalar ? 1 : n));
      for (auto& v : a) v = static_cast<int8_t>(byte(rng));
      for (auto& v : b) v = static_cast<int8_t>(byte(rng));
      auto out = std::make_unique<int8_t[]>(static_cast<size_t>(n));
      qbinary_span(op, a.data(), b.data(), scalar, out.get(), n, q);
      for (int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<size_t>(i);
        ASSERT_EQ(out[k], reference(op, a[k], b[scalar ? 0 : k], q)) << "element " << i;
      }
    }
  }
}

TEST(QBinaryTest, AddSpansMatchTheDefinition) {
  check_spans(QBinaryOp::kAdd, {0.04, -3, 0.07, 12, 0.09, -9, -128, 127});
  // Every sum a multiple of 0.5, and a clamped range (a fused relu).
  check_spans(QBinaryOp::kAdd, {0.5, 1, 0.5, -2, 1.0, 3, -9, 127});
}

TEST(QBinaryTest, MulSpansMatchTheDefinition) {
  check_spans(QBinaryOp::kMul, {0.04, -3, 0.07, 12, 1.5, -9, -128, 127});
  // Products of halves: many land on .25/.5/.75 of a step, ties among them.
  check_spans(QBinaryOp::kMul, {0.5, 1, 0.5, -2, 2.0, 3, -100, 100});
}

}  // namespace
}  // namespace ember::kernels::quantized
