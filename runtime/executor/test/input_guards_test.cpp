// The guard table of input_guards.h: parsing refuses malformed tables with a
// message naming the method and guard; checking evaluates the postfix ops on
// the inputs' sizes and fails with the guard's own message.
#include "runtime/executor/input_guards.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace ember {
namespace {

enum : int64_t { kConst = 1, kDim, kAdd, kMul, kFloorDiv, kMod, kEq, kGe };

struct Table {
  std::vector<uint8_t> bytes;
  void word(int64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
  }
  Table(int64_t version, int64_t count) {
    word(version);
    word(count);
  }
  Table& guard(const std::vector<std::array<int64_t, 3>>& ops, const std::string& message) {
    word(static_cast<int64_t>(ops.size()));
    for (const auto& op : ops) {
      for (int64_t w : op) word(w);
    }
    word(static_cast<int64_t>(message.size()));
    bytes.insert(bytes.end(), message.begin(), message.end());
    bytes.resize((bytes.size() + 7) / 8 * 8, 0);
    return *this;
  }
};

struct Inputs {
  int32_t sizes[2][2] = {{3, 4}, {3, 8}};
  uint8_t order[2] = {0, 1};
  int64_t strides[2][2];
  Tensor tensors[2];
  EValue values[2];
  int32_t inputs[2] = {0, 1};
  Inputs() {
    for (int i = 0; i < 2; ++i) {
      tensors[i].dim = 2;
      tensors[i].sizes = sizes[i];
      tensors[i].dim_order = order;
      tensors[i].strides = strides[i];
      values[i].tag = Tag::Tensor;
      values[i].as_tensor = &tensors[i];
    }
  }
};

TEST(InputGuardsTest, EvaluatesEqualitiesOfExpressionsAndLowerBounds) {
  alignas(16) uint8_t memory[4096];
  MemoryAllocator alloc(memory, sizeof(memory));
  Table t(1, 2);
  // input 1 dim 1 == 2 * input 0 dim 1; input 0 dim 1 >= 2.
  t.guard({{kDim, 1, 1}, {kConst, 2, 0}, {kDim, 0, 1}, {kMul, 0, 0}, {kEq, 0, 0}}, "not twice");
  t.guard({{kDim, 0, 1}, {kConst, 2, 0}, {kGe, 0, 0}}, "below 2");
  Result<InputGuardTable> table = parse_input_guards(t.bytes.data(), t.bytes.size(), "forward", 2, &alloc);
  ASSERT_TRUE(table.ok()) << last_error_message();
  Inputs in;
  EXPECT_EQ(check_input_guards(*table, in.values, in.inputs, "forward"), Error::Ok);
  in.sizes[1][1] = 9;
  EXPECT_EQ(check_input_guards(*table, in.values, in.inputs, "forward"), Error::InvalidArgument);
  EXPECT_STREQ(last_error_message(), "not twice");
  in.sizes[0][1] = 1;
  in.sizes[1][1] = 2;
  EXPECT_EQ(check_input_guards(*table, in.values, in.inputs, "forward"), Error::InvalidArgument);
  EXPECT_STREQ(last_error_message(), "below 2");
}

TEST(InputGuardsTest, FloorDivAndModFollowPython) {
  alignas(16) uint8_t memory[4096];
  MemoryAllocator alloc(memory, sizeof(memory));
  Table t(1, 2);
  t.guard({{kConst, -7, 0}, {kConst, 2, 0}, {kFloorDiv, 0, 0}, {kConst, -4, 0}, {kEq, 0, 0}}, "div");
  t.guard({{kConst, -7, 0}, {kConst, 2, 0}, {kMod, 0, 0}, {kConst, 1, 0}, {kAdd, 0, 0},
           {kConst, 2, 0}, {kEq, 0, 0}}, "mod");
  Result<InputGuardTable> table = parse_input_guards(t.bytes.data(), t.bytes.size(), "m", 0, &alloc);
  ASSERT_TRUE(table.ok()) << last_error_message();
  Inputs in;
  EXPECT_EQ(check_input_guards(*table, in.values, in.inputs, "m"), Error::Ok) << last_error_message();
}

TEST(InputGuardsTest, MalformedTablesAreRefusedWithTheGuard) {
  alignas(16) uint8_t memory[4096];
  struct Case {
    Table table;
    const char* message;
  };
  std::vector<Case> cases;
  cases.push_back({Table(2, 0), "version 2"});
  cases.push_back({Table(1, 1), "guard 0 is truncated"});
  cases.push_back({Table(1, 1).guard({{kEq, 0, 0}}, "x"), "has no operands"});
  cases.push_back({Table(1, 1).guard({{kConst, 1, 0}, {kConst, 1, 0}}, "x"), "leaves 2 values"});
  cases.push_back({Table(1, 1).guard({{42, 0, 0}}, "x"), "unknown op 42"});
  cases.push_back({Table(1, 1).guard({{kDim, 5, 0}}, "x"), "names input 5 dim 0"});
  cases.push_back({Table(1, 1000), "guard count 1000"});
  for (auto& c : cases) {
    MemoryAllocator alloc(memory, sizeof(memory));
    Result<InputGuardTable> table =
        parse_input_guards(c.table.bytes.data(), c.table.bytes.size(), "forward", 2, &alloc);
    EXPECT_EQ(table.error(), Error::InvalidProgram) << c.message;
    EXPECT_NE(std::string(last_error_message()).find(c.message), std::string::npos)
        << last_error_message();
    EXPECT_NE(std::string(last_error_message()).find("method 'forward'"), std::string::npos);
  }
  // A truncated message.
  Table t(1, 1);
  t.guard({{kConst, 1, 0}}, "a long message");
  MemoryAllocator alloc(memory, sizeof(memory));
  EXPECT_FALSE(parse_input_guards(t.bytes.data(), t.bytes.size() - 16, "forward", 2, &alloc).ok());
}

}  // namespace
}  // namespace ember
