// The profile file reader on untrusted bytes (#19): a hand-made profile
// (a kernel, a delegate with its own events, three runs) written, read back,
// and random bit flips refused or read to consistent events. Needs no
// kernels or delegates, so the sanitizer build runs it cheaply too.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "extension/devtools/profile_file.h"

using namespace ember;
using extension::ProfileData;

namespace {

ProfileData hand_made() {
  ProfileData p;
  p.method = "forward";
  p.program = {4096, 0x1234567890abcdefull};
  p.num_instructions = 3;
  p.threads = 2;
  p.instructions = {{0, false, "aten::add.out", "aten_add_tensor", "model.py:3", "[2, 3]"},
                    {2, true, "XnnpackBackend", "executorch_call_delegate", "", ""}};
  p.names = {"xnn_setup_runtime", "xnn_invoke_runtime (4 nodes)"};
  for (uint64_t r = 0; r < 3; ++r) {
    const uint64_t t = 1000 * r;
    p.runs.push_back({{0, -1, t, t + 10}, {2, -1, t + 20, t + 90}, {2, 0, t + 21, t + 30},
                      {2, 1, t + 30, t + 88}});
  }
  return p;
}

TEST(ProfileReader, RoundTrip) {
  const std::vector<uint8_t> bytes = extension::serialize_profile(hand_made());
  Result<ProfileData> p = extension::read_profile(bytes.data(), bytes.size());
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_EQ(p->program.hash, 0x1234567890abcdefull);
  EXPECT_EQ(p->threads, 2u);
  ASSERT_EQ(p->runs.size(), 3u);
  EXPECT_EQ(p->runs[2][3].name, 1);
  EXPECT_EQ(p->runs[2][3].end_ns, 2088u);
  EXPECT_EQ(p->instruction(2)->op, "XnnpackBackend");
  EXPECT_EQ(p->instruction(1), nullptr);
  EXPECT_EQ(extension::check_profile_program(p.get(), {4096, 0x1234567890abcdefull}), Error::Ok);
  EXPECT_NE(extension::check_profile_program(p.get(), {4096, 1}), Error::Ok);
}

TEST(ProfileReader, RefusesAnotherVersion) {
  std::vector<uint8_t> bytes = extension::serialize_profile(hand_made());
  // The version is the root table's first field: find the 4-byte 1 and make it 7.
  bool changed = false;
  for (size_t i = 8; i + 4 <= bytes.size() && !changed; i += 4) {
    if (bytes[i] == 1 && bytes[i + 1] == 0 && bytes[i + 2] == 0 && bytes[i + 3] == 0) {
      std::vector<uint8_t> bad = bytes;
      bad[i] = 7;
      Result<ProfileData> p = extension::read_profile(bad.data(), bad.size());
      if (!p.ok() && std::string(last_error_message()).find("version 7") != std::string::npos) {
        changed = true;
      }
    }
  }
  EXPECT_TRUE(changed) << "no version field found to change";
}

TEST(ProfileReader, BitFlipsAreRefusedOrReadSafely) {
  const std::vector<uint8_t> good = extension::serialize_profile(hand_made());
  uint32_t state = 777;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  int refused = 0, read = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<uint8_t> bad = good;
    for (int flips = 1 + static_cast<int>(next() % 4); flips > 0; --flips) {
      bad[next() % bad.size()] ^= static_cast<uint8_t>(1u << (next() % 8));
    }
    Result<ProfileData> p = extension::read_profile(bad.data(), bad.size());
    if (!p.ok()) {
      EXPECT_GT(std::string(last_error_message()).size(), 0u);
      ++refused;
      continue;
    }
    ++read;
    for (const auto& run : p->runs) {
      for (const auto& e : run) {
        const extension::ProfileInstruction* ins = p->instruction(e.instruction);
        ASSERT_NE(ins, nullptr);
        ASSERT_LT(e.name, static_cast<int32_t>(p->names.size()));
        ASSERT_TRUE(e.name < 0 || ins->delegate);
        ASSERT_LE(e.start_ns, e.end_ns);
      }
    }
  }
  EXPECT_EQ(refused + read, 400);
  EXPECT_GT(refused, 0);
  EXPECT_GT(read, 0);
}

}  // namespace
