// The XNNPACK backend through its BackendInterface: blobs written by the
// graph writer, results against plain reference loops, the NCHW/NHWC
// boundary (contiguous and channels-last arguments), and the named errors
// for malformed blobs and wrong arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/xnnpack/blob_check.h"
#include "backends/xnnpack/graph_writer.h"
#include "backends/xnnpack/layout.h"
#include "extension/tensor/owned_tensor.h"
#include "runtime/backend/backend_interface.h"

namespace ember::backends::xnnpack {
namespace {

using extension::OwnedTensor;

std::span<const uint8_t> float_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

float* data_of(OwnedTensor& t) { return reinterpret_cast<float*>(t.bytes().data()); }

struct Harness {
  std::vector<uint8_t> pool = std::vector<uint8_t>(1 << 22);
  MemoryAllocator allocator{pool.data(), pool.size()};
  const BackendInterface* backend = find_backend("EmberXnnpackBackend");
  DelegateHandle* handle = nullptr;
  std::string init_error;

  ~Harness() {
    if (handle != nullptr) backend->destroy(handle);
  }

  Error init(const std::vector<uint8_t>& blob) {
    BackendInitContext ctx{&allocator, "forward"};
    FreeableBuffer buffer(blob.data(), blob.size());
    Result<DelegateHandle*> h = backend->init(ctx, &buffer, {});
    init_error = last_error_message();
    if (!h.ok()) return h.error();
    handle = h.get();
    return Error::Ok;
  }

  Error run(std::vector<OwnedTensor*> args) {
    std::vector<EValue> values(args.size());
    std::vector<EValue*> pointers;
    for (size_t i = 0; i < args.size(); ++i) {
      values[i].tag = Tag::Tensor;
      values[i].as_tensor = &args[i]->tensor();
      pointers.push_back(&values[i]);
    }
    BackendExecutionContext ctx{"forward", "EmberXnnpackBackend"};
    return backend->execute(ctx, handle, pointers);
  }
};

// conv2d 3x3 (pad 1, stride 1) + bias, clamped to [0, 6]: x [1, 2, 5, 5] ->
// [1, 3, 5, 5]. The weight is written [O, kh, kw, I] as XNNPACK takes it.
struct ConvCase {
  std::vector<float> weight_oihw = random_floats(3 * 2 * 3 * 3, 1);
  std::vector<float> bias = random_floats(3, 2);
  std::vector<float> weight_ohwi;

  ConvCase() {
    weight_ohwi.resize(weight_oihw.size());
    for (int o = 0; o < 3; ++o)
      for (int i = 0; i < 2; ++i)
        for (int y = 0; y < 3; ++y)
          for (int x = 0; x < 3; ++x)
            weight_ohwi[((o * 3 + y) * 3 + x) * 2 + i] = weight_oihw[((o * 2 + i) * 3 + y) * 3 + x];
  }

  GraphDesc graph() const {
    GraphDesc g;
    g.values = {{{1, 5, 5, 2}, -1}, {{3, 3, 3, 2}, 0}, {{3}, 1}, {{1, 5, 5, 3}, -1}};
    g.constants = {float_bytes(weight_ohwi), float_bytes(bias)};
    NodeDesc conv;
    conv.kind = "Convolution2d";
    conv.inputs = {0, 1, 2};
    conv.outputs = {3};
    conv.padding = {1, 1, 1, 1};
    conv.pooling = {3, 3};
    conv.stride = {1, 1};
    conv.dilation = {1, 1};
    conv.output_min = 0.0f;
    conv.output_max = 6.0f;
    g.nodes = {conv};
    g.inputs = {{0, true}};
    g.outputs = {{3, true}};
    return g;
  }

  // Reference on NCHW data.
  std::vector<float> expected(const float* x) const {
    std::vector<float> out(3 * 25);
    for (int o = 0; o < 3; ++o)
      for (int y = 0; y < 5; ++y)
        for (int xx = 0; xx < 5; ++xx) {
          double acc = bias[o];
          for (int i = 0; i < 2; ++i)
            for (int ky = 0; ky < 3; ++ky)
              for (int kx = 0; kx < 3; ++kx) {
                const int iy = y + ky - 1, ix = xx + kx - 1;
                if (iy < 0 || iy >= 5 || ix < 0 || ix >= 5) continue;
                acc += double{weight_oihw[((o * 2 + i) * 3 + ky) * 3 + kx]} * x[(i * 5 + iy) * 5 + ix];
              }
          out[(o * 5 + y) * 5 + xx] = static_cast<float>(std::min(6.0, std::max(0.0, acc)));
        }
    return out;
  }
};

std::vector<uint8_t> write(const GraphDesc& g) {
  std::string error;
  std::vector<uint8_t> blob = write_graph(g, &error);
  EXPECT_FALSE(blob.empty()) << error;
  return blob;
}

TEST(XnnpackBackend, IsRegisteredAndAvailable) {
  const BackendInterface* backend = find_backend("EmberXnnpackBackend");
  ASSERT_NE(backend, nullptr);
  EXPECT_TRUE(backend->is_available());
}

TEST(XnnpackBackend, ConvolutionWithClampMatchesReferenceAcrossLayouts) {
  ConvCase c;
  Harness h;
  ASSERT_EQ(h.init(write(c.graph())), Error::Ok) << h.init_error;
  const int32_t in_sizes[] = {1, 2, 5, 5}, out_sizes[] = {1, 3, 5, 5};
  OwnedTensor x(ScalarType::Float, in_sizes), y(ScalarType::Float, out_sizes);
  const std::vector<float> input = random_floats(50, 3);
  std::memcpy(data_of(x), input.data(), 50 * sizeof(float));
  ASSERT_EQ(h.run({&x, &y}), Error::Ok) << last_error_message();
  const std::vector<float> want = c.expected(input.data());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(data_of(y)[i], want[i], 1e-5f) << i;

  // Channels-last arguments are NHWC already and are bound without copies.
  const uint8_t cl[] = {0, 2, 3, 1};
  OwnedTensor xc(ScalarType::Float, in_sizes, cl), yc(ScalarType::Float, out_sizes, cl);
  for (int ch = 0; ch < 2; ++ch)
    for (int s = 0; s < 25; ++s) data_of(xc)[s * 2 + ch] = input[ch * 25 + s];
  ASSERT_EQ(h.run({&xc, &yc}), Error::Ok) << last_error_message();
  for (int ch = 0; ch < 3; ++ch)
    for (int s = 0; s < 25; ++s) EXPECT_NEAR(data_of(yc)[s * 3 + ch], want[ch * 25 + s], 1e-5f);
}

TEST(XnnpackBackend, FullyConnectedAndAdd) {
  // y = x @ W^T + b, then + z (broadcast [3] over [2, 3]).
  const std::vector<float> w = random_floats(12, 4), b = random_floats(3, 5), z = random_floats(3, 6);
  GraphDesc g;
  g.values = {{{2, 4}, -1}, {{3, 4}, 0}, {{3}, 1}, {{2, 3}, -1}, {{3}, 2}, {{2, 3}, -1}};
  g.constants = {float_bytes(w), float_bytes(b), float_bytes(z)};
  NodeDesc fc, add;
  fc.kind = "FullyConnected";
  fc.inputs = {0, 1, 2};
  fc.outputs = {3};
  add.kind = "Add";
  add.inputs = {3, 4};
  add.outputs = {5};
  g.nodes = {fc, add};
  g.inputs = {{0, false}};
  g.outputs = {{5, false}};
  Harness h;
  ASSERT_EQ(h.init(write(g)), Error::Ok) << h.init_error;
  const int32_t in_sizes[] = {2, 4}, out_sizes[] = {2, 3};
  OwnedTensor x(ScalarType::Float, in_sizes), y(ScalarType::Float, out_sizes);
  const std::vector<float> input = random_floats(8, 7);
  std::memcpy(data_of(x), input.data(), 8 * sizeof(float));
  ASSERT_EQ(h.run({&x, &y}), Error::Ok) << last_error_message();
  for (int r = 0; r < 2; ++r)
    for (int o = 0; o < 3; ++o) {
      double acc = b[o] + z[o];
      for (int k = 0; k < 4; ++k) acc += double{input[r * 4 + k]} * w[o * 4 + k];
      EXPECT_NEAR(data_of(y)[r * 3 + o], acc, 1e-5) << r << "," << o;
    }
}

TEST(XnnpackBackend, WrongArgumentsAreNamedAndTheDelegateStaysUsable) {
  ConvCase c;
  Harness h;
  ASSERT_EQ(h.init(write(c.graph())), Error::Ok) << h.init_error;
  const int32_t in_sizes[] = {1, 2, 5, 5}, out_sizes[] = {1, 3, 5, 5}, bad[] = {1, 2, 4, 5};
  OwnedTensor x(ScalarType::Float, in_sizes), y(ScalarType::Float, out_sizes);
  OwnedTensor wrong_shape(ScalarType::Float, bad), wrong_dtype(ScalarType::Double, in_sizes);
  EXPECT_EQ(h.run({&wrong_shape, &y}), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("input 0 has shape [1, 2, 4, 5]"),
            std::string::npos) << last_error_message();
  EXPECT_EQ(h.run({&wrong_dtype, &y}), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("dtype"), std::string::npos);
  EXPECT_EQ(h.run({&x}), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("1 arguments"), std::string::npos);
  const uint8_t odd[] = {0, 3, 1, 2};
  OwnedTensor odd_order(ScalarType::Float, in_sizes, odd);
  EXPECT_EQ(h.run({&odd_order, &y}), Error::InvalidArgument);
  EXPECT_EQ(h.run({&x, &y}), Error::Ok);
}

struct BadBlob {
  const char* name;
  std::vector<uint8_t> blob;
  const char* message;
};

TEST(XnnpackBackend, MalformedBlobsAreRefusedWithTheReason) {
  ConvCase c;
  const std::vector<uint8_t> good = write(c.graph());
  std::vector<BadBlob> cases;
  cases.push_back({"empty", {}, "no 'EXN1' identifier"});
  {
    std::vector<uint8_t> b = good;
    b[4] = 'X';
    cases.push_back({"identifier", b, "no 'EXN1' identifier"});
  }
  {
    std::vector<uint8_t> b(good.begin(), good.begin() + static_cast<long>(good.size() / 2));
    cases.push_back({"truncated", b, "FlatBuffer verification"});
  }
  {
    GraphDesc g = c.graph();
    g.nodes[0].padding = {1, 1};
    cases.push_back({"padding", write(g), "needs padding[4]"});
  }
  {
    GraphDesc g = c.graph();
    g.nodes[0].output_min = 7.0f;
    cases.push_back({"range", write(g), "output range [7, 6]"});
  }
  {
    GraphDesc g = c.graph();
    g.values[0].dims = {1, 1, 1, 1, 1, 1, 2};
    cases.push_back({"rank", write(g), "rank 7"});
  }
  {
    // 2^20 * 2^20 * 2^24 wraps to 0 in 64 bits: must still be refused.
    GraphDesc g = c.graph();
    g.values.push_back({{1u << 20, 1u << 20, 1u << 24}, -1});
    cases.push_back({"wrapping-numel", write(g), "value 4 has more than 2^40 elements"});
  }
  {
    GraphDesc g = c.graph();
    g.outputs = {{0, false}};
    cases.push_back({"twice", write(g), "delegate argument twice"});
  }
  {
    GraphDesc g = c.graph();
    g.nodes[0].inputs = {0, 1};
    cases.push_back({"arity", write(g), "has 2 inputs and 1 outputs; expected 3"});
  }
  {
    GraphDesc g = c.graph();
    g.nodes[0].stride = {0, 1};
    cases.push_back({"stride", write(g), "node 0 (Convolution2d): input [1, 5, 5, 2]"});
  }
  {
    // A declared output smaller than what the convolution writes.
    GraphDesc g = c.graph();
    g.values[3].dims = {1, 5, 5, 1};
    cases.push_back({"output", write(g), "do not give the declared output [1, 5, 5, 1]"});
  }
  {
    GraphDesc g = c.graph();
    g.values.push_back({{1, 5, 5, 2}, -1});
    g.nodes[0].inputs[0] = 4;  // never defined
    cases.push_back({"undefined", write(g), "reads value 4 before anything defines it"});
  }
  {
    GraphDesc g = c.graph();
    g.values.push_back({{1, 5, 5, 3}, -1});
    g.outputs.push_back({4, true});  // nobody computes it
    cases.push_back({"unwritten", write(g), "output 1 (value 4) is not computed"});
  }
  {
    GraphDesc g = c.graph();
    g.nodes.push_back(g.nodes[0]);  // writes value 3 twice
    cases.push_back({"twice-written", write(g), "writes value 3, which is already defined"});
  }
  {
    GraphDesc g = c.graph();
    g.nodes[0].pooling = {70000, 3};
    cases.push_back({"window", write(g), "node 0 (Convolution2d)"});
  }
  for (const BadBlob& bad : cases) {
    Harness h;
    EXPECT_EQ(h.init(bad.blob), Error::DelegateInvalidCompatibility) << bad.name;
    EXPECT_NE(h.init_error.find(bad.message), std::string::npos)
        << bad.name << ": " << h.init_error;
    // The ahead-of-time check refuses it with the same reason.
    std::vector<uint64_t> aligned(bad.blob.size() / 8 + 1);
    if (!bad.blob.empty()) std::memcpy(aligned.data(), bad.blob.data(), bad.blob.size());
    BackendInitContext ctx{&h.allocator, "preprocess"};
    EXPECT_EQ(check_graph_blob(ctx, aligned.data(), bad.blob.size()),
              Error::DelegateInvalidCompatibility) << bad.name;
    const std::string message = last_error_message();
    EXPECT_NE(message.find(bad.message), std::string::npos) << bad.name << ": " << message;
  }
}

TEST(XnnpackBackend, CheckAcceptsWhatInitAcceptsAndAppliesTheDimOrderRule) {
  ConvCase c;
  const std::vector<uint8_t> blob = write(c.graph());
  std::vector<uint8_t> pool(1 << 20);
  const std::vector<uint8_t> contiguous = {0, 1, 2, 3}, channels_last = {0, 2, 3, 1},
                             other = {0, 3, 1, 2};
  auto check = [&](std::vector<std::span<const uint8_t>> orders) {
    MemoryAllocator allocator(pool.data(), pool.size());
    BackendInitContext ctx{&allocator, "preprocess"};
    return check_graph_blob(ctx, blob.data(), blob.size(), orders);
  };
  EXPECT_EQ(check({}), Error::Ok);
  EXPECT_EQ(check({contiguous, contiguous}), Error::Ok);
  EXPECT_EQ(check({channels_last, channels_last}), Error::Ok);
  EXPECT_EQ(check({other, contiguous}), Error::DelegateInvalidCompatibility);
  EXPECT_NE(std::string(last_error_message()).find("input 0 has dim order (0, 3, 1, 2)"),
            std::string::npos) << last_error_message();
  EXPECT_EQ(check({contiguous}), Error::DelegateInvalidCompatibility);
  EXPECT_NE(std::string(last_error_message()).find("1 argument dim orders"), std::string::npos);
  // A natural-layout value (not NHWC inside) reads contiguous memory only.
  EXPECT_EQ(argument_layout(false, 4, channels_last.data()), ArgumentLayout::kUnreadable);
  EXPECT_EQ(argument_layout(true, 4, channels_last.data()), ArgumentLayout::kAsIs);
  EXPECT_EQ(argument_layout(true, 4, contiguous.data()), ArgumentLayout::kConvert);
  EXPECT_EQ(argument_layout(false, 4, contiguous.data()), ArgumentLayout::kAsIs);
}

TEST(XnnpackBackend, WriterRejectsInconsistentGraphs) {
  ConvCase c;
  GraphDesc g = c.graph();
  g.nodes[0].kind = "Transpose";
  std::string error;
  EXPECT_TRUE(write_graph(g, &error).empty());
  EXPECT_NE(error.find("unknown kind 'Transpose'"), std::string::npos) << error;
  g = c.graph();
  g.nodes[0].inputs = {0, 9, 2};
  EXPECT_TRUE(write_graph(g, &error).empty());
  EXPECT_NE(error.find("missing value 9"), std::string::npos) << error;
  g = c.graph();
  g.values[2].dims = {5};
  EXPECT_TRUE(write_graph(g, &error).empty());
  EXPECT_NE(error.find("wrong size"), std::string::npos) << error;
}

}  // namespace
}  // namespace ember::backends::xnnpack
