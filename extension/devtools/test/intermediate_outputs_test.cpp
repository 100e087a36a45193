// Capturing every instruction's outputs while a method runs (numerical
// debugging), on the tutorial's program M (tests/programs/m.pte: add ->
// addmm -> clamp; clamp reuses add's planned bytes) and the XNNPACK CNN
// (tests/programs/xnnpack_cnn.pte, delegate outputs).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "extension/devtools/intermediate_outputs.h"
#include "extension/module/module.h"
#include "runtime/executor/test/host_tensor.h"

using namespace ember;

namespace {

// A float32 input of `sizes` holding a small repeating pattern.
std::vector<float> pattern(const std::vector<int32_t>& sizes) {
  size_t n = 1;
  for (int32_t s : sizes) n *= static_cast<size_t>(s);
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  return data;
}

struct Input : ember::testing::HostTensor {
  explicit Input(std::vector<int32_t> s) : HostTensor(s, pattern(s)) {}
};

const float* floats(const extension::IntermediateOutputRecorder& r,
                    const extension::CapturedOutput& c) {
  return reinterpret_cast<const float*>(r.data(c));
}

struct Storage {
  explicit Storage(extension::CaptureSize size) : records(size.records), bytes(size.bytes) {}
  std::vector<extension::CapturedOutput> records;
  std::vector<uint8_t> bytes;
};

class TutorialProgram : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = extension::Module::load(std::string(EMBER_SOURCE_DIR) + "/tests/programs/m.pte");
    ASSERT_TRUE(loaded.ok()) << last_error_message();
    module = std::move(loaded.get());
    auto m = module->method("forward");
    ASSERT_TRUE(m.ok()) << last_error_message();
    method = m.get();
    ASSERT_EQ(method->set_input(0, x.t), Error::Ok) << last_error_message();
  }
  std::unique_ptr<extension::Module> module;
  Method* method = nullptr;
  Input x{{3, 4}};
};

TEST_F(TutorialProgram, OutputPositionsFromThePlan) {
  const auto args = extension::instruction_output_args(method->execution_plan());
  ASSERT_EQ(args.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(args[k].size(), 1u) << k;
    EXPECT_EQ(args[k][0], method->step(k).num_args - 1) << k;  // the out argument
  }
  const extension::CaptureSize size = extension::IntermediateOutputRecorder::one_run(*method);
  EXPECT_EQ(size.records, 3u);
  EXPECT_EQ(size.bytes, 48u + 64u + 64u);  // [3, 4] + [3, 5] + [3, 5] floats, 16-aligned
}

// Each instruction's output as it was right after the instruction ran: add's
// result (later overwritten by clamp, which reuses its bytes) is x + param,
// and the last capture is the method's output.
TEST_F(TutorialProgram, CapturesEachInstructionsOutput) {
  Storage s(extension::IntermediateOutputRecorder::one_run(*method));
  extension::IntermediateOutputRecorder recorder(*method, s.records, s.bytes);
  method->set_output_logger(&recorder);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  ASSERT_EQ(recorder.captured().size(), 3u);
  EXPECT_EQ(recorder.dropped(), 0u);
  EXPECT_EQ(recorder.bytes_needed(), s.bytes.size());
  const auto& add = recorder.captured()[0];
  EXPECT_EQ(add.instruction, 0u);
  EXPECT_EQ(add.tag, Tag::Tensor);
  EXPECT_EQ(add.dtype, ScalarType::Float);
  ASSERT_EQ(add.dim, 2);
  EXPECT_EQ(add.sizes[0], 3);
  EXPECT_EQ(add.sizes[1], 4);
  EXPECT_EQ(add.nbytes, 48u);
  const Tensor& param = method->step(0).args[1]->to_tensor();
  for (int i = 0; i < 12; ++i) {
    EXPECT_FLOAT_EQ(floats(recorder, add)[i], x.data[i] + param.data_ptr<float>()[i]) << i;
  }
  // add's planned bytes now hold something else.
  const Tensor& add_out = method->step(0).args[method->step(0).num_args - 1]->to_tensor();
  EXPECT_NE(std::memcmp(add_out.data, recorder.data(add), 48), 0);
  const auto& last = recorder.captured()[2];
  EXPECT_EQ(last.instruction, 2u);
  const Tensor& out = method->get_output(0).get()->to_tensor();
  ASSERT_EQ(last.nbytes, out.nbytes());
  EXPECT_EQ(std::memcmp(recorder.data(last), out.data, out.nbytes()), 0);
  // Another run appends; clear() starts over.
  ASSERT_EQ(method->execute(), Error::Ok);
  EXPECT_EQ(recorder.captured().size(), 3u);
  EXPECT_EQ(recorder.dropped(), 3u);
  recorder.clear();
  ASSERT_EQ(method->execute(), Error::Ok);
  EXPECT_EQ(recorder.captured().size(), 3u);
  EXPECT_EQ(recorder.dropped(), 0u);
  method->set_output_logger(nullptr);
}

TEST_F(TutorialProgram, OffCapturesNothing) {
  Storage s(extension::IntermediateOutputRecorder::one_run(*method));
  extension::IntermediateOutputRecorder recorder(*method, s.records, s.bytes);
  method->set_output_logger(&recorder);
  method->set_output_logger(nullptr);
  ASSERT_EQ(method->execute(), Error::Ok);
  EXPECT_EQ(recorder.captured().size(), 0u);
  EXPECT_EQ(recorder.dropped(), 0u);
  EXPECT_EQ(recorder.bytes_needed(), 0u);
}

// Too little storage: what fits is captured whole, the rest is counted and
// bytes_needed says how much the run wanted; nothing is written past the end
// (ASan builds run this).
TEST_F(TutorialProgram, StorageTooSmallCountsDrops) {
  std::vector<extension::CapturedOutput> records(3);
  std::vector<uint8_t> bytes(60);  // add's 48 bytes fit, addmm's 60 then do not
  extension::IntermediateOutputRecorder recorder(*method, records, bytes);
  method->set_output_logger(&recorder);
  ASSERT_EQ(method->execute(), Error::Ok);
  method->set_output_logger(nullptr);
  ASSERT_EQ(recorder.captured().size(), 1u);
  EXPECT_EQ(recorder.captured()[0].instruction, 0u);
  EXPECT_EQ(recorder.dropped(), 2u);
  EXPECT_EQ(recorder.bytes_needed(), 48u + 64u + 64u);

  std::vector<extension::CapturedOutput> one(1);
  std::vector<uint8_t> plenty(1024);
  extension::IntermediateOutputRecorder few(*method, one, plenty);
  method->set_output_logger(&few);
  ASSERT_EQ(method->execute(), Error::Ok);
  method->set_output_logger(nullptr);
  EXPECT_EQ(few.captured().size(), 1u);
  EXPECT_EQ(few.dropped(), 2u);
}

// A delegate's outputs are captured as one unit: the instruction's planned
// result tensors, not its inputs or weights.
TEST(IntermediateOutputs, DelegateOutputs) {
  auto module =
      extension::Module::load(std::string(EMBER_SOURCE_DIR) + "/tests/programs/xnnpack_cnn.pte");
  ASSERT_TRUE(module.ok()) << last_error_message();
  auto m = module.get()->method("forward");
  ASSERT_TRUE(m.ok()) << last_error_message();
  Method* method = m.get();
  Result<MethodMeta> meta = module.get()->program().method_meta("forward");
  ASSERT_TRUE(meta.ok());
  Result<TensorInfo> info = meta->input_tensor_info(0);
  ASSERT_TRUE(info.ok());
  Input x(std::vector<int32_t>(info->sizes.begin(), info->sizes.end()));
  ASSERT_EQ(method->set_input(0, x.t), Error::Ok) << last_error_message();
  Storage s(extension::IntermediateOutputRecorder::one_run(*method));
  extension::IntermediateOutputRecorder recorder(*method, s.records, s.bytes);
  method->set_output_logger(&recorder);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  method->set_output_logger(nullptr);
  EXPECT_EQ(recorder.dropped(), 0u);
  size_t delegates = 0;
  for (const auto& c : recorder.captured()) {
    if (method->step(c.instruction).kind == Step::Kind::Delegate) ++delegates;
  }
  EXPECT_GE(delegates, 1u);
  // The method's output is the last captured tensor of the same size.
  const Tensor& out = method->get_output(0).get()->to_tensor();
  ASSERT_FALSE(recorder.captured().empty());
  const auto& last = recorder.captured().back();
  ASSERT_EQ(last.nbytes, out.nbytes());
  EXPECT_EQ(std::memcmp(recorder.data(last), out.data, out.nbytes()), 0);
}

}  // namespace
