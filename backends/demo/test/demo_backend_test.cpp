// The demo backend through the runtime: DelegateCall execution, inline and
// segment blobs, and the errors for a missing backend or a corrupt blob.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "extension/module/module.h"
#include "runtime/executor/test/test_programs.h"

namespace ember {
namespace {

// Appends little-endian values to a blob.
struct BlobWriter {
  std::vector<uint8_t> bytes;
  void u8(uint8_t v) { bytes.push_back(v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    u32(bits);
  }
  void slot(std::vector<int32_t> sizes) {
    u8(6);
    u8(static_cast<uint8_t>(sizes.size()));
    u8(0);
    u8(0);
    for (int32_t s : sizes) u32(static_cast<uint32_t>(s));
  }
  void instr(uint8_t op, uint32_t a, uint32_t b, uint32_t out, float alpha = 1.0f) {
    u8(op);
    u8(0);
    u8(0);
    u8(0);
    u32(a);
    u32(b);
    u32(out);
    f32(alpha);
  }
};

// sin(x) @ y - x (alpha 2): x, y [2, 2].
std::vector<uint8_t> demo_blob() {
  BlobWriter w;
  for (char c : std::string("EDM1")) w.u8(static_cast<uint8_t>(c));
  w.u32(1);
  w.u32(5);  // slots: x, y, sin, mm, out
  w.u32(2);
  w.u32(1);
  w.u32(3);
  for (int i = 0; i < 5; ++i) w.slot({2, 2});
  w.u32(0);
  w.u32(1);
  w.u32(4);
  w.instr(1, 0, 0xFFFFFFFFu, 2);
  w.instr(5, 2, 1, 3);
  w.instr(3, 3, 0, 4, 2.0f);
  return w.bytes;
}

ember_fb::ProgramT delegate_program(const std::string& backend_id) {
  ember_fb::ProgramT program;
  auto plan = std::make_unique<ember_fb::ExecutionPlanT>();
  plan->name = "forward";
  plan->values.push_back(testing::tensor_value(ember_fb::ScalarType::FLOAT32, {2, 2}, 1, 0));
  plan->values.push_back(testing::tensor_value(ember_fb::ScalarType::FLOAT32, {2, 2}, 1, 16));
  plan->values.push_back(testing::tensor_value(ember_fb::ScalarType::FLOAT32, {2, 2}, 1, 32));
  plan->inputs = {0, 1};
  plan->outputs = {2};
  auto delegate = std::make_unique<ember_fb::BackendDelegateT>();
  delegate->id = backend_id;
  delegate->processed = std::make_unique<ember_fb::BackendDelegateDataReferenceT>();
  delegate->processed->index = 0;
  plan->delegates.push_back(std::move(delegate));
  auto chain = std::make_unique<ember_fb::ChainT>();
  ember_fb::DelegateCallT call;
  call.delegate_index = 0;
  call.args = {0, 1, 2};
  auto ins = std::make_unique<ember_fb::InstructionT>();
  ins->instr_args.Set(std::move(call));
  chain->instructions.push_back(std::move(ins));
  plan->chains.push_back(std::move(chain));
  plan->non_const_buffer_sizes = {0, 48};
  program.execution_plan.push_back(std::move(plan));
  return program;
}

std::vector<uint8_t> write(ember_fb::ProgramT program, const std::vector<uint8_t>& blob,
                           uint64_t max_inline) {
  program::WriterOptions options;
  options.max_inline_delegate_bytes = max_inline;
  std::vector<std::span<const uint8_t>> blobs = {{blob.data(), blob.size()}};
  program::WriteResult result = program::write_program(std::move(program), {}, blobs, options);
  EXPECT_TRUE(result.ok()) << result.error;
  return result.bytes;
}

struct Input {
  int32_t sizes[2] = {2, 2};
  uint8_t order[2] = {0, 1};
  int64_t strides[2];
  float data[4];
  Tensor t;
  explicit Input(std::initializer_list<float> v) {
    std::copy(v.begin(), v.end(), data);
    t.dim = 2;
    t.sizes = sizes;
    t.dim_order = order;
    t.strides = strides;
    t.data = data;
    t.update_strides();
  }
};

class DemoBackendTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(DemoBackendTest, RunsTheCompiledBlob) {
  const std::vector<uint8_t> bytes = write(delegate_program("BackendWithCompilerDemo"), demo_blob(), GetParam());
  auto module = extension::Module::from_bytes(bytes.data(), bytes.size());
  ASSERT_TRUE(module.ok()) << last_error_message();
  Result<Method*> method = module.get()->method("forward");
  ASSERT_TRUE(method.ok()) << last_error_message();
  Input x({0.1f, 0.2f, 0.3f, 0.4f});
  Input y({1, 2, 3, 4});
  ASSERT_EQ(method.get()->set_input(0, x.t), Error::Ok);
  ASSERT_EQ(method.get()->set_input(1, y.t), Error::Ok);
  ASSERT_EQ(method.get()->execute(), Error::Ok) << last_error_message();
  const float* o = method.get()->get_output(0).get()->to_tensor().data_ptr<float>();
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      float expect = 0;
      for (int p = 0; p < 2; ++p) expect += std::sin(x.data[i * 2 + p]) * y.data[p * 2 + j];
      expect -= 2.0f * x.data[i * 2 + j];
      EXPECT_NEAR(o[i * 2 + j], expect, 1e-6f);
    }
  }
}

// Profiled, the delegate logs one event per instruction of its blob (sin,
// mm, sub) inside its call's event; storage sized from the method fits them.
TEST(DemoBackendProfile, LogsEachInnerInstruction) {
  const std::vector<uint8_t> bytes =
      write(delegate_program("BackendWithCompilerDemo"), demo_blob(), 0);
  auto module = extension::Module::from_bytes(bytes.data(), bytes.size());
  ASSERT_TRUE(module.ok()) << last_error_message();
  Method* method = module.get()->method("forward").get();
  ASSERT_NE(method, nullptr);
  Input x({0.1f, 0.2f, 0.3f, 0.4f});
  Input y({1, 2, 3, 4});
  ASSERT_EQ(method->set_input(0, x.t), Error::Ok);
  ASSERT_EQ(method->set_input(1, y.t), Error::Ok);
  std::vector<ProfileEvent> events(method->profile_events_per_run());
  EventTracer tracer(events.data(), events.size());
  method->set_event_tracer(&tracer);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  method->set_event_tracer(nullptr);
  EXPECT_EQ(tracer.dropped(), 0u);
  ASSERT_EQ(tracer.size(), 4u);  // the call, then sin, mm and sub inside it
  const ProfileEvent& call = tracer.events()[0];
  EXPECT_EQ(call.name, nullptr);
  const char* expected[] = {"demo::sin", "demo::mm", "demo::sub"};
  for (size_t i = 1; i < 4; ++i) {
    const ProfileEvent& e = tracer.events()[i];
    ASSERT_NE(e.name, nullptr);
    EXPECT_STREQ(e.name, expected[i - 1]);
    EXPECT_EQ(e.instruction, call.instruction);
    EXPECT_GE(e.start_ns, call.start_ns);
    EXPECT_LE(e.end_ns, call.end_ns);
  }
}

// 0: the blob goes to a segment; 1 MiB: it stays inline.
INSTANTIATE_TEST_SUITE_P(InlineAndSegment, DemoBackendTest, ::testing::Values(0u, 1u << 20));

std::string load_error(const std::vector<uint8_t>& bytes, Error* code) {
  auto module = extension::Module::from_bytes(bytes.data(), bytes.size());
  if (!module.ok()) {
    *code = module.error();
    return last_error_message();
  }
  Result<Method*> method = module.get()->method("forward");
  *code = method.ok() ? Error::Ok : method.error();
  return method.ok() ? "" : last_error_message();
}

TEST(DemoBackendErrors, UnregisteredBackendIsNamed) {
  Error code;
  const std::string msg = load_error(write(delegate_program("NoSuchBackend"), demo_blob(), 0), &code);
  EXPECT_EQ(code, Error::DelegateMissing);
  EXPECT_NE(msg.find("backend 'NoSuchBackend' is not registered"), std::string::npos) << msg;
}

TEST(DemoBackendErrors, CorruptBlobsAreRefusedWithTheBackendsReason) {
  struct Case {
    const char* name;
    std::vector<uint8_t> blob;
    const char* words;
  };
  std::vector<uint8_t> truncated = demo_blob();
  truncated.resize(truncated.size() - 5);
  std::vector<uint8_t> bad_magic = demo_blob();
  bad_magic[0] = 'X';
  std::vector<uint8_t> bad_opcode = demo_blob();
  bad_opcode[bad_opcode.size() - 20] = 99;  // Last instruction's opcode.
  std::vector<uint8_t> bad_slot = demo_blob();
  bad_slot[bad_slot.size() - 8] = 77;  // Last instruction's out slot.
  std::vector<uint8_t> trailing = demo_blob();
  trailing.push_back(0);
  const Case cases[] = {
      {"truncated", truncated, "truncated in instruction 2"},
      {"magic", bad_magic, "does not start with 'EDM1'"},
      {"opcode", bad_opcode, "unknown opcode 99"},
      {"slot", bad_slot, "slot out of range"},
      {"trailing", trailing, "1 trailing bytes"},
      {"empty", {}, "does not start with 'EDM1'"},
  };
  for (const Case& c : cases) {
    Error code;
    const std::string msg = load_error(write(delegate_program("BackendWithCompilerDemo"), c.blob, 0), &code);
    EXPECT_EQ(code, Error::DelegateInvalidCompatibility) << c.name;
    EXPECT_NE(msg.find("backend 'BackendWithCompilerDemo' failed to init"), std::string::npos)
        << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.words), std::string::npos) << c.name << ": " << msg;
  }
}

TEST(DemoBackendErrors, DelegateIndexOutOfRangeIsRefused) {
  auto program = delegate_program("BackendWithCompilerDemo");
  program.execution_plan[0]->chains[0]->instructions[0]->instr_args.AsDelegateCall()->delegate_index = 3;
  Error code;
  const std::string msg = load_error(write(std::move(program), demo_blob(), 0), &code);
  EXPECT_EQ(code, Error::InvalidProgram);
  EXPECT_NE(msg.find("delegates index 3"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ember
