// What load_method's prepare steps leave, on the checked-in programs with the
// real kernels: the method, its meta and every step agree on the bytes.
#include <gtest/gtest.h>

#include <string>

#include "extension/module/module.h"
#include "runtime/executor/method.h"

namespace ember {
namespace {

// simple_conv.pte's convolution packs its constant weight at load.
TEST(MethodPrepareTest, MetaAndStepsReportThePreparedBytes) {
  auto module = extension::Module::load(std::string(EMBER_SOURCE_DIR) + "/tests/programs/simple_conv.pte");
  ASSERT_TRUE(module.ok()) << last_error_message();
  Result<Method*> method = module.get()->method("forward");
  ASSERT_TRUE(method.ok()) << last_error_message();
  Result<size_t> bytes = method.get()->method_meta().prepared_bytes();
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes.get(), method.get()->prepared_bytes());
  EXPECT_GT(bytes.get(), 0u);
  size_t per_step = 0;
  bool conv_prepared = false;
  for (size_t k = 0; k < method.get()->num_steps(); ++k) {
    const Step& step = method.get()->step(k);
    per_step += step.prepared_bytes;
    if (step.op_name != nullptr && std::string(step.op_name) == "aten::convolution.out") {
      conv_prepared = step.prepared_bytes > 0 && step.state != nullptr;
    }
  }
  EXPECT_EQ(per_step, bytes.get());
  EXPECT_TRUE(conv_prepared);
  // Only prepare reads the weight: it is handed back to the (mmap) loader.
  EXPECT_GT(method.get()->dropped_constant_bytes(), 0u);
}

}  // namespace
}  // namespace ember
