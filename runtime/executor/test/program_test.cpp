// Program::load on good and malformed files: every refusal names the fault.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "runtime/executor/program.h"
#include "runtime/executor/test/test_programs.h"

namespace ember {
namespace {

using testing::make_axpy_program;
using testing::write;

// The loader must outlive the Program; the tests keep one at a time.
Result<Program> load_bytes(std::vector<uint8_t>& bytes) {
  static std::unique_ptr<BufferDataLoader> loader;
  loader = std::make_unique<BufferDataLoader>(bytes.data(), bytes.size());
  return Program::load(loader.get());
}

void expect_refused(std::vector<uint8_t> bytes, Error code, const std::string& words) {
  clear_error_message();
  Result<Program> program = load_bytes(bytes);
  ASSERT_FALSE(program.ok()) << "expected refusal mentioning: " << words;
  EXPECT_EQ(program.error(), code) << last_error_message();
  EXPECT_NE(std::string(last_error_message()).find(words), std::string::npos)
      << "message was: " << last_error_message();
}

TEST(ProgramTest, LoadsAWrittenProgram) {
  std::vector<uint8_t> bytes = write(make_axpy_program());
  Result<Program> program = load_bytes(bytes);
  ASSERT_TRUE(program.ok()) << last_error_message();
  EXPECT_EQ(program->num_methods(), 1u);
  EXPECT_STREQ(program->get_method_name(0).get(), "forward");
  Result<MethodMeta> meta = program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->num_inputs(), 2u);
  EXPECT_EQ(meta->num_outputs(), 1u);
  EXPECT_EQ(meta->num_planned_buffers(), 1u);
  EXPECT_EQ(meta->planned_buffer_size(0).get(), 96);
  Result<TensorInfo> info = meta->input_tensor_info(0);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->dtype, ScalarType::Float);
  EXPECT_EQ(info->nbytes, 24u);
  // Prepared bytes exist only once the method is loaded.
  EXPECT_EQ(meta->prepared_bytes().error(), Error::InvalidState);
  EXPECT_NE(std::string(last_error_message()).find("once the method is loaded"), std::string::npos);
}

TEST(ProgramTest, HeaderIsWrittenAfterTheIdentifier) {
  std::vector<uint8_t> bytes = write(make_axpy_program());
  ASSERT_GE(bytes.size(), 40u);
  EXPECT_EQ(std::memcmp(bytes.data() + 4, "ET12", 4), 0);
  EXPECT_EQ(std::memcmp(bytes.data() + 8, "eh00", 4), 0);
  uint32_t length = 0;
  uint64_t program_size = 0;
  std::memcpy(&length, bytes.data() + 12, 4);
  std::memcpy(&program_size, bytes.data() + 16, 8);
  EXPECT_EQ(length, 32u);
  EXPECT_EQ(program_size, bytes.size());  // No segments in this program.
}

TEST(ProgramTest, UnknownMethodIsNotFound) {
  std::vector<uint8_t> bytes = write(make_axpy_program());
  Result<Program> program = load_bytes(bytes);
  ASSERT_TRUE(program.ok());
  Result<MethodMeta> meta = program->method_meta("decode");
  EXPECT_EQ(meta.error(), Error::NotFound);
  EXPECT_NE(std::string(last_error_message()).find("decode"), std::string::npos);
}

TEST(ProgramTest, RefusesEmptyFile) {
  expect_refused({}, Error::InvalidProgram, "too short");
}

TEST(ProgramTest, RefusesWrongIdentifier) {
  std::vector<uint8_t> bytes = write(make_axpy_program());
  std::memcpy(bytes.data() + 4, "XX99", 4);
  expect_refused(bytes, Error::InvalidProgram, "file identifier is 'XX99'");
}

TEST(ProgramTest, RefusesTruncatedFile) {
  std::vector<uint8_t> bytes = write(make_axpy_program());
  bytes.resize(bytes.size() / 2);
  expect_refused(bytes, Error::InvalidProgram, "truncated");
}

TEST(ProgramTest, RefusesTruncatedFileWithoutHeader) {
  std::vector<uint8_t> bytes = write(make_axpy_program());
  std::memcpy(bytes.data() + 8, "zzzz", 4);  // No header: the FlatBuffer verifier must catch it.
  bytes.resize(bytes.size() - 40);
  expect_refused(bytes, Error::InvalidProgram, "verification");
}

TEST(ProgramTest, RefusesOutOfRangeValueIndex) {
  auto program = make_axpy_program();
  program.execution_plan[0]->chains[0]->instructions[0]->instr_args.AsKernelCall()->args[1] = 99;
  expect_refused(write(std::move(program)), Error::InvalidProgram, "value");
  auto program2 = make_axpy_program();
  program2.execution_plan[0]->outputs = {7};
  expect_refused(write(std::move(program2)), Error::InvalidProgram, "output 0: values index 7");
}

TEST(ProgramTest, RefusesPlannedOffsetPastItsBuffer) {
  auto program = make_axpy_program();
  program.execution_plan[0]->values[3]->val.AsTensor()->allocation_info->memory_offset_low = 80;
  expect_refused(write(std::move(program)), Error::InvalidProgram,
                 "value 3: planned offset 80 + 24 bytes is past the end of buffer 1");
}

TEST(ProgramTest, RefusesUnknownMemoryId) {
  auto program = make_axpy_program();
  program.execution_plan[0]->values[0]->val.AsTensor()->allocation_info->memory_id = 3;
  expect_refused(write(std::move(program)), Error::InvalidProgram, "memory_id 3");
}

TEST(ProgramTest, RefusesSegmentPastEndOfFile) {
  std::vector<uint8_t> bytes = testing::make_constant_program_bytes();
  // Drop the tail of the constant segment; patch the header so only the
  // segment table itself is inconsistent with the file.
  bytes.resize(bytes.size() - 8);
  const uint64_t zero = 0;
  std::memcpy(bytes.data() + 32, &zero, 8);  // segment_data_size unknown (older header).
  expect_refused(bytes, Error::InvalidProgram, "segment 0");
}

TEST(ProgramTest, RefusesBadDimOrderAndNegativeSize) {
  auto program = make_axpy_program();
  program.execution_plan[0]->values[0]->val.AsTensor()->dim_order = {1, 1};
  expect_refused(write(std::move(program)), Error::InvalidProgram, "not a permutation");
  auto program2 = make_axpy_program();
  program2.execution_plan[0]->values[0]->val.AsTensor()->sizes = {2, -3};
  expect_refused(write(std::move(program2)), Error::InvalidProgram, "negative size -3");
}

TEST(ProgramTest, RefusesPlannedBuffersWhoseSumWouldOverflow) {
  // Each size alone is a valid int64; their sum is not (a fuzzer finding).
  auto program = make_axpy_program();
  program.execution_plan[0]->non_const_buffer_sizes = {0, int64_t{1} << 62, int64_t{1} << 62};
  expect_refused(write(std::move(program)), Error::InvalidProgram, "past 2^48 bytes");
  auto program2 = make_axpy_program();
  program2.execution_plan[0]->non_const_buffer_sizes = {0, 64, (int64_t{1} << 48) - 63};
  expect_refused(write(std::move(program2)), Error::InvalidProgram, "planned buffer 2");
}

TEST(ProgramTest, RefusesUnknownScalarType) {
  auto program = make_axpy_program();
  program.execution_plan[0]->values[0]->val.AsTensor()->scalar_type =
      static_cast<ember_fb::ScalarType>(9);
  expect_refused(write(std::move(program)), Error::InvalidProgram, "unknown scalar type 9");
}

TEST(ProgramTest, RefusesOverflowingTensorSize) {
  auto program = make_axpy_program();
  program.execution_plan[0]->values[0]->val.AsTensor()->sizes = {1 << 30, 1 << 30};
  expect_refused(write(std::move(program)), Error::InvalidProgram, "overflows");
}

TEST(ProgramTest, RefusesJumpOutsideTheChain) {
  auto program = make_axpy_program();
  auto& plan = program.execution_plan[0];
  ember_fb::BoolT cond;
  cond.bool_val = true;
  auto v = std::make_unique<ember_fb::EValueT>();
  v->val.Set(std::move(cond));
  plan->values.push_back(std::move(v));
  ember_fb::JumpFalseCallT jump;
  jump.cond_value_index = 4;
  jump.destination_instruction = 5;
  auto ins = std::make_unique<ember_fb::InstructionT>();
  ins->instr_args.Set(std::move(jump));
  plan->chains[0]->instructions.push_back(std::move(ins));
  expect_refused(write(std::move(program)), Error::InvalidProgram,
                 "instruction 1: instructions index 5");
}

TEST(ProgramTest, RefusesIntListNamingANonInt) {
  auto program = make_axpy_program();
  ember_fb::IntListT list;
  list.items = {0};  // Value 0 is a tensor.
  auto v = std::make_unique<ember_fb::EValueT>();
  v->val.Set(std::move(list));
  program.execution_plan[0]->values.push_back(std::move(v));
  expect_refused(write(std::move(program)), Error::InvalidProgram, "IntList item 0");
}

TEST(ProgramTest, RefusesConstantIndexOutOfRange) {
  auto program = make_axpy_program();
  program.execution_plan[0]->values[1] =
      testing::tensor_value(ember_fb::ScalarType::FLOAT32, {2, 3}, 0, 0, 4);
  std::vector<uint8_t> c(24, 0);
  expect_refused(write(std::move(program), {c}), Error::InvalidProgram, "constant index 4");
}

// set_input writes into an input's memory: a constant (read-only, maybe
// mmapped, maybe packed at load) must never be one.
TEST(ProgramTest, RefusesAnInputWithConstantData) {
  auto program = make_axpy_program();
  program.execution_plan[0]->values[1] =
      testing::tensor_value(ember_fb::ScalarType::FLOAT32, {2, 3}, 0, 0, 1);
  std::vector<uint8_t> c(24, 0);
  expect_refused(write(std::move(program), {c}), Error::InvalidProgram,
                 "value 1: input 1 has constant data (buffer 1)");
}

TEST(ProgramTest, LoadsAProgramWithAMutableBuffer) {
  std::vector<uint8_t> bytes = testing::make_accumulator_program_bytes();
  Result<Program> program = load_bytes(bytes);
  ASSERT_TRUE(program.ok()) << last_error_message();
  const auto* segs = program->flatbuffer()->mutable_data_segments();
  ASSERT_NE(segs, nullptr);
  ASSERT_EQ(segs->size(), 1u);
  EXPECT_EQ(segs->Get(0)->offsets()->size(), 2u);  // entry 0 reserved
  EXPECT_EQ(program->mutable_segment_size(), 24u);
}

TEST(ProgramTest, RefusesMutableInitialValueOutOfRange) {
  auto program = testing::make_accumulator_program();
  program.execution_plan[0]->values[1]->val.AsTensor()->data_buffer_idx = 3;
  std::vector<uint8_t> initial(24, 0);
  expect_refused(testing::write_with_mutable_data(std::move(program), {initial}),
                 Error::InvalidProgram,
                 "value 1: initial value 3 of a mutable buffer is out of range (1 in "
                 "mutable_data_segments[0])");
}

TEST(ProgramTest, RefusesMutableBufferWithoutMutableData) {
  expect_refused(write(testing::make_accumulator_program()), Error::InvalidProgram,
                 "initial value 1 of a mutable buffer is out of range (0 in");
}

TEST(ProgramTest, RefusesMutableInitialValueSmallerThanTheTensor) {
  std::vector<uint8_t> initial(20, 0);  // the tensor needs 24
  expect_refused(testing::write_with_mutable_data(testing::make_accumulator_program(), {initial}),
                 Error::InvalidProgram, "lies past the end of the mutable data segment (20 bytes)");
}

TEST(ProgramTest, EveryPrefixOfAValidFileIsRefusedCleanly) {
  const std::vector<uint8_t> full = testing::make_constant_program_bytes();
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> bytes(full.begin(), full.begin() + static_cast<long>(n));
    Result<Program> program = load_bytes(bytes);
    EXPECT_FALSE(program.ok()) << "prefix of " << n << " bytes loaded";
  }
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST(ProgramTest, RefusesTensorWithoutMemoryThatIsNotAnInput) {
  auto program = testing::make_axpy_program();
  // The output loses its planned memory: nothing would ever give it data.
  program.execution_plan[0]->values[3]->val.AsTensor()->allocation_info.reset();
  expect_refused(testing::write(std::move(program)), Error::InvalidProgram,
                 "value 3: tensor of 24 bytes has neither planned nor constant memory");
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST(ProgramTest, RefusesMisalignedProgramData) {
  std::vector<uint8_t> bytes = testing::write(testing::make_axpy_program());
  std::vector<uint8_t> shifted(bytes.size() + 64);
  uint8_t* base = shifted.data() + (64 - reinterpret_cast<uintptr_t>(shifted.data()) % 64) % 64 + 1;
  std::memcpy(base, bytes.data(), bytes.size());
  BufferDataLoader loader(base, bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.error(), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("not 16-byte aligned"), std::string::npos);
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST(ProgramTest, RefusesUnionTagWithoutItsTable) {
  // Found by the fuzzer: a JumpFalseCall tag whose table is absent, which the
  // FlatBuffer verifier accepts. (The object API cannot write such a file.)
  std::ifstream f(std::string(EMBER_SOURCE_DIR) +
                      "/tests/fuzz_regressions/2026-11-29-union-tag-without-table",
                  std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
  ASSERT_FALSE(bytes.empty());
  expect_refused(bytes, Error::InvalidProgram, "has no arguments");
}

}  // namespace
}  // namespace ember
