// Method: load_method, set_input checks, execute, outputs, and the Module.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "extension/module/module.h"
#include "runtime/executor/program.h"
#include "runtime/executor/test/host_tensor.h"
#include "runtime/executor/test/test_programs.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernel/thread_pool.h"

namespace ember {
namespace {

using Fixture = testing::MethodFixture;

using testing::HostTensor;

TEST(MethodTest, RunsAndReturnsOutputs) {
  Fixture f(testing::write(testing::make_axpy_program()));
  Result<Program> program = Program::load(&f.loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_TRUE(method.ok()) << last_error_message();
  HostTensor x({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor y({2, 3}, {10, 20, 30, 40, 50, 60});
  ASSERT_EQ(method->set_input(0, x.t), Error::Ok);
  ASSERT_EQ(method->set_input(1, y.t), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  const EValue* out = method->get_output(0).get();
  ASSERT_TRUE(out->is_tensor());
  const float* o = out->to_tensor().data_ptr<float>();
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(o[i], x.data[i] + 2 * y.data[i]);
  // Runs again with new inputs.
  x.data[0] = 100;
  ASSERT_EQ(method->set_input(0, x.t), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok);
  EXPECT_FLOAT_EQ(out->to_tensor().data_ptr<float>()[0], 120);
}

struct TwoBufferFixture {
  explicit TwoBufferFixture(const std::vector<uint8_t>& bytes) : loader(bytes.data(), bytes.size()) {}
  BufferDataLoader loader;
  alignas(64) uint8_t pool[16384];
  alignas(64) uint8_t arena[96];
  alignas(64) uint8_t state[32];
  std::span<uint8_t> spans[2] = {{arena, sizeof(arena)}, {state, sizeof(state)}};
  MemoryAllocator allocator{pool, sizeof(pool)};
  MemoryManager mm{&allocator, std::span<std::span<uint8_t>>(spans, 2)};
};

// A mutable buffer starts from its initial value, keeps what each execute()
// wrote, belongs to its own loaded method, and reset puts it back.
TEST(MethodTest, MutableBufferKeepsStateAcrossRunsAndResets) {
  std::vector<uint8_t> bytes = testing::make_accumulator_program_bytes();
  TwoBufferFixture a(bytes), b(bytes);
  Result<Program> program = Program::load(&a.loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  Result<Method> ma = program->load_method("forward", &a.mm);
  ASSERT_TRUE(ma.ok()) << last_error_message();
  Result<Method> mb = program->load_method("forward", &b.mm);
  ASSERT_TRUE(mb.ok()) << last_error_message();
  ASSERT_EQ(ma->num_mutable_buffers(), 1u);
  EXPECT_EQ(ma->mutable_buffer(0).nbytes, 24u);
  EXPECT_EQ(ma->mutable_buffer(0).value, 1);
  HostTensor x({2, 3}, {1, 1, 1, 1, 1, 1});
  ASSERT_EQ(ma->set_input(0, x.t), Error::Ok);
  ASSERT_EQ(mb->set_input(0, x.t), Error::Ok);
  for (int run = 1; run <= 3; ++run) {
    ASSERT_EQ(ma->execute(), Error::Ok) << last_error_message();
    const float* o = ma->get_output(0).get()->to_tensor().data_ptr<float>();
    for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(o[i], float(i + 1 + run)) << "run " << run;
  }
  ASSERT_EQ(mb->execute(), Error::Ok);  // b's first run: from the initial value
  EXPECT_FLOAT_EQ(mb->get_output(0).get()->to_tensor().data_ptr<float>()[0], 2.0f);
  ma->reset_mutable_buffers();
  ASSERT_EQ(ma->execute(), Error::Ok);
  EXPECT_FLOAT_EQ(ma->get_output(0).get()->to_tensor().data_ptr<float>()[5], 7.0f);
}

// With a tracer set, execute records one event per instruction it runs, in
// order, with non-decreasing times; without one, nothing.
TEST(MethodTest, EventTracerRecordsEachInstruction) {
  Fixture f(testing::write(testing::make_axpy_program()));
  Result<Program> program = Program::load(&f.loader);
  ASSERT_TRUE(program.ok());
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_TRUE(method.ok());
  HostTensor x({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_EQ(method->set_input(0, x.t), Error::Ok);
  ASSERT_EQ(method->set_input(1, x.t), Error::Ok);
  ProfileEvent events[3];
  EventTracer tracer(events, 3);
  method->set_event_tracer(&tracer);
  for (int run = 0; run < 4; ++run) ASSERT_EQ(method->execute(), Error::Ok);
  EXPECT_EQ(tracer.size(), 3u);
  EXPECT_EQ(tracer.dropped(), 1u);  // the fourth run's event did not fit
  for (size_t i = 0; i < tracer.size(); ++i) {
    EXPECT_EQ(events[i].instruction, 0u);
    EXPECT_LE(events[i].start_ns, events[i].end_ns);
    if (i > 0) {
      EXPECT_LE(events[i - 1].end_ns, events[i].start_ns);
    }
  }
  method->set_event_tracer(nullptr);
  tracer.clear();
  ASSERT_EQ(method->execute(), Error::Ok);
  EXPECT_EQ(tracer.size(), 0u);
}

// With an output logger set, execute hands it each instruction's arguments
// right after the instruction ran (the out argument holds the result); the
// logger moves with the method; unset, it is not called.
TEST(MethodTest, OutputLoggerSeesEachInstruction) {
  struct Counting final : IntermediateOutputLogger {
    void log_instruction(uint32_t instruction, std::span<EValue* const> args) override {
      ++calls;
      last_instruction = instruction;
      num_args = args.size();
      first_out = args.back()->to_tensor().data_ptr<float>()[0];
    }
    int calls = 0;
    uint32_t last_instruction = 99;
    size_t num_args = 0;
    float first_out = 0;
  } logger;
  Fixture f(testing::write(testing::make_axpy_program()));
  Result<Program> program = Program::load(&f.loader);
  ASSERT_TRUE(program.ok());
  Result<Method> loaded = program->load_method("forward", &f.mm);
  ASSERT_TRUE(loaded.ok());
  loaded->set_output_logger(&logger);
  Method method(std::move(*loaded));
  HostTensor x({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_EQ(method.set_input(0, x.t), Error::Ok);
  ASSERT_EQ(method.set_input(1, x.t), Error::Ok);
  ASSERT_EQ(method.execute(), Error::Ok);
  EXPECT_EQ(logger.calls, 1);
  EXPECT_EQ(logger.last_instruction, 0u);
  EXPECT_EQ(logger.num_args, 5u);
  EXPECT_FLOAT_EQ(logger.first_out, 3.0f);  // 1 + 2 * 1
  method.set_output_logger(nullptr);
  ASSERT_EQ(method.execute(), Error::Ok);
  EXPECT_EQ(logger.calls, 1);
}

// The loaded method (moved out of the loader, then out of the Result) keeps
// the process-wide pool its kernels split work over.
TEST(MethodTest, KeepsTheProcessThreadPool) {
  Fixture f(testing::write(testing::make_axpy_program()));
  Result<Program> program = Program::load(&f.loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_TRUE(method.ok()) << last_error_message();
  EXPECT_EQ(method->threads(), thread_count());
  Method moved(std::move(*method));
  EXPECT_EQ(moved.threads(), thread_count());
}

TEST(MethodTest, ExecuteBeforeInputsIsAnError) {
  Fixture f(testing::write(testing::make_axpy_program()));
  Result<Program> program = Program::load(&f.loader);
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_TRUE(method.ok());
  EXPECT_EQ(method->execute(), Error::InvalidState);
  EXPECT_NE(std::string(last_error_message()).find("input 0 was not set"), std::string::npos);
}

TEST(MethodTest, SetInputChecksDtypeRankAndShape) {
  Fixture f(testing::write(testing::make_axpy_program()));
  Result<Program> program = Program::load(&f.loader);
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_TRUE(method.ok());
  HostTensor wrong_type({2, 3}, {0, 0, 0, 0, 0, 0}, ScalarType::Int);
  EXPECT_EQ(method->set_input(0, wrong_type.t), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("expected dtype float32, got int32"),
            std::string::npos);
  HostTensor wrong_rank({6}, {0, 0, 0, 0, 0, 0});
  EXPECT_EQ(method->set_input(0, wrong_rank.t), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("rank-2"), std::string::npos);
  HostTensor wrong_shape({3, 2}, {0, 0, 0, 0, 0, 0});
  EXPECT_EQ(method->set_input(1, wrong_shape.t), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("expected shape [2, 3], got [3, 2]"),
            std::string::npos);
  EXPECT_EQ(method->set_input(5, wrong_shape.t), Error::InvalidArgument);
  // The method stays usable.
  HostTensor x({2, 3}, {1, 1, 1, 1, 1, 1});
  ASSERT_EQ(method->set_input(0, x.t), Error::Ok);
  ASSERT_EQ(method->set_input(1, x.t), Error::Ok);
  EXPECT_EQ(method->execute(), Error::Ok);
}

TEST(MethodTest, MissingKernelNamesTheOperator) {
  auto program_t = testing::make_axpy_program();
  program_t.execution_plan[0]->operators[0]->name = "aten::does_not_exist";
  Fixture f(testing::write(std::move(program_t)));
  Result<Program> program = Program::load(&f.loader);
  ASSERT_TRUE(program.ok());
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.error(), Error::OperatorMissing);
  EXPECT_NE(std::string(last_error_message()).find("aten::does_not_exist.out"), std::string::npos);
}

TEST(MethodTest, WrongArgumentCountIsRefusedAtLoad) {
  auto program_t = testing::make_axpy_program();
  program_t.execution_plan[0]->chains[0]->instructions[0]->instr_args.AsKernelCall()->args = {0, 1, 2, 3};
  Fixture f(testing::write(std::move(program_t)));
  Result<Program> program = Program::load(&f.loader);
  ASSERT_TRUE(program.ok());
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_FALSE(method.ok());
  EXPECT_NE(std::string(last_error_message()).find("takes 5 arguments, the program passes 4"),
            std::string::npos);
}

TEST(MethodTest, TooSmallPlannedBufferIsRefused) {
  Fixture f(testing::write(testing::make_axpy_program()));
  f.arena_span = std::span<uint8_t>(f.arena, 64);
  Result<Program> program = Program::load(&f.loader);
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_FALSE(method.ok());
  EXPECT_NE(std::string(last_error_message()).find("has 64 bytes, the plan needs 96"),
            std::string::npos);
}

TEST(MethodTest, ExhaustedMethodAllocatorIsAnError) {
  Fixture f(testing::write(testing::make_axpy_program()));
  MemoryAllocator tiny(f.pool, 64);
  MemoryManager mm(&tiny, std::span<std::span<uint8_t>>(&f.arena_span, 1));
  Result<Program> program = Program::load(&f.loader);
  Result<Method> method = program->load_method("forward", &mm);
  EXPECT_EQ(method.error(), Error::MemoryAllocationFailed);
}

TEST(ModuleTest, RunsAProgramWithConstants) {
  const std::vector<uint8_t> bytes = testing::make_constant_program_bytes();
  auto module = extension::Module::from_bytes(bytes.data(), bytes.size());
  ASSERT_TRUE(module.ok()) << last_error_message();
  Result<Method*> method = module.get()->method("forward");
  ASSERT_TRUE(method.ok()) << last_error_message();
  HostTensor x({2, 3}, {10, 10, 10, 10, 10, 10});
  ASSERT_EQ(method.get()->set_input(0, x.t), Error::Ok);
  ASSERT_EQ(method.get()->execute(), Error::Ok);
  const float* o = method.get()->get_output(0).get()->to_tensor().data_ptr<float>();
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(o[i], 11.0f + static_cast<float>(i));
  EXPECT_EQ(module.get()->method_names(), std::vector<std::string>{"forward"});
}

TEST(ModuleTest, MissingFileNamesThePath) {
  auto module = extension::Module::load("/nonexistent/model.pte");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.error(), Error::AccessFailed);
  EXPECT_NE(std::string(last_error_message()).find("/nonexistent/model.pte"), std::string::npos);
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST(MethodTest, NullInputDataIsRefused) {
  Fixture f(testing::write(testing::make_axpy_program()));
  Result<Program> program = Program::load(&f.loader);
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_TRUE(method.ok());
  HostTensor x({2, 3}, {1, 2, 3, 4, 5, 6});
  x.t.data = nullptr;
  EXPECT_EQ(method->set_input(0, x.t), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("input 0: tensor has no data"), std::string::npos);
}

TEST(MethodTest, DynamicInputAcceptsShapesWithinItsBoundsOnly) {
  auto program_t = testing::make_axpy_program();
  for (int v : {0, 1, 3}) {
    program_t.execution_plan[0]->values[v]->val.AsTensor()->shape_dynamism =
        ember_fb::TensorShapeDynamism::DYNAMIC_BOUND;
  }
  Fixture f(testing::write(std::move(program_t)));
  Result<Program> program = Program::load(&f.loader);
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_TRUE(method.ok()) << last_error_message();
  HostTensor too_wide({2, 4}, std::vector<float>(8, 1.0f));
  EXPECT_EQ(method->set_input(0, too_wide.t), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("input 0: dim 1 is 4, above its bound 3"),
            std::string::npos)
      << last_error_message();
  HostTensor smaller({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(method->set_input(0, smaller.t), Error::Ok) << last_error_message();
  EXPECT_EQ(method->get_input(0).get()->to_tensor().size(1), 2);
}

}  // namespace
}  // namespace ember

#include "runtime/kernel/kernel_signature.h"

namespace ember {
namespace {

const KernelSignature kAxpySignature[] = {{"test::axpy.out", "TTSTT", "x,y,alpha,out,return"}};
const KernelSignatureRegistration kAxpySignatureRegistration(kAxpySignature, 1);

TEST(MethodTest, ArgumentOfTheWrongKindIsRefusedAtLoad) {
  auto program_t = testing::make_axpy_program();
  // Pass the Int alpha (value 2) where the kernel reads tensor y.
  program_t.execution_plan[0]->chains[0]->instructions[0]->instr_args.AsKernelCall()->args = {0, 2, 2, 3, 3};
  Fixture f(testing::write(std::move(program_t)));
  Result<Program> program = Program::load(&f.loader);
  ASSERT_TRUE(program.ok());
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.error(), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message())
                .find("test::axpy.out argument 1 (y) must be a tensor, the program passes a Int"),
            std::string::npos)
      << last_error_message();
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST(MethodTest, PlannedOffsetNotAlignedToTheElementIsRefused) {
  auto program_t = testing::make_axpy_program();
  program_t.execution_plan[0]->values[3]->val.AsTensor()->allocation_info->memory_offset_low = 65;
  Fixture f(testing::write(std::move(program_t)));
  Result<Program> program = Program::load(&f.loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_FALSE(method.ok());
  EXPECT_NE(std::string(last_error_message()).find("value 3: float32 data at address"),
            std::string::npos)
      << last_error_message();
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

// A typed kernel (as the generated table registers them) whose dtype set is
// {float32} for argument 0: load_method refuses an int32 `x` before anything
// runs, naming the op, the argument, the dtype and the set.
void float_only_axpy(KernelContext& ctx, EValue** args) {
  ctx.fail(Error::Internal, "must not run: load_method should have refused the dtype");
  (void)args;
}
constexpr Kernel kFloatOnlyAxpy[] = {{"test::float_axpy.out", float_only_axpy, "TTSTT",
                                      "x,y,alpha,out,return", nullptr, -1,
                                      uint16_t{1u << static_cast<unsigned>(ScalarType::Float)}, 0}};
const KernelTableRegistration kFloatOnlyAxpyRegistration(kFloatOnlyAxpy, 1);

ember_fb::ProgramT float_axpy_program(ember_fb::ScalarType x_type) {
  auto program_t = testing::make_axpy_program();
  program_t.execution_plan[0]->operators[0]->name = "test::float_axpy";
  program_t.execution_plan[0]->values[0]->val.AsTensor()->scalar_type = x_type;
  return program_t;
}

TEST(MethodTest, DtypeOutsideTheKernelsSetIsRefusedAtLoad) {
  Fixture f(testing::write(float_axpy_program(ember_fb::ScalarType::INT32)));
  Result<Program> program = Program::load(&f.loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  Result<Method> method = program->load_method("forward", &f.mm);
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.error(), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message())
                .find("instruction 0: test::float_axpy.out: x has dtype int32; the kernel "
                      "computes float32"),
            std::string::npos)
      << last_error_message();
}

TEST(MethodTest, DtypeInsideTheKernelsSetLoads) {
  Fixture f(testing::write(float_axpy_program(ember_fb::ScalarType::FLOAT32)));
  Result<Program> program = Program::load(&f.loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  EXPECT_TRUE(program->load_method("forward", &f.mm).ok()) << last_error_message();
}

TEST(MethodTest, DtypeSetCheckListsEveryDtypeAndSkipsNone) {
  constexpr uint16_t kInts = (1u << 0) | (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4);
  const Kernel kernel{"test::ints.out", float_only_axpy, "tT", "self,out", nullptr, -1, kInts, 0};
  EValue none;
  EValue* args[] = {&none, &none};
  EXPECT_EQ(check_kernel_dtype(kernel, args, 2), Error::Ok);  // None: nothing to check
  std::vector<float> data(2);
  HostTensor half({2}, data, ScalarType::Half);
  EValue t;
  t.tag = Tag::Tensor;
  t.as_tensor = &half.t;
  args[0] = &t;
  EXPECT_EQ(check_kernel_dtype(kernel, args, 2), Error::InvalidProgram);
  EXPECT_STREQ(last_error_message(),
               "test::ints.out: self has dtype float16; the kernel computes uint8, int8, int16, "
               "int32, int64");
}

}  // namespace
}  // namespace ember
