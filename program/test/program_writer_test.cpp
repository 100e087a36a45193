// Writer → reader round trips through the one generated schema header.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "program/program_writer.h"
#include "runtime/executor/program.h"

namespace ember::program {
namespace {

constexpr const char* kJson = R"({
  "version": 0,
  "execution_plan": [{
    "name": "forward",
    "values": [
      {"val_type": "Tensor", "val": {"scalar_type": "FLOAT32", "sizes": [2, 2], "dim_order": [0, 1],
                                      "allocation_info": {"memory_id": 1, "memory_offset_low": 0}}},
      {"val_type": "Tensor", "val": {"scalar_type": "FLOAT32", "sizes": [3], "dim_order": [0],
                                      "data_buffer_idx": 1}},
      {"val_type": "Tensor", "val": {"scalar_type": "INT64", "sizes": [1], "dim_order": [0],
                                      "data_buffer_idx": 2}},
      {"val_type": "Int", "val": {"int_val": 4}},
      {"val_type": "IntList", "val": {"items": [3, 3]}}
    ],
    "inputs": [0], "outputs": [0],
    "chains": [{"inputs": [0], "outputs": [0], "instructions": []}],
    "non_const_buffer_sizes": [0, 16]
  }]
})";

TEST(ProgramWriterTest, JsonRoundTripWithAlignedConstants) {
  const float c1[3] = {1.5f, 2.5f, 3.5f};
  const int64_t c2[1] = {42};
  std::vector<std::span<const uint8_t>> constants = {
      {reinterpret_cast<const uint8_t*>(c1), sizeof(c1)},
      {reinterpret_cast<const uint8_t*>(c2), sizeof(c2)}};
  WriteResult result = write_program_from_json(kJson, constants, {});
  ASSERT_TRUE(result.ok()) << result.error;
  const auto& bytes = result.bytes;

  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  const ember_fb::Program* fb = program->flatbuffer();
  ASSERT_NE(fb->constant_segment(), nullptr);
  const auto* offsets = fb->constant_segment()->offsets();
  ASSERT_EQ(offsets->size(), 3u);
  EXPECT_EQ(offsets->Get(0), 0u);
  EXPECT_EQ(offsets->Get(2) % 16, 0u);  // Constants 16-byte aligned.
  uint64_t base = 0;
  std::memcpy(&base, bytes.data() + 24, 8);
  EXPECT_EQ(base % 128, 0u);  // Segments 128-byte aligned.
  EXPECT_EQ(fb->segments()->Get(0)->offset(), 0u);
  float got[3];
  std::memcpy(got, program->constant_data(offsets->Get(1)), sizeof(got));
  EXPECT_FLOAT_EQ(got[2], 3.5f);
  int64_t got2 = 0;
  std::memcpy(&got2, program->constant_data(offsets->Get(2)), 8);
  EXPECT_EQ(got2, 42);
  uint64_t segment_bytes = 0;
  std::memcpy(&segment_bytes, bytes.data() + 32, 8);
  EXPECT_EQ(base + segment_bytes, bytes.size());
}

// Other readers index these without presence checks (pte-format.md, "What
// other runtimes of the format expect from a writer").
TEST(ProgramWriterTest, EmptyVectorsAndStringsArePresent) {
  constexpr const char* kEmpty = R"({
    "version": 0,
    "execution_plan": [{
      "name": "forward",
      "values": [
        {"val_type": "Tensor", "val": {"scalar_type": "FLOAT32", "sizes": [], "dim_order": [],
                                        "allocation_info": {"memory_id": 1}}},
        {"val_type": "IntList", "val": {"items": []}},
        {"val_type": "String", "val": {"string_val": ""}}
      ],
      "inputs": [0], "outputs": [0],
      "chains": [{"inputs": [0], "outputs": [0],
                  "instructions": [{"instr_args_type": "KernelCall",
                                    "instr_args": {"op_index": 0, "args": []}}]}],
      "operators": [{"name": "aten::_assert_scalar", "overload": ""}],
      "non_const_buffer_sizes": [0, 16]
    }]
  })";
  WriteResult result = write_program_from_json(kEmpty, {}, {});
  ASSERT_TRUE(result.ok()) << result.error;
  flatbuffers::Verifier verifier(result.bytes.data(), result.bytes.size());
  ASSERT_TRUE(ember_fb::VerifyProgramBuffer(verifier));
  const ember_fb::Program* fb = ember_fb::GetProgram(result.bytes.data());
  ASSERT_NE(fb->constant_segment(), nullptr);
  ASSERT_NE(fb->constant_segment()->offsets(), nullptr);
  ASSERT_EQ(fb->constant_segment()->offsets()->size(), 1u);
  EXPECT_EQ(fb->constant_segment()->offsets()->Get(0), 0u);
  ASSERT_NE(fb->segments(), nullptr);
  EXPECT_EQ(fb->segments()->size(), 0u);
  EXPECT_NE(fb->constant_buffer(), nullptr);
  EXPECT_NE(fb->backend_delegate_data(), nullptr);
  EXPECT_NE(fb->mutable_data_segments(), nullptr);
  EXPECT_NE(fb->named_data(), nullptr);
  const auto* plan = fb->execution_plan()->Get(0);
  ASSERT_NE(plan->delegates(), nullptr);
  EXPECT_EQ(plan->delegates()->size(), 0u);
  ASSERT_NE(plan->container_meta_type(), nullptr);
  EXPECT_NE(plan->container_meta_type()->encoded_inp_str(), nullptr);
  const auto* t = plan->values()->Get(0)->val_as_Tensor();
  ASSERT_NE(t->sizes(), nullptr);
  ASSERT_NE(t->dim_order(), nullptr);
  EXPECT_EQ(t->sizes()->size(), 0u);
  EXPECT_NE(plan->values()->Get(1)->val_as_IntList()->items(), nullptr);
  EXPECT_NE(plan->values()->Get(2)->val_as_String()->string_val(), nullptr);
  EXPECT_NE(plan->operators()->Get(0)->overload(), nullptr);
  const auto* call = plan->chains()->Get(0)->instructions()->Get(0)->instr_args_as_KernelCall();
  EXPECT_NE(call->args(), nullptr);
  EXPECT_EQ(plan->chains()->Get(0)->stacktrace(), nullptr);  // Absent: no frames.

  BufferDataLoader loader(result.bytes.data(), result.bytes.size());
  EXPECT_TRUE(Program::load(&loader).ok()) << last_error_message();
}

TEST(ProgramWriterTest, BadJsonNamesTheProblem) {
  WriteResult result = write_program_from_json(R"({"version": 0, "bogus_field": 3})", {}, {});
  EXPECT_FALSE(result.ok());
  EXPECT_NE(result.error.find("bogus_field"), std::string::npos) << result.error;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The file writer streams the same bytes the in-memory writer returns:
// constants (odd sizes, so alignment padding sits between them), a delegate
// blob in its own segment and one inline, named data and mutable data.
TEST(ProgramWriterTest, FileWriterWritesTheInMemoryWritersBytes) {
  const float c1[3] = {1.5f, 2.5f, 3.5f};
  const uint8_t c2[5] = {1, 2, 3, 4, 5};
  const uint8_t blob[300] = {7};
  const uint8_t small[3] = {9, 9, 9};
  const uint8_t named[17] = {4};
  const float mutable_init[2] = {0.25f, 0.5f};
  const std::vector<std::span<const uint8_t>> constants = {
      {reinterpret_cast<const uint8_t*>(c1), sizeof(c1)}, {c2, sizeof(c2)}};
  const std::vector<std::span<const uint8_t>> blobs = {{blob, sizeof(blob)}, {small, sizeof(small)}};
  const std::vector<std::span<const uint8_t>> named_blobs = {{named, sizeof(named)}};
  const std::vector<std::span<const uint8_t>> mutable_data = {
      {reinterpret_cast<const uint8_t*>(mutable_init), sizeof(mutable_init)}};
  WriterOptions options;
  options.max_inline_delegate_bytes = 8;
  const WriteResult want =
      write_program_from_json(kJson, constants, blobs, options, named_blobs, mutable_data);
  ASSERT_TRUE(want.ok()) << want.error;
  const std::string path = ::testing::TempDir() + "ember_writer_test.pte";
  const std::string error = write_program_file_from_json(path, kJson, constants, blobs, options,
                                                         named_blobs, mutable_data);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(read_file(path), want.bytes);
  std::remove(path.c_str());
}

TEST(ProgramWriterTest, FileWriterNamesAPathItCannotWriteAndLeavesNoFile) {
  const std::string dir = ::testing::TempDir() + "no_such_dir_for_ember/";
  const std::string error = write_program_file_from_json(dir + "m.pte", kJson, {}, {});
  EXPECT_NE(error.find("cannot open " + dir + "m.pte"), std::string::npos) << error;
  const std::string bad = write_program_file_from_json(::testing::TempDir() + "bad.pte",
                                                       R"({"version": 0, "bogus": 1})", {}, {});
  EXPECT_NE(bad.find("does not match the schema"), std::string::npos) << bad;
  EXPECT_TRUE(read_file(::testing::TempDir() + "bad.pte").empty());
}

}  // namespace
}  // namespace ember::program
