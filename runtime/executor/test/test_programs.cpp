#include "runtime/executor/test/test_programs.h"

#include <gtest/gtest.h>

#include <cstring>

#include "runtime/kernel/kernel_registry.h"

namespace ember::testing {
namespace {

// out = x + alpha * y, float32, same shapes: a kernel owned by the tests so
// runtime tests do not depend on the kernel library.
void axpy_out(KernelContext& ctx, EValue** args) {
  const Tensor& x = args[0]->to_tensor();
  const Tensor& y = args[1]->to_tensor();
  const double alpha = args[2]->scalar_as_double();
  Tensor& out = args[3]->to_tensor();
  EMBER_KERNEL_CHECK(ctx, x.numel == y.numel && x.numel == out.numel, "shape mismatch");
  EMBER_KERNEL_CHECK(ctx, x.dtype == ScalarType::Float, "x must be float32, got %s",
                     scalar_type_name(x.dtype));
  for (int64_t i = 0; i < out.numel; ++i) {
    out.data_ptr<float>()[i] =
        x.data_ptr<float>()[i] + static_cast<float>(alpha) * y.data_ptr<float>()[i];
  }
}
EMBER_REGISTER_KERNEL("test::axpy.out", axpy_out, 5);

}  // namespace

std::unique_ptr<ember_fb::EValueT> tensor_value(ember_fb::ScalarType type,
                                                std::vector<int32_t> sizes, uint32_t memory_id,
                                                uint64_t offset, uint32_t data_buffer_idx) {
  auto t = std::make_unique<ember_fb::TensorT>();
  t->scalar_type = type;
  for (size_t i = 0; i < sizes.size(); ++i) t->dim_order.push_back(static_cast<uint8_t>(i));
  t->sizes = std::move(sizes);
  t->data_buffer_idx = data_buffer_idx;
  if (memory_id > 0) {
    t->allocation_info = std::make_unique<ember_fb::AllocationDetailsT>();
    t->allocation_info->memory_id = memory_id;
    t->allocation_info->memory_offset_low = static_cast<uint32_t>(offset);
    t->allocation_info->memory_offset_high = static_cast<uint32_t>(offset >> 32);
  }
  auto v = std::make_unique<ember_fb::EValueT>();
  v->val.Set(std::move(*t));
  return v;
}

std::unique_ptr<ember_fb::EValueT> int_value(int64_t value) {
  ember_fb::IntT i;
  i.int_val = value;
  auto v = std::make_unique<ember_fb::EValueT>();
  v->val.Set(std::move(i));
  return v;
}

ember_fb::ProgramT make_axpy_program() {
  ember_fb::ProgramT program;
  auto plan = std::make_unique<ember_fb::ExecutionPlanT>();
  plan->name = "forward";
  plan->values.push_back(tensor_value(ember_fb::ScalarType::FLOAT32, {2, 3}, 1, 0));   // 0: x
  plan->values.push_back(tensor_value(ember_fb::ScalarType::FLOAT32, {2, 3}, 1, 32));  // 1: y
  plan->values.push_back(int_value(2));                                                // 2: alpha
  plan->values.push_back(tensor_value(ember_fb::ScalarType::FLOAT32, {2, 3}, 1, 64));  // 3: out
  plan->inputs = {0, 1};
  plan->outputs = {3};
  auto op = std::make_unique<ember_fb::OperatorT>();
  op->name = "test::axpy";
  op->overload = "out";
  plan->operators.push_back(std::move(op));
  auto chain = std::make_unique<ember_fb::ChainT>();
  chain->inputs = {0, 1};
  chain->outputs = {3};
  ember_fb::KernelCallT call;
  call.op_index = 0;
  call.args = {0, 1, 2, 3, 3};
  auto ins = std::make_unique<ember_fb::InstructionT>();
  ins->instr_args.Set(std::move(call));
  chain->instructions.push_back(std::move(ins));
  plan->chains.push_back(std::move(chain));
  plan->non_const_buffer_sizes = {0, 96};
  program.execution_plan.push_back(std::move(plan));
  return program;
}

std::vector<uint8_t> write(ember_fb::ProgramT program,
                           const std::vector<std::vector<uint8_t>>& constants) {
  std::vector<std::span<const uint8_t>> spans;
  for (const auto& c : constants) spans.emplace_back(c.data(), c.size());
  program::WriteResult result = program::write_program(std::move(program), spans, {});
  EXPECT_TRUE(result.ok()) << result.error;
  return std::move(result.bytes);
}

std::vector<uint8_t> make_constant_program_bytes() {
  ember_fb::ProgramT program = make_axpy_program();
  auto& plan = program.execution_plan[0];
  // y becomes constant #1 instead of an input.
  plan->values[1] = tensor_value(ember_fb::ScalarType::FLOAT32, {2, 3}, 0, 0, 1);
  plan->values[2] = int_value(1);
  plan->inputs = {0};
  plan->chains[0]->inputs = {0};
  std::vector<uint8_t> c(6 * sizeof(float));
  const float values[6] = {1, 2, 3, 4, 5, 6};
  std::memcpy(c.data(), values, sizeof(values));
  return write(std::move(program), {c});
}

ember_fb::ProgramT make_accumulator_program() {
  ember_fb::ProgramT program = make_axpy_program();
  auto& plan = program.execution_plan[0];
  // value 1 (y) becomes the mutable buffer: buffer 2 at 0, initial value #1.
  plan->values[1] = tensor_value(ember_fb::ScalarType::FLOAT32, {2, 3}, 2, 0, 1);
  plan->values[2] = int_value(1);
  plan->inputs = {0};
  plan->outputs = {1};
  plan->chains[0]->inputs = {0};
  plan->chains[0]->outputs = {1};
  // out = state + x * 1, written into state itself.
  plan->chains[0]->instructions[0]->instr_args.AsKernelCall()->args = {1, 0, 2, 1, 1};
  plan->non_const_buffer_sizes = {0, 96, 32};
  return program;
}

std::vector<uint8_t> write_with_mutable_data(ember_fb::ProgramT program,
                                             const std::vector<std::vector<uint8_t>>& mutable_data) {
  std::vector<std::span<const uint8_t>> spans;
  for (const auto& c : mutable_data) spans.emplace_back(c.data(), c.size());
  program::WriteResult result = program::write_program(std::move(program), {}, {}, {}, {}, spans);
  EXPECT_TRUE(result.ok()) << result.error;
  return std::move(result.bytes);
}

std::vector<uint8_t> make_accumulator_program_bytes() {
  std::vector<uint8_t> initial(6 * sizeof(float));
  const float values[6] = {1, 2, 3, 4, 5, 6};
  std::memcpy(initial.data(), values, sizeof(values));
  return write_with_mutable_data(make_accumulator_program(), {initial});
}

}  // namespace ember::testing
