// Test helper: builds Tensors and EValues over std::vector storage and calls
// kernels through the registry. Tests only (uses the STL freely).
//
// Values are given and read in logical row-major order whatever the dim
// order, so a channels-last tensor holds the same logical values as its
// contiguous twin and tests compare them directly.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/portable/util/half.h"
#include "runtime/core/evalue.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernel/kernel_signature.h"

namespace ember::testing {

/// n floats uniform in [-1, 1) from a fixed seed (the kernel tests' inputs).
inline std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

using kernels::portable::BFloat16;
using kernels::portable::Half;

template <typename T>
constexpr ScalarType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return ScalarType::Float;
  else if constexpr (std::is_same_v<T, double>) return ScalarType::Double;
  else if constexpr (std::is_same_v<T, Half>) return ScalarType::Half;
  else if constexpr (std::is_same_v<T, BFloat16>) return ScalarType::BFloat16;
  else if constexpr (std::is_same_v<T, uint8_t>) return ScalarType::Byte;
  else if constexpr (std::is_same_v<T, int8_t>) return ScalarType::Char;
  else if constexpr (std::is_same_v<T, int16_t>) return ScalarType::Short;
  else if constexpr (std::is_same_v<T, int32_t>) return ScalarType::Int;
  else if constexpr (std::is_same_v<T, int64_t>) return ScalarType::Long;
  else return ScalarType::Bool;
}

inline const std::vector<uint8_t> kChannelsLast = {0, 2, 3, 1};

/// A tensor owning its metadata and data.
struct TestTensor {
  std::vector<int32_t> sizes;
  std::vector<uint8_t> dim_order;
  std::vector<int64_t> strides;
  std::vector<uint8_t> bytes;
  Tensor t;
  EValue ev;

  TestTensor() = default;
  TestTensor(const TestTensor&) = delete;
  TestTensor& operator=(const TestTensor&) = delete;

  /// Storage offset of logical (row-major) element i.
  int64_t offset_of(int64_t i) const {
    int64_t off = 0;
    for (int32_t d = t.dim - 1; d >= 0; --d) {
      off += (i % sizes[d]) * strides[d];
      i /= sizes[d];
    }
    return off;
  }

  /// Values in logical row-major order, as T.
  template <typename T>
  std::vector<T> values() const {
    std::vector<T> v;
    const T* p = static_cast<const T*>(t.data);
    for (int64_t i = 0; i < t.numel; ++i) v.push_back(p[offset_of(i)]);
    return v;
  }

  /// Values converted to double (for any dtype).
  template <typename T>
  std::vector<double> as_doubles() const {
    std::vector<double> v;
    for (const T& x : values<T>()) v.push_back(static_cast<double>(static_cast<float>(x)));
    return v;
  }
};

class TensorFactory {
 public:
  /// A tensor of `sizes` holding `values` (logical order; empty → zeros).
  template <typename T>
  TestTensor& make(std::vector<int32_t> sizes, std::vector<T> values = {},
                   std::vector<uint8_t> dim_order = {},
                   TensorShapeDynamism dynamism = TensorShapeDynamism::Static) {
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<uint8_t> bytes(values.begin(), values.end());  // vector<bool> has no data().
      return make_raw(ScalarType::Bool, sizes, dim_order, dynamism, bytes.data(), bytes.size(), 1);
    } else {
      return make_raw(dtype_of<T>(), sizes, dim_order, dynamism, values.data(), values.size(),
                      sizeof(T));
    }
  }

  /// float values converted to the storage type T (handy for Half/BFloat16).
  template <typename T>
  TestTensor& make_from_floats(std::vector<int32_t> sizes, const std::vector<float>& values,
                               std::vector<uint8_t> dim_order = {}) {
    std::vector<T> v;
    for (float f : values) v.push_back(T(f));
    return make<T>(sizes, v, dim_order);
  }

  /// A tensor of `dtype` filled with zero bytes (any dtype, e.g. an
  /// unsupported one for error tests).
  TestTensor& zeros(ScalarType dtype, std::vector<int32_t> sizes,
                    std::vector<uint8_t> dim_order = {},
                    TensorShapeDynamism dynamism = TensorShapeDynamism::Static,
                    size_t capacity_elements = 0) {
    TestTensor& tt = make_raw(dtype, sizes, dim_order, dynamism, nullptr, 0, 0);
    if (capacity_elements * element_size(dtype) > tt.bytes.size()) {
      tt.bytes.resize(capacity_elements * element_size(dtype));
      tt.t.data = tt.bytes.data();
      tt.t.capacity_bytes = tt.bytes.size();
    }
    return tt;
  }

  EValue* none() { return &values_.emplace_back(); }
  EValue* i(int64_t v) {
    EValue& e = values_.emplace_back();
    e.tag = Tag::Int;
    e.as_int = v;
    return &e;
  }
  EValue* d(double v) {
    EValue& e = values_.emplace_back();
    e.tag = Tag::Double;
    e.as_double = v;
    return &e;
  }
  EValue* b(bool v) {
    EValue& e = values_.emplace_back();
    e.tag = Tag::Bool;
    e.as_bool = v;
    return &e;
  }
  EValue* list(std::vector<int64_t> v) {
    auto& items = boxed_.emplace_back();
    for (int64_t x : v) items.push_back(i(x));
    auto& unboxed = unboxed_.emplace_back(v.size());
    EValue& e = values_.emplace_back();
    e.tag = Tag::IntList;
    e.as_int_list = BoxedIntList{items.data(), unboxed.data(), items.size()};
    return &e;
  }

 private:
  TestTensor& make_raw(ScalarType dtype, const std::vector<int32_t>& sizes,
                       std::vector<uint8_t> dim_order, TensorShapeDynamism dynamism,
                       const void* values, size_t count, size_t esize) {
    auto& tt = *tensors_.emplace_back(std::make_unique<TestTensor>());
    tt.sizes = sizes;
    if (dim_order.empty()) {
      dim_order.resize(sizes.size());
      std::iota(dim_order.begin(), dim_order.end(), 0);
    }
    tt.dim_order = dim_order;
    tt.strides.resize(sizes.size());
    // Keep pointers valid for 0-dim tensors.
    tt.sizes.reserve(1);
    tt.dim_order.reserve(1);
    tt.strides.reserve(1);
    Tensor& t = tt.t;
    t.dtype = dtype;
    t.dim = static_cast<int32_t>(sizes.size());
    t.sizes = tt.sizes.data();
    t.dim_order = tt.dim_order.data();
    t.strides = tt.strides.data();
    t.dynamism = dynamism;
    t.update_strides();
    tt.bytes.assign(static_cast<size_t>(t.numel) * element_size(dtype), 0);
    t.data = tt.bytes.empty() ? nullptr : tt.bytes.data();
    t.capacity_bytes = tt.bytes.size();
    if (count > 0) {
      if (static_cast<int64_t>(count) != t.numel) {
        ADD_FAILURE() << count << " values given for a tensor of " << t.numel << " elements";
      }
      for (int64_t i = 0; i < t.numel && i < static_cast<int64_t>(count); ++i) {
        std::memcpy(tt.bytes.data() + tt.offset_of(i) * esize,
                    static_cast<const uint8_t*>(values) + i * esize, esize);
      }
    }
    tt.ev.tag = Tag::Tensor;
    tt.ev.as_tensor = &t;
    return tt;
  }

  std::deque<std::unique_ptr<TestTensor>> tensors_;
  std::deque<EValue> values_;
  std::deque<std::vector<EValue*>> boxed_;
  std::deque<std::vector<int64_t>> unboxed_;
};

/// The result of calling a kernel: its failure code and the error message.
struct CallResult {
  Error error = Error::Ok;
  std::string message;
  bool ok() const { return error == Error::Ok; }
};

/// Calls kernel `name` with `args` plus the return slot (a copy of the last
/// argument, as the emitter passes for single-out ops), unless `add_return`
/// is false. Fails the test if the kernel is missing or its arg count differs.
/// Same with an explicit context (e.g. for randn's rng state).
/// Calls a kernel through the lifecycle load_method and execute give it: the
/// argument-kind check, the load-time check and prepare step (tensors at the
/// indices in `constants` count as program constants), then `runs` runs on
/// the one prepared state. A failure at any stage is the result.
inline CallResult call_kernel(KernelContext& ctx, const char* name, std::vector<EValue*> args,
                              bool add_return = true, std::vector<size_t> constants = {},
                              int runs = 1) {
  CallResult r;
  const Kernel* k = find_kernel(name);
  if (k == nullptr) {
    ADD_FAILURE() << "no kernel registered as " << name;
    r.error = Error::OperatorMissing;
    return r;
  }
  if (add_return && !args.empty()) args.push_back(args.back());
  if (k->num_args >= 0 && static_cast<size_t>(k->num_args) != args.size()) {
    ADD_FAILURE() << name << " expects " << k->num_args << " args, the test passes "
                  << args.size();
    r.error = Error::InvalidArgument;
    return r;
  }
  clear_error_message();
  const KernelSignature typed{k->name, k->kinds, k->arg_names};
  const KernelSignature* sig = k->kinds != nullptr ? &typed : find_kernel_signature(name);
  if (sig != nullptr) {
    r.error = check_kernel_arguments(*sig, args.data(), args.size());
    if (r.error != Error::Ok) {
      r.message = last_error_message();
      return r;
    }
  }
  bool constant[kMaxKernelArgs] = {};
  for (size_t i : constants) constant[i] = true;
  void* state = nullptr;
  static std::vector<uint8_t> method_memory;  // Reused: prepared state lives until the next call.
  if (k->prepare != nullptr) {
    method_memory.resize(size_t{64} << 20);
    MemoryAllocator allocator(method_memory.data(), method_memory.size());
    KernelPrepareContext pctx(k->name, &allocator, args.data(), constant, args.size(), nullptr);
    r.error = k->prepare(pctx, args.data());
    if (r.error != Error::Ok) {
      r.message = last_error_message();
      return r;
    }
    state = pctx.state();
  }
  for (int run = 0; run < runs; ++run) {
    ctx.reset(k->name);
    ctx.set_state(state);
    k->fn(ctx, args.data());
    if (ctx.failure() != Error::Ok) break;
  }
  r.error = ctx.failure();
  r.message = last_error_message();
  return r;
}

inline CallResult call_kernel(const char* name, std::vector<EValue*> args,
                              bool add_return = true) {
  KernelContext ctx(name);
  return call_kernel(ctx, name, std::move(args), add_return);
}

/// Expects a failure whose message starts with the op's name and contains `part`.
#define EXPECT_KERNEL_FAILS(result, op, part)                                  \
  do {                                                                         \
    const ::ember::testing::CallResult& r_ = (result);                         \
    EXPECT_FALSE(r_.ok()) << "expected " << (op) << " to fail";                \
    EXPECT_EQ(r_.message.rfind(op, 0), 0u) << r_.message;                      \
    EXPECT_NE(r_.message.find(part), std::string::npos) << r_.message;         \
  } while (0)

}  // namespace ember::testing
