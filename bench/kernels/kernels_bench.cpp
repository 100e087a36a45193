// Portable kernels called straight through the registry, at model-like sizes,
// single-threaded (the portable kernels have no threads). Each benchmark's
// name says op and shape; bench/models/run.py times the same ops in PyTorch
// eager and reads these numbers with --benchmark_format=json.
//
//   kernels_bench [--benchmark_filter=conv] [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_registry.h"

using namespace ember;

namespace {

// Owns tensors and values for one kernel call (bench only: the STL is fine here).
class Args {
 public:
  EValue* tensor(std::vector<int32_t> sizes, unsigned seed) {
    auto& s = *tensors_.emplace_back(std::make_unique<Storage>());
    s.sizes = std::move(sizes);
    for (size_t d = 0; d < s.sizes.size(); ++d) s.dim_order.push_back(static_cast<uint8_t>(d));
    s.strides.resize(s.sizes.size());
    s.t.dtype = ScalarType::Float;
    s.t.dim = static_cast<int32_t>(s.sizes.size());
    s.t.sizes = s.sizes.data();
    s.t.dim_order = s.dim_order.data();
    s.t.strides = s.strides.data();
    s.t.update_strides();
    s.data.resize(static_cast<size_t>(s.t.numel));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    for (float& v : s.data) v = uni(rng);
    s.t.data = s.data.data();
    s.t.capacity_bytes = s.data.size() * sizeof(float);
    return value([&](EValue& e) {
      e.tag = Tag::Tensor;
      e.as_tensor = &s.t;
    });
  }
  // An int64 tensor (pooling indices); contents are outputs only.
  EValue* long_tensor(std::vector<int32_t> sizes) {
    EValue* e = tensor(std::move(sizes), 0);
    Storage& st = *tensors_.back();
    st.data.assign(static_cast<size_t>(st.t.numel) * 2, 0.0f);  // 8 bytes per element
    st.t.dtype = ScalarType::Long;
    st.t.data = st.data.data();
    st.t.capacity_bytes = st.data.size() * sizeof(float);
    return e;
  }
  EValue* real(double v) {
    return value([&](EValue& e) {
      e.tag = Tag::Double;
      e.as_double = v;
    });
  }
  EValue* integer(int64_t v) {
    return value([&](EValue& e) {
      e.tag = Tag::Int;
      e.as_int = v;
    });
  }
  EValue* boolean(bool v) {
    return value([&](EValue& e) {
      e.tag = Tag::Bool;
      e.as_bool = v;
    });
  }
  EValue* string(const char* v) {
    return value([&](EValue& e) {
      e.tag = Tag::String;
      e.as_string = v;
    });
  }
  EValue* none() {
    return value([](EValue&) {});
  }
  EValue* int_list(std::vector<int64_t> items) {
    auto& l = *lists_.emplace_back(std::make_unique<List>());
    for (int64_t v : items) l.items.push_back(integer(v));
    l.unboxed.resize(items.size());
    return value([&](EValue& e) {
      e.tag = Tag::IntList;
      e.as_int_list = BoxedIntList{l.items.data(), l.unboxed.data(), l.items.size()};
    });
  }
  EValue** ptrs() { return ptrs_.data(); }
  void push(EValue* v) { ptrs_.push_back(v); }

 private:
  struct Storage {
    std::vector<int32_t> sizes;
    std::vector<uint8_t> dim_order;
    std::vector<int64_t> strides;
    std::vector<float> data;
    Tensor t;
  };
  struct List {
    std::vector<EValue*> items;
    std::vector<int64_t> unboxed;
  };
  template <typename F>
  EValue* value(F&& init) {
    EValue& e = values_.emplace_back();
    init(e);
    return &e;
  }
  std::deque<EValue> values_;  // Stable addresses.
  std::vector<std::unique_ptr<Storage>> tensors_;
  std::vector<std::unique_ptr<List>> lists_;
  std::vector<EValue*> ptrs_;
};

// Runs `op` with the argument list (the out tensor twice: as `out` and as the return).
void run_kernel(benchmark::State& state, const char* op, Args& a, double flops) {
  const Kernel* k = find_kernel(op);
  if (k == nullptr) {
    state.SkipWithError((std::string("kernel not registered: ") + op).c_str());
    return;
  }
  KernelContext ctx(op);
  k->fn(ctx, a.ptrs());
  if (ctx.failure() != Error::Ok) {
    state.SkipWithError((std::string(op) + " failed").c_str());
    return;
  }
  for (auto _ : state) {
    ctx.reset(op);
    k->fn(ctx, a.ptrs());
    benchmark::ClobberMemory();
  }
  if (flops > 0) {
    state.counters["GFLOPS"] =
        benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  }
}

int64_t numel(const std::vector<int32_t>& s) {
  int64_t n = 1;
  for (int32_t v : s) n *= v;
  return n;
}

// add/mul: self (shape a) op other (shape b) -> out (shape a).
void binary(benchmark::State& state, const char* op, std::vector<int32_t> a_shape,
            std::vector<int32_t> b_shape) {
  Args a;
  a.push(a.tensor(a_shape, 1));
  a.push(a.tensor(b_shape, 2));
  const bool is_add = std::string(op) == "aten::add.out";
  if (is_add) a.push(a.integer(1));
  EValue* out = a.tensor(a_shape, 3);
  a.push(out);
  a.push(out);
  run_kernel(state, op, a, 0);
  state.SetBytesProcessed(state.iterations() * numel(a_shape) * 3 * int64_t(sizeof(float)));
}

void unary(benchmark::State& state, const char* op, std::vector<int32_t> shape) {
  Args a;
  a.push(a.tensor(shape, 1));
  EValue* out = a.tensor(shape, 3);
  a.push(out);
  a.push(out);
  run_kernel(state, op, a, 0);
  state.SetBytesProcessed(state.iterations() * numel(shape) * 2 * int64_t(sizeof(float)));
}

// gelu with approximate = "none" or "tanh".
void gelu(benchmark::State& state, const char* approximate, std::vector<int32_t> shape) {
  Args a;
  a.push(a.tensor(shape, 1));
  a.push(a.string(approximate));
  EValue* out = a.tensor(shape, 3);
  a.push(out);
  a.push(out);
  run_kernel(state, "aten::gelu.out", a, 0);
  state.SetBytesProcessed(state.iterations() * numel(shape) * 2 * int64_t(sizeof(float)));
}

// _softmax / _log_softmax over `dim` (half_to_float = false).
void softmax(benchmark::State& state, const char* op, std::vector<int32_t> shape, int64_t dim) {
  Args a;
  a.push(a.tensor(shape, 1));
  a.push(a.integer(dim));
  a.push(a.boolean(false));
  EValue* out = a.tensor(shape, 3);
  a.push(out);
  a.push(out);
  run_kernel(state, op, a, 0);
  state.SetBytesProcessed(state.iterations() * numel(shape) * 2 * int64_t(sizeof(float)));
}

void mm(benchmark::State& state, int32_t m, int32_t k, int32_t n) {
  Args a;
  a.push(a.tensor({m, k}, 1));
  a.push(a.tensor({k, n}, 2));
  EValue* out = a.tensor({m, n}, 3);
  a.push(out);
  a.push(out);
  run_kernel(state, "aten::mm.out", a, 2.0 * m * n * k);
}

// addmm as nn.Linear lowers it: bias [n] + x [m, k] @ W^T [k, n] (W^T is a
// contiguous [k, n] here; permute_copy of the weight is a separate op).
void addmm(benchmark::State& state, int32_t m, int32_t k, int32_t n) {
  Args a;
  a.push(a.tensor({n}, 4));
  a.push(a.tensor({m, k}, 1));
  a.push(a.tensor({k, n}, 2));
  a.push(a.integer(1));
  a.push(a.integer(1));
  EValue* out = a.tensor({m, n}, 3);
  a.push(out);
  a.push(out);
  run_kernel(state, "aten::addmm.out", a, 2.0 * m * n * k);
}

// NCHW conv2d with bias, "same" padding.
void conv(benchmark::State& state, int32_t c_in, int32_t c_out, int32_t hw, int32_t kernel,
          int32_t groups, int32_t stride) {
  Args a;
  const int32_t pad = kernel / 2;
  const int32_t out_hw = (hw + 2 * pad - kernel) / stride + 1;
  a.push(a.tensor({1, c_in, hw, hw}, 1));
  a.push(a.tensor({c_out, c_in / groups, kernel, kernel}, 2));
  a.push(a.tensor({c_out}, 4));
  a.push(a.int_list({stride, stride}));
  a.push(a.int_list({pad, pad}));
  a.push(a.int_list({1, 1}));
  a.push(a.boolean(false));
  a.push(a.int_list({0, 0}));
  a.push(a.integer(groups));
  EValue* out = a.tensor({1, c_out, out_hw, out_hw}, 3);
  a.push(out);
  a.push(out);
  const double flops = 2.0 * c_out * out_hw * out_hw * (c_in / groups) * kernel * kernel;
  run_kernel(state, "aten::convolution.out", a, flops);
}

// bmm: [b, m, k] x [b, k, n] (ViT-B/16 attention: 12 heads, 197 tokens, 64 dims).
void bmm(benchmark::State& state, int32_t b, int32_t m, int32_t k, int32_t n) {
  Args a;
  a.push(a.tensor({b, m, k}, 1));
  a.push(a.tensor({b, k, n}, 2));
  EValue* out = a.tensor({b, m, n}, 3);
  a.push(out);
  a.push(out);
  run_kernel(state, "aten::bmm.out", a, 2.0 * b * m * n * k);
}

// max_pool2d_with_indices (ResNet stem: 3x3, stride 2, padding 1).
void max_pool(benchmark::State& state, std::vector<int32_t> shape, int64_t k, int64_t stride,
              int64_t pad) {
  Args a;
  const int32_t oh = static_cast<int32_t>((shape[2] + 2 * pad - k) / stride + 1);
  const int32_t ow = static_cast<int32_t>((shape[3] + 2 * pad - k) / stride + 1);
  a.push(a.tensor(shape, 1));
  a.push(a.int_list({k, k}));
  a.push(a.int_list({stride, stride}));
  a.push(a.int_list({pad, pad}));
  a.push(a.int_list({1, 1}));
  a.push(a.boolean(false));
  a.push(a.tensor({shape[0], shape[1], oh, ow}, 3));
  a.push(a.long_tensor({shape[0], shape[1], oh, ow}));
  a.push(a.none());
  run_kernel(state, "aten::max_pool2d_with_indices.out", a, 0);
}

void avg_pool(benchmark::State& state, std::vector<int32_t> shape, int64_t k, int64_t stride) {
  Args a;
  const int32_t oh = static_cast<int32_t>((shape[2] - k) / stride + 1);
  const int32_t ow = static_cast<int32_t>((shape[3] - k) / stride + 1);
  a.push(a.tensor(shape, 1));
  a.push(a.int_list({k, k}));
  a.push(a.int_list({stride, stride}));
  a.push(a.int_list({0, 0}));
  a.push(a.boolean(false));
  a.push(a.boolean(true));
  a.push(a.none());
  EValue* out = a.tensor({shape[0], shape[1], oh, ow}, 3);
  a.push(out);
  a.push(out);
  run_kernel(state, "aten::avg_pool2d.out", a, 0);
}

// native_layer_norm over the last dim (a transformer's [tokens, hidden]).
void layer_norm(benchmark::State& state, int32_t rows, int32_t hidden) {
  Args a;
  a.push(a.tensor({rows, hidden}, 1));
  a.push(a.int_list({hidden}));
  a.push(a.tensor({hidden}, 2));
  a.push(a.tensor({hidden}, 4));
  a.push(a.real(1e-5));
  a.push(a.tensor({rows, hidden}, 3));
  a.push(a.tensor({rows, 1}, 3));
  a.push(a.tensor({rows, 1}, 3));
  a.push(a.none());
  run_kernel(state, "aten::native_layer_norm.out", a, 0);
}

// mean.out over `dims` with keepdim (global average pooling: H, W of NCHW).
void mean(benchmark::State& state, std::vector<int32_t> shape, std::vector<int64_t> dims,
          std::vector<int32_t> out_shape) {
  Args a;
  a.push(a.tensor(shape, 1));
  a.push(a.int_list(dims));
  a.push(a.boolean(true));
  a.push(a.none());
  EValue* out = a.tensor(out_shape, 3);
  a.push(out);
  a.push(out);
  run_kernel(state, "aten::mean.out", a, 0);
}

void register_all() {
  using S = std::vector<int32_t>;
  struct BinaryCase {
    const char* name;
    S a, b;
  };
  const BinaryCase bin[] = {
      {"1x64x56x56", {1, 64, 56, 56}, {1, 64, 56, 56}},
      {"1x64x56x56_bcast_1x64x1x1", {1, 64, 56, 56}, {1, 64, 1, 1}},
      {"256x1024_bcast_1024", {256, 1024}, {1024}},
  };
  for (const char* op : {"aten::add.out", "aten::mul.out"}) {
    const std::string short_name = std::string(op).substr(6, 3);
    for (const BinaryCase& c : bin) {
      benchmark::RegisterBenchmark((short_name + "/" + c.name).c_str(),
                                   [op, c](benchmark::State& s) { binary(s, op, c.a, c.b); });
    }
  }
  const int mm_sizes[] = {64, 256, 512};
  for (int n : mm_sizes) {
    const std::string shape = std::to_string(n) + "x" + std::to_string(n) + "x" + std::to_string(n);
    benchmark::RegisterBenchmark(("mm/" + shape).c_str(),
                                 [n](benchmark::State& s) { mm(s, n, n, n); });
    benchmark::RegisterBenchmark(("addmm/" + shape).c_str(),
                                 [n](benchmark::State& s) { addmm(s, n, n, n); });
  }
  // A classifier head: [1, 1024] x [1024, 1000].
  benchmark::RegisterBenchmark("mm/1x1024x1000", [](benchmark::State& s) { mm(s, 1, 1024, 1000); });
  benchmark::RegisterBenchmark("addmm/1x1024x1000",
                               [](benchmark::State& s) { addmm(s, 1, 1024, 1000); });
  // SmallCNN's (examples/export_cnn.py) head: Linear(32*16*16, 10) on one image.
  benchmark::RegisterBenchmark("addmm/1x8192x10",
                               [](benchmark::State& s) { addmm(s, 1, 8192, 10); });
  benchmark::RegisterBenchmark("conv/3x3_64to64_56x56",
                               [](benchmark::State& s) { conv(s, 64, 64, 56, 3, 1, 1); });
  benchmark::RegisterBenchmark("conv/dw3x3_64ch_56x56",
                               [](benchmark::State& s) { conv(s, 64, 64, 56, 3, 64, 1); });
  benchmark::RegisterBenchmark("conv/1x1_64to64_56x56",
                               [](benchmark::State& s) { conv(s, 64, 64, 56, 1, 1, 1); });
  benchmark::RegisterBenchmark("conv/3x3_3to16_256x256",
                               [](benchmark::State& s) { conv(s, 3, 16, 256, 3, 1, 1); });
  for (const char* op : {"aten::relu.out", "aten::sigmoid.out", "aten::exp.out", "aten::tanh.out",
                         "aten::erf.out"}) {
    const std::string short_name = std::string(op).substr(6, std::string(op).find('.') - 6);
    benchmark::RegisterBenchmark((short_name + "/1x64x56x56").c_str(),
                                 [op](benchmark::State& s) { unary(s, op, {1, 64, 56, 56}); });
  }
  for (const char* mode : {"none", "tanh"}) {
    benchmark::RegisterBenchmark((std::string("gelu_") + mode + "/1x64x56x56").c_str(),
                                 [mode](benchmark::State& s) { gelu(s, mode, {1, 64, 56, 56}); });
  }
  // Rows of a classifier batch, ViT-B attention scores (odd row length) and a
  // channel softmax (dim 1 of NCHW: rows with stride H*W).
  struct SoftmaxCase {
    const char* name;
    S shape;
    int64_t dim;
  };
  const SoftmaxCase sm[] = {
      {"256x1024", {256, 1024}, -1},
      {"12x197x197", {12, 197, 197}, -1},
      {"1x64x56x56_dim1", {1, 64, 56, 56}, 1},
  };
  benchmark::RegisterBenchmark("bmm/12x197x64x197",
                               [](benchmark::State& s) { bmm(s, 12, 197, 64, 197); });
  benchmark::RegisterBenchmark("max_pool2d/1x64x112x112_k3s2p1", [](benchmark::State& s) {
    max_pool(s, {1, 64, 112, 112}, 3, 2, 1);
  });
  benchmark::RegisterBenchmark("avg_pool2d/1x64x56x56_k2s2",
                               [](benchmark::State& s) { avg_pool(s, {1, 64, 56, 56}, 2, 2); });
  benchmark::RegisterBenchmark("native_layer_norm/197x768",
                               [](benchmark::State& s) { layer_norm(s, 197, 768); });
  benchmark::RegisterBenchmark("mean/1x2048x7x7_hw", [](benchmark::State& s) {
    mean(s, {1, 2048, 7, 7}, {2, 3}, {1, 2048, 1, 1});
  });
  benchmark::RegisterBenchmark("mean/128x768_last",
                               [](benchmark::State& s) { mean(s, {128, 768}, {-1}, {128, 1}); });
  for (const char* op : {"aten::_softmax.out", "aten::_log_softmax.out"}) {
    const std::string short_name = std::string(op).substr(7, std::string(op).find('.') - 7);
    for (const SoftmaxCase& c : sm) {
      benchmark::RegisterBenchmark((short_name + "/" + c.name).c_str(),
                                   [op, c](benchmark::State& st) {
                                     softmax(st, op, c.shape, c.dim);
                                   });
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
