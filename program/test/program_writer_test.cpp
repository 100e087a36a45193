// Writer → reader round trips through the one generated schema header.
#include <gtest/gtest.h>

#include <cstring>

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

TEST(ProgramWriterTest, BadJsonNamesTheProblem) {
  WriteResult result = write_program_from_json(R"({"version": 0, "bogus_field": 3})", {}, {});
  EXPECT_FALSE(result.ok());
  EXPECT_NE(result.error.find("bogus_field"), std::string::npos) << result.error;
}

}  // namespace
}  // namespace ember::program
