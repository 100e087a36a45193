// Profile files (.eprof, #19) and delegate events: the XNNPACK delegate's
// events inside its instruction (tests/programs/xnnpack_cnn.pte), a profile
// written and read back, refused when corrupt or of another program. Random
// bit flips: profile_reader_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "extension/devtools/profile_file.h"
#include "extension/module/module.h"
#include "runtime/executor/test/host_tensor.h"

using namespace ember;
using extension::ProfileData;

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::string program_path(const char* name) {
  return std::string(EMBER_SOURCE_DIR) + "/tests/programs/" + name;
}

// The XNNPACK CNN, profiled for `runs` runs with storage sized at load.
class ProfiledCnn : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = extension::Module::load(program_path("xnnpack_cnn.pte"));
    ASSERT_TRUE(loaded.ok()) << last_error_message();
    module = std::move(loaded.get());
    auto m = module->method("forward");
    ASSERT_TRUE(m.ok()) << last_error_message();
    method = m.get();
    Result<TensorInfo> info = method->method_meta().input_tensor_info(0);
    ASSERT_TRUE(info.ok());
    std::vector<int32_t> sizes(info->sizes.begin(), info->sizes.end());
    size_t n = 1;
    for (int32_t s : sizes) n *= static_cast<size_t>(s);
    std::vector<float> data(n);
    for (size_t i = 0; i < n; ++i) data[i] = 0.1f * static_cast<float>(i % 11) - 0.5f;
    x = std::make_unique<ember::testing::HostTensor>(sizes, data);
    const std::vector<uint8_t> bytes = read_file(program_path("xnnpack_cnn.pte"));
    Result<extension::ProgramFingerprint> fp = extension::program_fingerprint(bytes.data(),
                                                                              bytes.size());
    ASSERT_TRUE(fp.ok()) << last_error_message();
    fingerprint = fp.get();
  }

  ProfileData profile(int runs) {
    std::vector<ProfileEvent> events(method->profile_events_per_run() * runs);
    EventTracer tracer(events.data(), events.size());
    extension::ProfileBuilder builder(*method, fingerprint, 1);
    method->set_event_tracer(&tracer);
    for (int r = 0; r < runs; ++r) {
      EXPECT_EQ(method->set_input(0, x->t), Error::Ok);
      const size_t before = tracer.size();
      EXPECT_EQ(method->execute(), Error::Ok) << last_error_message();
      builder.add_run(tracer.events() + before, tracer.size() - before);
    }
    method->set_event_tracer(nullptr);
    EXPECT_EQ(tracer.dropped(), 0u);  // sized from profile_events_per_run
    builder.add_dropped(tracer.dropped());
    return builder.data();
  }

  std::unique_ptr<extension::Module> module;
  Method* method = nullptr;
  std::unique_ptr<ember::testing::HostTensor> x;
  extension::ProgramFingerprint fingerprint;
};

// Each delegate instruction's event is followed by the events the delegate
// logged, inside its span: setup and invoke at least.
TEST_F(ProfiledCnn, DelegateEventsNestInsideTheirInstruction) {
  const ProfileData p = profile(2);
  ASSERT_EQ(p.runs.size(), 2u);
  size_t delegates = 0, inner = 0;
  bool invoke_named = false;
  for (const auto& run : p.runs) {
    const extension::ProfileRecord* call = nullptr;
    for (const auto& e : run) {
      const extension::ProfileInstruction* ins = p.instruction(e.instruction);
      ASSERT_NE(ins, nullptr);
      if (e.name < 0) {
        call = ins->delegate ? &e : nullptr;
        delegates += ins->delegate ? 1 : 0;
        continue;
      }
      ASSERT_NE(call, nullptr) << "a delegate event outside its delegate call";
      EXPECT_EQ(e.instruction, call->instruction);
      EXPECT_GE(e.start_ns, call->start_ns);
      EXPECT_LE(e.end_ns, call->end_ns);
      invoke_named |= p.names[e.name].rfind("xnn_invoke_runtime (", 0) == 0;
      ++inner;
    }
  }
  EXPECT_GE(delegates, 2u);
  EXPECT_GE(inner, 2 * delegates);
  EXPECT_TRUE(invoke_named);
}

// Without a tracer the delegate logs nothing and execute still runs.
TEST_F(ProfiledCnn, OffRecordsNothing) {
  ProfileEvent events[4];
  EventTracer tracer(events, 4);
  ASSERT_EQ(method->set_input(0, x->t), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok);
  EXPECT_EQ(tracer.size(), 0u);
}

// Too little storage: what does not fit is counted, nothing is written past it.
TEST_F(ProfiledCnn, SmallStorageCountsDrops) {
  ProfileEvent events[2];
  EventTracer tracer(events, 2);
  method->set_event_tracer(&tracer);
  ASSERT_EQ(method->set_input(0, x->t), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok);
  method->set_event_tracer(nullptr);
  EXPECT_EQ(tracer.size(), 2u);
  EXPECT_LE(tracer.size() + tracer.dropped(), method->profile_events_per_run());
  EXPECT_GT(tracer.dropped(), 0u);
}

TEST_F(ProfiledCnn, WrittenAndReadBack) {
  const ProfileData p = profile(3);
  const std::vector<uint8_t> bytes = extension::serialize_profile(p);
  ASSERT_TRUE(extension::is_profile_file(bytes.data(), bytes.size()));
  Result<ProfileData> back = extension::read_profile(bytes.data(), bytes.size());
  ASSERT_TRUE(back.ok()) << last_error_message();
  EXPECT_EQ(back->method, "forward");
  EXPECT_EQ(back->program.size, fingerprint.size);
  EXPECT_EQ(back->program.hash, fingerprint.hash);
  EXPECT_EQ(back->threads, 1u);
  EXPECT_EQ(back->num_instructions, method->num_steps());
  ASSERT_EQ(back->instructions.size(), p.instructions.size());
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    EXPECT_EQ(back->instructions[i].op, p.instructions[i].op);
    EXPECT_EQ(back->instructions[i].node, p.instructions[i].node);
    EXPECT_EQ(back->instructions[i].delegate, p.instructions[i].delegate);
  }
  EXPECT_EQ(back->names, p.names);
  ASSERT_EQ(back->runs.size(), 3u);
  for (size_t r = 0; r < 3; ++r) {
    ASSERT_EQ(back->runs[r].size(), p.runs[r].size());
    for (size_t i = 0; i < p.runs[r].size(); ++i) {
      EXPECT_EQ(back->runs[r][i].start_ns, p.runs[r][i].start_ns);
      EXPECT_EQ(back->runs[r][i].end_ns, p.runs[r][i].end_ns);
      EXPECT_EQ(back->runs[r][i].name, p.runs[r][i].name);
    }
  }
  EXPECT_EQ(extension::check_profile_program(back.get(), fingerprint), Error::Ok);
}

TEST_F(ProfiledCnn, RefusesAProfileOfAnotherProgram) {
  const ProfileData p = profile(1);
  const std::vector<uint8_t> other = read_file(program_path("m.pte"));
  Result<extension::ProgramFingerprint> fp = extension::program_fingerprint(other.data(),
                                                                            other.size());
  ASSERT_TRUE(fp.ok());
  EXPECT_EQ(extension::check_profile_program(p, fp.get()), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("the profile is of another program"),
            std::string::npos)
      << last_error_message();
}

void expect_refused(const ProfileData& p, const char* why) {
  const std::vector<uint8_t> bytes = extension::serialize_profile(p);
  Result<ProfileData> back = extension::read_profile(bytes.data(), bytes.size());
  ASSERT_FALSE(back.ok()) << why;
  EXPECT_NE(std::string(last_error_message()).find(why), std::string::npos)
      << last_error_message();
}

TEST_F(ProfiledCnn, RefusesInconsistentFiles) {
  const ProfileData good = profile(1);
  ProfileData p = good;
  p.runs[0][0].instruction = good.num_instructions + 5;
  expect_refused(p, "which the profile's instruction table does not hold");
  p = good;
  p.runs[0][0].name = static_cast<int32_t>(good.names.size());
  expect_refused(p, "names event name");
  p = good;
  p.runs[0][0].end_ns = p.runs[0][0].start_ns - 1;
  expect_refused(p, "ends before it starts");
  p = good;
  p.instructions.push_back(p.instructions[0]);
  expect_refused(p, "twice");
  // A delegate event inside a kernel instruction (a delegate call relabelled).
  p = good;
  for (auto& ins : p.instructions) ins.delegate = false;
  expect_refused(p, "a kernel");
}

TEST(ProfileFile, RefusesWhatIsNotAProfile) {
  const std::vector<uint8_t> pte = read_file(program_path("m.pte"));
  EXPECT_FALSE(extension::is_profile_file(pte.data(), pte.size()));
  Result<ProfileData> r = extension::read_profile(pte.data(), pte.size());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(last_error_message()).find("not a profile file"), std::string::npos);
  EXPECT_FALSE(extension::read_profile(pte.data(), 3).ok());
  ProfileData p;
  p.method = "forward";
  std::vector<uint8_t> bytes = extension::serialize_profile(p);
  ASSERT_FALSE(extension::read_profile(bytes.data(), bytes.size() / 2).ok());  // truncated
  EXPECT_NE(std::string(last_error_message()).find("corrupt"), std::string::npos)
      << last_error_message();
}

}  // namespace
