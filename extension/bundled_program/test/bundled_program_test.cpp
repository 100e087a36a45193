// Bundled programs: the writer's .bpte read back, inputs loaded, outputs
// verified with tolerances; each malformed file or mismatched test case is
// refused with a message naming method, case and value. Uses the tutorial's
// program M (tests/programs/m.pte: float32[3, 4] -> float32[3, 5]).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "extension/bundled_program/bundled_program.h"
#include "extension/module/module.h"
#include "program/bundled_program_writer.h"

using namespace ember;
using namespace ember::extension;
using ember::program::BundledTestCase;
using ember::program::BundledTestSuite;
using ember::program::BundledValue;

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

BundledValue float_tensor(std::vector<int32_t> sizes, const std::vector<float>& values) {
  BundledValue v;
  v.scalar_type = ember_fb::ScalarType::FLOAT32;
  v.sizes = std::move(sizes);
  v.data.resize(values.size() * 4);
  std::memcpy(v.data.data(), values.data(), v.data.size());
  return v;
}

// 16-aligned copy of bytes, as a mapped file or Module::from_bytes gives.
struct Aligned {
  explicit Aligned(const std::vector<uint8_t>& b) : storage(b.size() + 16) {
    pad = (16 - reinterpret_cast<uintptr_t>(storage.data()) % 16) % 16;
    std::memcpy(storage.data() + pad, b.data(), b.size());
    size = b.size();
  }
  uint8_t* data() { return storage.data() + pad; }
  std::vector<uint8_t> storage;
  size_t pad = 0, size = 0;
};

class BundledProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pte = read_file(std::string(EMBER_SOURCE_DIR) + "/tests/programs/m.pte");
    ASSERT_FALSE(pte.empty());
    // The expected outputs: what the runtime gives on the inputs.
    auto module = Module::from_bytes(pte.data(), pte.size());
    ASSERT_TRUE(module.ok()) << last_error_message();
    Method* m = module.get()->method("forward").get();
    for (int k = 0; k < 2; ++k) {
      std::vector<float> x(12);
      for (int i = 0; i < 12; ++i) x[i] = 0.25f * float(i - 5 + 3 * k);
      OwnedTensor in(ScalarType::Float, std::vector<int32_t>{3, 4});
      std::memcpy(in.bytes().data(), x.data(), 48);
      ASSERT_EQ(m->set_input(0, in.tensor()), Error::Ok);
      ASSERT_EQ(m->execute(), Error::Ok);
      const Tensor& out = m->get_output(0).get()->to_tensor();
      const auto* o = out.data_ptr<float>();
      BundledTestCase c;
      c.inputs.push_back(float_tensor({3, 4}, x));
      c.expected_outputs.push_back(float_tensor({3, 5}, std::vector<float>(o, o + 15)));
      cases.push_back(c);
    }
  }

  std::vector<uint8_t> write(const std::vector<BundledTestCase>& cs,
                             const std::string& method = "forward") {
    BundledTestSuite suite{method, cs};
    auto result = program::write_bundled_program(pte, {suite});
    EXPECT_TRUE(result.ok()) << result.error;
    return result.bytes;
  }

  // Loads case `c` of `bpte` into M's method, runs it, returns the check.
  Result<CaseReport> run(const std::vector<uint8_t>& bpte, size_t c, double rtol = 1e-5,
                         double atol = 1e-8) {
    Aligned bytes(bpte);
    Result<BundledProgram> b = BundledProgram::load(bytes.data(), bytes.size);
    if (!b.ok()) return b.error();
    auto module = Module::from_bytes(bytes.data(), bytes.size);
    if (!module.ok()) return module.error();
    Method* m = module.get()->method("forward").get();
    EMBER_TRY(b->load_bundled_input(*m, c));
    EMBER_TRY(m->execute());
    return b->check_method_outputs(*m, c, rtol, atol);
  }

  std::vector<uint8_t> pte;
  std::vector<BundledTestCase> cases;
};

TEST_F(BundledProgramTest, RoundTripPassesEveryCase) {
  const std::vector<uint8_t> bpte = write(cases);
  Aligned bytes(bpte);
  ASSERT_TRUE(is_bundled_program(bytes.data(), bytes.size));
  Result<BundledProgram> b = BundledProgram::load(bytes.data(), bytes.size);
  ASSERT_TRUE(b.ok()) << last_error_message();
  EXPECT_EQ(b->num_suites(), 1u);
  EXPECT_STREQ(b->suite_method(0), "forward");
  EXPECT_EQ(b->num_test_cases(0), 2u);
  ASSERT_EQ(b->program().size(), pte.size());
  EXPECT_EQ(std::memcmp(b->program().data(), pte.data(), pte.size()), 0);
  EXPECT_EQ(b->program_offset() % 32, 0u);

  // get_program_data: the program inside a .bpte, a .pte as it is.
  const void* data = nullptr;
  size_t size = 0;
  ASSERT_EQ(get_program_data(bytes.data(), bytes.size, &data, &size), Error::Ok);
  EXPECT_EQ(data, b->program().data());
  EXPECT_EQ(get_program_data(pte.data(), pte.size(), &data, &size), Error::Ok);
  EXPECT_EQ(data, pte.data());

  auto module = Module::from_bytes(bytes.data(), bytes.size);
  ASSERT_TRUE(module.ok()) << last_error_message();
  auto reports = run_bundled_tests(
      b.get(), [&](const std::string& name) { return module.get()->method(name); }, "", 1e-5,
      1e-8);
  ASSERT_TRUE(reports.ok()) << last_error_message();
  ASSERT_EQ(reports->size(), 2u);
  for (const CaseReport& r : reports.get()) {
    EXPECT_TRUE(r.passed);
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_EQ(r.outputs[0].numel, 15);
    EXPECT_EQ(r.outputs[0].max_abs_error, 0.0);
  }
}

TEST_F(BundledProgramTest, ModuleLoadsTheProgramInsideABpteFile) {
  const std::vector<uint8_t> bpte = write(cases);
  const auto path = std::filesystem::temp_directory_path() / "ember_bundled_test.bpte";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bpte.data()),
                                              static_cast<std::streamsize>(bpte.size()));
  for (auto mode : {Module::LoadMode::Mmap, Module::LoadMode::File}) {
    auto module = Module::load(path.string(), mode);
    ASSERT_TRUE(module.ok()) << last_error_message();
    EXPECT_EQ(module.get()->method_names(), std::vector<std::string>{"forward"});
    EXPECT_TRUE(module.get()->method("forward").ok()) << last_error_message();
  }
  std::filesystem::remove(path);
}

TEST_F(BundledProgramTest, OutputsOutsideTheToleranceFailNamingTheWorstElement) {
  std::vector<BundledTestCase> cs = cases;
  float* e = reinterpret_cast<float*>(cs[1].expected_outputs[0].data.data());
  const float right = e[7];
  e[7] = right + 0.5f;  // element [1, 2]
  e[3] += 1e-7f * std::abs(e[3]) + 1e-9f;  // within rtol 1e-5
  Result<CaseReport> r = run(write(cs), 1);
  ASSERT_TRUE(r.ok()) << last_error_message();
  EXPECT_FALSE(r->passed);
  EXPECT_FALSE(r->outputs[0].passed);
  EXPECT_EQ(r->outputs[0].worst_element, 7);
  EXPECT_FLOAT_EQ(r->outputs[0].actual, right);
  EXPECT_FLOAT_EQ(r->outputs[0].expected, right + 0.5f);
  EXPECT_NEAR(r->outputs[0].max_abs_error, 0.5, 1e-6);
  const std::string msg = describe_failure(r.get(), 1e-5, 1e-8);
  EXPECT_NE(msg.find("method 'forward' test case 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("output 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("element 7 [1, 2]"), std::string::npos) << msg;
  // A wide enough tolerance passes it.
  Result<CaseReport> loose = run(write(cs), 1, 0.0, 0.6);
  ASSERT_TRUE(loose.ok());
  EXPECT_TRUE(loose->passed);
  // verify_method_outputs: the same, as an error with that message.
  Aligned bytes(write(cs));
  Result<BundledProgram> b = BundledProgram::load(bytes.data(), bytes.size);
  auto module = Module::from_bytes(bytes.data(), bytes.size);
  Method* m = module.get()->method("forward").get();
  ASSERT_EQ(b->load_bundled_input(*m, 1), Error::Ok);
  ASSERT_EQ(m->execute(), Error::Ok);
  EXPECT_NE(b->verify_method_outputs(*m, 1), Error::Ok);
  EXPECT_NE(std::string(last_error_message()).find("element 7 [1, 2]"), std::string::npos);
  ASSERT_EQ(b->load_bundled_input(*m, 0), Error::Ok);
  ASSERT_EQ(m->execute(), Error::Ok);
  EXPECT_EQ(b->verify_method_outputs(*m, 0), Error::Ok);
}

TEST_F(BundledProgramTest, NaNMatchesOnlyNaN) {
  std::vector<BundledTestCase> cs = cases;
  reinterpret_cast<float*>(cs[0].expected_outputs[0].data.data())[0] = NAN;
  Result<CaseReport> r = run(write(cs), 0);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->passed);
  EXPECT_EQ(r->outputs[0].worst_element, 0);
}

TEST_F(BundledProgramTest, CorruptFilesAreRefused) {
  std::vector<uint8_t> bpte = write(cases);
  // Truncated.
  {
    std::vector<uint8_t> cut(bpte.begin(), bpte.begin() + static_cast<long>(bpte.size() / 2));
    Aligned bytes(cut);
    EXPECT_EQ(BundledProgram::load(bytes.data(), bytes.size).error(), Error::InvalidProgram);
    EXPECT_NE(std::string(last_error_message()).find("failed verification"), std::string::npos);
    EXPECT_FALSE(Module::from_bytes(bytes.data(), bytes.size).ok());
  }
  // The root offset pointing past the end.
  {
    std::vector<uint8_t> bad = bpte;
    bad[0] = 0xff;
    bad[1] = 0xff;
    bad[2] = 0xff;
    Aligned bytes(bad);
    EXPECT_EQ(BundledProgram::load(bytes.data(), bytes.size).error(), Error::InvalidProgram);
  }
  // Not a bundled program at all.
  {
    Aligned bytes(pte);
    EXPECT_FALSE(is_bundled_program(bytes.data(), bytes.size));
    EXPECT_EQ(BundledProgram::load(bytes.data(), bytes.size).error(), Error::InvalidProgram);
    EXPECT_NE(std::string(last_error_message()).find("not BP08"), std::string::npos);
  }
  // No program inside.
  {
    auto empty = program::write_bundled_program({}, {BundledTestSuite{"forward", cases}});
    Aligned bytes(empty.bytes);
    EXPECT_EQ(BundledProgram::load(bytes.data(), bytes.size).error(), Error::InvalidProgram);
    EXPECT_NE(std::string(last_error_message()).find("holds no program"), std::string::npos);
  }
  // A corrupt program inside: the program loader's own error.
  {
    std::vector<uint8_t> broken = pte;
    broken[4] = 'X';
    auto b = program::write_bundled_program(broken, {BundledTestSuite{"forward", cases}});
    Aligned bytes(b.bytes);
    EXPECT_TRUE(BundledProgram::load(bytes.data(), bytes.size).ok());
    EXPECT_FALSE(Module::from_bytes(bytes.data(), bytes.size).ok());
  }
}

TEST_F(BundledProgramTest, MismatchedTestCasesAreRefusedByName) {
  auto expect_error = [&](const std::vector<BundledTestCase>& cs, const std::string& needle,
                          const std::string& method = "forward") {
    Result<CaseReport> r = run(write(cs, method), 0);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(std::string(last_error_message()).find(needle), std::string::npos)
        << last_error_message();
  };
  {
    auto cs = cases;
    cs[0].inputs.push_back(cs[0].inputs[0]);
    expect_error(cs, "test case 0 has 2 inputs, the method takes 1");
  }
  {
    auto cs = cases;
    cs[0].inputs[0].scalar_type = ember_fb::ScalarType::INT32;
    expect_error(cs, "test case 0 input 0:");
  }
  {
    auto cs = cases;
    cs[0].inputs[0] = float_tensor({4, 3}, std::vector<float>(12, 1.0f));
    expect_error(cs, "test case 0 input 0:");
  }
  {
    auto cs = cases;
    cs[0].inputs[0].data.resize(20);
    expect_error(cs, "input 0: float32[3, 4] needs 48 bytes, the file holds 20");
  }
  {
    auto cs = cases;
    cs[0].inputs[0].dim_order = {0, 0};
    expect_error(cs, "dim order is not a permutation");
  }
  {
    auto cs = cases;
    cs[0].expected_outputs.push_back(cs[0].expected_outputs[0]);
    expect_error(cs, "expects 2 outputs, the method gives 1");
  }
  {
    auto cs = cases;
    cs[0].expected_outputs[0].scalar_type = ember_fb::ScalarType::INT32;
    expect_error(cs, "output 0: the method gives dtype float32, the test case expects int32");
  }
  {
    auto cs = cases;
    cs[0].expected_outputs[0] = float_tensor({5, 3}, std::vector<float>(15, 0.0f));
    expect_error(cs, "output 0: the method gives shape [3, 5], the test case expects [5, 3]");
  }
  {
    auto cs = cases;
    BundledValue i;
    i.kind = BundledValue::Kind::Int;
    cs[0].expected_outputs[0] = i;
    expect_error(cs, "output 0: the method gives Tensor, the test case expects Int");
  }
  expect_error(cases, "no test suite for method 'forward' (suites: 'backward')", "backward");
  {
    Aligned bytes(write(cases));
    Result<BundledProgram> b = BundledProgram::load(bytes.data(), bytes.size);
    auto module = Module::from_bytes(bytes.data(), bytes.size);
    Method* m = module.get()->method("forward").get();
    EXPECT_EQ(b->load_bundled_input(*m, 5), Error::InvalidArgument);
    EXPECT_NE(std::string(last_error_message()).find("has 2 test cases, no case 5"),
              std::string::npos);
  }
}

// Random byte flips anywhere in a .bpte: each file is refused with an error
// or runs to a report; nothing reads outside the file (the sanitizer build
// runs this too).
TEST_F(BundledProgramTest, CorruptedBytesAreRefusedOrRunSafely) {
  const std::vector<uint8_t> bpte = write(cases);
  uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  int refused = 0, ran = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<uint8_t> bad = bpte;
    for (int flips = 1 + static_cast<int>(next() % 4); flips > 0; --flips) {
      bad[next() % bad.size()] ^= static_cast<uint8_t>(1u << (next() % 8));
    }
    Aligned bytes(bad);
    Result<BundledProgram> b = BundledProgram::load(bytes.data(), bytes.size);
    if (!b.ok()) {
      ++refused;
      continue;
    }
    auto module = Module::from_bytes(bytes.data(), bytes.size);
    if (!module.ok()) {
      ++refused;
      continue;
    }
    auto reports = run_bundled_tests(
        b.get(), [&](const std::string& name) { return module.get()->method(name); }, "", 1e-5,
        1e-8);
    reports.ok() ? ++ran : ++refused;
  }
  EXPECT_EQ(refused + ran, 300);
  EXPECT_GT(refused, 0);
  EXPECT_GT(ran, 0);  // flips inside tensor data still give a well-formed file
}

TEST_F(BundledProgramTest, CasesWithoutExpectedOutputsOnlyRun) {
  auto cs = cases;
  cs[0].has_expected_outputs = false;
  cs[0].expected_outputs.clear();
  Result<CaseReport> r = run(write(cs), 0);
  ASSERT_TRUE(r.ok()) << last_error_message();
  EXPECT_FALSE(r->compared);
  EXPECT_TRUE(r->passed);
}

}  // namespace
