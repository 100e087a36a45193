// Proves that set_input(), execute() and get_output() never touch the heap,
// for the tutorial's programs (tests/programs/*.pte): this binary interposes
// malloc and friends and counts calls while a flag is set.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "extension/module/module.h"
#include "extension/tensor/owned_tensor.h"

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

}  // namespace
}  // namespace ember
