// Proves that set_input(), execute() and get_output() never touch the heap,
// for the tutorial's programs (tests/programs/*.pte): this binary interposes
// malloc and friends and counts calls while a flag is set.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "extension/devtools/intermediate_outputs.h"
#include "extension/module/module.h"
#include "extension/tensor/owned_tensor.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernel/thread_pool.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
[[maybe_unused]] void note() {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
}
}  // namespace

#if !defined(__SANITIZE_ADDRESS__)
extern "C" {
void* malloc(size_t n) {
  note();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t m) {
  note();
  return __libc_calloc(n, m);
}
void* realloc(void* p, size_t n) {
  note();
  return __libc_realloc(p, n);
}
void* aligned_alloc(size_t a, size_t n) {
  note();
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  note();
  *out = __libc_memalign(a, n);
  return *out == nullptr ? 12 : 0;
}
}
#endif

namespace ember {
namespace {

// tests/programs/<file>'s forward, loaded, with zero inputs of its shapes.
struct LoadedForward {
  std::unique_ptr<extension::Module> module;
  Method* method = nullptr;
  std::vector<extension::OwnedTensor> inputs;

  explicit LoadedForward(const char* file) {
    const std::filesystem::path dir =
        std::filesystem::path(EMBER_SOURCE_DIR) / "tests/programs";
    auto loaded = extension::Module::load((dir / file).string());
    if (!loaded.ok()) return;
    module = std::move(loaded.get());
    Result<Method*> m = module->method("forward");
    if (!m.ok()) return;
    method = m.get();
    const MethodMeta meta = method->method_meta();
    for (size_t i = 0; i < meta.num_inputs(); ++i) {
      TensorInfo info = meta.input_tensor_info(i).get();
      inputs.emplace_back(info.dtype, info.sizes, info.dim_order);
    }
  }
  Error set_inputs() {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (const Error err = method->set_input(i, inputs[i].tensor()); err != Error::Ok) return err;
    }
    return Error::Ok;
  }
};

// The hook itself must see allocations, or the test below proves nothing.
TEST(ExecuteAllocationTest, CounterSeesHeapAllocations) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan owns malloc in this build";
#endif
  g_allocations = 0;
  g_counting = true;
  std::vector<int>* v = new std::vector<int>(100);
  void* p = std::malloc(64);
  g_counting = false;
  std::free(p);
  delete v;
  EXPECT_GE(g_allocations.load(), 3);
}

TEST(ExecuteAllocationTest, TutorialProgramsRunWithoutHeapAllocation) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan owns malloc in this build";
#endif
  const std::filesystem::path dir = std::filesystem::path(EMBER_SOURCE_DIR) / "tests/programs";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".pte") continue;
    auto module = extension::Module::load(entry.path().string());
    ASSERT_TRUE(module.ok()) << entry.path() << ": " << last_error_message();
    for (const std::string& name : module.get()->method_names()) {
      Result<Method*> method = module.get()->method(name);
      ASSERT_TRUE(method.ok()) << entry.path() << " " << name << ": " << last_error_message();
      const MethodMeta meta = method.get()->method_meta();
      std::vector<extension::OwnedTensor> inputs;
      for (size_t i = 0; i < meta.num_inputs(); ++i) {
        TensorInfo info = meta.input_tensor_info(i).get();
        inputs.emplace_back(info.dtype, info.sizes, info.dim_order);
      }
      g_allocations = 0;
      g_counting = true;
      for (int run = 0; run < 3; ++run) {
        for (size_t i = 0; i < inputs.size(); ++i) {
          ASSERT_EQ(method.get()->set_input(i, inputs[i].tensor()), Error::Ok);
        }
        ASSERT_EQ(method.get()->execute(), Error::Ok) << last_error_message();
        for (size_t i = 0; i < method.get()->outputs_size(); ++i) {
          ASSERT_TRUE(method.get()->get_output(i).ok());
        }
      }
      g_counting = false;
      EXPECT_EQ(g_allocations.load(), 0) << entry.path() << " method " << name;
      ++checked;
    }
  }
  EXPECT_GE(checked, 5);
}

// Capturing every instruction's outputs (numerical debugging) copies into
// storage sized before execute: the run still allocates nothing.
TEST(ExecuteAllocationTest, CapturingOutputsRunsWithoutHeapAllocation) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan owns malloc in this build";
#endif
  int checked = 0;
  for (const char* file : {"m.pte", "simple_conv.pte", "xnnpack_cnn.pte"}) {
    LoadedForward f(file);
    ASSERT_NE(f.method, nullptr) << file << ": " << last_error_message();
    const extension::CaptureSize size = extension::IntermediateOutputRecorder::one_run(*f.method);
    std::vector<extension::CapturedOutput> records(size.records);
    std::vector<uint8_t> bytes(size.bytes);
    extension::IntermediateOutputRecorder recorder(*f.method, records, bytes);
    f.method->set_output_logger(&recorder);
    g_allocations = 0;
    g_counting = true;
    ASSERT_EQ(f.set_inputs(), Error::Ok);
    ASSERT_EQ(f.method->execute(), Error::Ok) << last_error_message();
    g_counting = false;
    f.method->set_output_logger(nullptr);
    EXPECT_EQ(g_allocations.load(), 0) << file;
    EXPECT_GT(recorder.captured().size(), 0u) << file;
    EXPECT_EQ(recorder.dropped(), 0u) << file;
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

// Profiling (an event tracer with storage sized from profile_events_per_run,
// the XNNPACK delegate's own events included) allocates nothing either, and
// the storage fits every event.
TEST(ExecuteAllocationTest, ProfilingRunsWithoutHeapAllocation) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan owns malloc in this build";
#endif
  for (const char* file : {"m.pte", "simple_conv.pte", "xnnpack_cnn.pte"}) {
    LoadedForward f(file);
    ASSERT_NE(f.method, nullptr) << file << ": " << last_error_message();
    constexpr int kRuns = 3;
    std::vector<ProfileEvent> events(f.method->profile_events_per_run() * kRuns);
    EventTracer tracer(events.data(), events.size());
    f.method->set_event_tracer(&tracer);
    g_allocations = 0;
    g_counting = true;
    for (int run = 0; run < kRuns; ++run) {
      ASSERT_EQ(f.set_inputs(), Error::Ok);
      ASSERT_EQ(f.method->execute(), Error::Ok) << last_error_message();
    }
    g_counting = false;
    f.method->set_event_tracer(nullptr);
    EXPECT_EQ(g_allocations.load(), 0) << file;
    EXPECT_GT(tracer.size(), 0u) << file;
    EXPECT_EQ(tracer.dropped(), 0u) << file;
  }
}

// The tutorial programs are too small to wake the thread pool; a product
// above the parallel threshold on a 2-thread pool must not allocate either.
TEST(ExecuteAllocationTest, KernelsOnTheThreadPoolRunWithoutHeapAllocation) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan owns malloc in this build";
#endif
  if (!threads_supported()) GTEST_SKIP() << "single-threaded build (EMBER_THREADS=OFF)";
  ThreadPool* pool = thread_pool_create(2);
  ASSERT_NE(pool, nullptr);
  const int32_t a_sizes[] = {256, 384}, b_sizes[] = {384, 320}, c_sizes[] = {256, 320};
  extension::OwnedTensor a(ScalarType::Float, a_sizes), b(ScalarType::Float, b_sizes),
      c(ScalarType::Float, c_sizes);
  EValue args[4];
  Tensor* tensors[] = {&a.tensor(), &b.tensor(), &c.tensor(), &c.tensor()};
  EValue* ptrs[4];
  for (int i = 0; i < 4; ++i) {
    args[i].tag = Tag::Tensor;
    args[i].as_tensor = tensors[i];
    ptrs[i] = &args[i];
  }
  const Kernel* mm = find_kernel("aten::mm.out");
  ASSERT_NE(mm, nullptr);
  KernelContext ctx("aten::mm.out");
  ctx.set_thread_pool(pool);
  mm->fn(ctx, ptrs);  // Warm-up: the pool's threads have started.
  ASSERT_EQ(ctx.failure(), Error::Ok);
  g_allocations = 0;
  g_counting = true;
  for (int run = 0; run < 3; ++run) mm->fn(ctx, ptrs);
  g_counting = false;
  EXPECT_EQ(ctx.failure(), Error::Ok);
  EXPECT_EQ(g_allocations.load(), 0);
  thread_pool_destroy(pool);
}

// Transposed convolution: the float32 GEMM path (stack column blocks) on a
// 2-thread pool and the direct path (float16) must not allocate.
TEST(ExecuteAllocationTest, TransposedConvolutionRunsWithoutHeapAllocation) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan owns malloc in this build";
#endif
  if (!threads_supported()) GTEST_SKIP() << "single-threaded build (EMBER_THREADS=OFF)";
  ThreadPool* pool = thread_pool_create(2);
  ASSERT_NE(pool, nullptr);
  const Kernel* conv = find_kernel("aten::convolution.out");
  ASSERT_NE(conv, nullptr);
  for (ScalarType dtype : {ScalarType::Float, ScalarType::Half}) {
    const int32_t x_sizes[] = {2, 64, 16, 16}, w_sizes[] = {64, 32, 4, 4},
                  b_sizes[] = {32}, o_sizes[] = {2, 32, 32, 32};
    extension::OwnedTensor x(dtype, x_sizes), w(dtype, w_sizes), b(dtype, b_sizes),
        o(dtype, o_sizes);
    // stride [2, 2], padding [1, 1], dilation [1, 1], output_padding [0, 0].
    EValue ints[4][2];
    int64_t unboxed[4][2];
    EValue* items[4][2];
    const int64_t values[4] = {2, 1, 1, 0};
    EValue args[11];
    for (int l = 0; l < 4; ++l) {
      for (int j = 0; j < 2; ++j) {
        ints[l][j].tag = Tag::Int;
        ints[l][j].as_int = values[l];
        items[l][j] = &ints[l][j];
      }
      args[l == 3 ? 7 : 3 + l].tag = Tag::IntList;
      args[l == 3 ? 7 : 3 + l].as_int_list = BoxedIntList{items[l], unboxed[l], 2};
    }
    Tensor* tensors[] = {&x.tensor(), &w.tensor(), &b.tensor()};
    for (int i = 0; i < 3; ++i) {
      args[i].tag = Tag::Tensor;
      args[i].as_tensor = tensors[i];
    }
    args[6].tag = Tag::Bool;
    args[6].as_bool = true;
    args[8].tag = Tag::Int;
    args[8].as_int = 1;
    args[9].tag = Tag::Tensor;
    args[9].as_tensor = &o.tensor();
    args[10] = args[9];
    EValue* ptrs[11];
    for (int i = 0; i < 11; ++i) ptrs[i] = &args[i];
    KernelContext ctx("aten::convolution.out");
    ctx.set_thread_pool(pool);
    conv->fn(ctx, ptrs);  // Warm-up: the pool's threads have started.
    ASSERT_EQ(ctx.failure(), Error::Ok) << last_error_message();
    g_allocations = 0;
    g_counting = true;
    for (int run = 0; run < 3; ++run) conv->fn(ctx, ptrs);
    g_counting = false;
    EXPECT_EQ(ctx.failure(), Error::Ok);
    EXPECT_EQ(g_allocations.load(), 0) << scalar_type_name(dtype);
  }
  thread_pool_destroy(pool);
}

}  // namespace
}  // namespace ember
