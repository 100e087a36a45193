// Named-data files (.ptd): the writer and FlatTensorDataMap round trip, the
// map refuses malformed files naming the fault, and load_method binds an
// EXTERNAL tensor from it (or refuses, naming the tensor).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "extension/flat_tensor/flat_tensor_data_map.h"
#include "program/flat_tensor_writer.h"
#include "runtime/executor/program.h"
#include "runtime/executor/test/test_programs.h"

namespace ember {
namespace {

using extension::FlatTensorDataMap;

std::vector<uint8_t> float_bytes(std::vector<float> v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// A .ptd with "w" (float32 [2, 3], 1..6), "w_t" (the same bytes as [3, 2] in
// dim order [1, 0]) and "n" (int64 [1]).
// Three entries; "w" and "w_t" share their bytes (one segment).
std::vector<program::NamedTensor> ptd_tensors() {
  static const std::vector<uint8_t> w = float_bytes({1, 2, 3, 4, 5, 6});
  static const std::vector<uint8_t> n = {7, 0, 0, 0, 0, 0, 0, 0};
  std::vector<program::NamedTensor> tensors(3);
  tensors[0] = {"w", ember_fb::ScalarType::FLOAT32, {2, 3}, {0, 1}, w};
  tensors[1] = {"w_t", ember_fb::ScalarType::FLOAT32, {3, 2}, {1, 0}, w};
  tensors[2] = {"n", ember_fb::ScalarType::INT64, {1}, {0}, n};
  return tensors;
}

std::vector<uint8_t> make_ptd() {
  program::WriteResult r = program::write_flat_tensor(ptd_tensors());
  EXPECT_TRUE(r.ok()) << r.error;
  return r.bytes;
}

struct Loaded {
  explicit Loaded(const std::vector<uint8_t>& bytes) {
    storage.resize(bytes.size() + 64);
    const size_t pad = (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
    if (!bytes.empty()) std::memcpy(storage.data() + pad, bytes.data(), bytes.size());
    loader.emplace(storage.data() + pad, bytes.size());
  }
  std::vector<uint8_t> storage;
  std::optional<BufferDataLoader> loader;
};

void expect_refused(const std::vector<uint8_t>& bytes, const std::string& words) {
  Loaded f(bytes);
  clear_error_message();
  Result<FlatTensorDataMap> map = FlatTensorDataMap::load(&*f.loader);
  ASSERT_FALSE(map.ok()) << "expected a refusal mentioning: " << words;
  EXPECT_NE(std::string(last_error_message()).find(words), std::string::npos)
      << "message was: " << last_error_message();
}

TEST(FlatTensorTest, WrittenFileReadsBack) {
  std::vector<uint8_t> bytes = make_ptd();
  EXPECT_EQ(std::memcmp(bytes.data() + 4, "FT01", 4), 0);
  EXPECT_EQ(std::memcmp(bytes.data() + 8, "FH01", 4), 0);
  Loaded f(bytes);
  Result<FlatTensorDataMap> map = FlatTensorDataMap::load(&*f.loader);
  ASSERT_TRUE(map.ok()) << last_error_message();
  EXPECT_EQ(map->num_tensors(), 3u);
  Result<TensorLayout> layout = map->tensor_layout("w_t");
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->dtype, ScalarType::Float);
  EXPECT_EQ(std::vector<int32_t>(layout->sizes.begin(), layout->sizes.end()),
            (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(std::vector<uint8_t>(layout->dim_order.begin(), layout->dim_order.end()),
            (std::vector<uint8_t>{1, 0}));
  // Equal bytes share one segment: both names point at the same data.
  EXPECT_EQ(map->data("w")->data(), map->data("w_t")->data());
  EXPECT_EQ(reinterpret_cast<const float*>(map->data("w")->data())[5], 6.0f);
  EXPECT_EQ(map->data("n")->size(), 8u);
  EXPECT_EQ(map->tensor_layout("missing").error(), Error::NotFound);
}

// The file writer streams the in-memory writer's bytes (shared segment and
// alignment padding included), names a path it cannot open, and leaves no
// file behind a refused entry.
TEST(FlatTensorTest, FileWriterWritesTheInMemoryWritersBytes) {
  std::vector<program::NamedTensor> tensors = ptd_tensors();
  const std::string path = ::testing::TempDir() + "ember_flat_tensor_test.ptd";
  const std::string error = program::write_flat_tensor_file(path, tensors);
  ASSERT_TRUE(error.empty()) << error;
  std::ifstream f(path, std::ios::binary);
  const std::vector<uint8_t> got{std::istreambuf_iterator<char>(f),
                                 std::istreambuf_iterator<char>()};
  EXPECT_EQ(got, make_ptd());
  std::remove(path.c_str());

  const std::string missing = ::testing::TempDir() + "no_such_dir_for_ember/w.ptd";
  EXPECT_NE(program::write_flat_tensor_file(missing, tensors).find("cannot open " + missing),
            std::string::npos);
  tensors[2].key = "w";  // named twice
  const std::string refused = program::write_flat_tensor_file(path, tensors);
  EXPECT_NE(refused.find("named twice"), std::string::npos) << refused;
  EXPECT_FALSE(std::ifstream(path).good()) << "a refused file is removed";
}

TEST(FlatTensorTest, WriterRefusesBadEntries) {
  const std::vector<uint8_t> w = float_bytes({1, 2});
  std::vector<program::NamedTensor> twice = {{"a", ember_fb::ScalarType::FLOAT32, {2}, {0}, w},
                                             {"a", ember_fb::ScalarType::FLOAT32, {2}, {0}, w}};
  EXPECT_NE(program::write_flat_tensor(twice).error.find("'a' is named twice"), std::string::npos);
  std::vector<program::NamedTensor> short_data = {
      {"b", ember_fb::ScalarType::FLOAT32, {3}, {0}, w}};
  EXPECT_NE(program::write_flat_tensor(short_data).error.find("8 bytes of data for 12"),
            std::string::npos);
  std::vector<program::NamedTensor> bad_order = {
      {"c", ember_fb::ScalarType::FLOAT32, {1, 2}, {0, 0}, w}};
  EXPECT_NE(program::write_flat_tensor(bad_order).error.find("not a permutation"),
            std::string::npos);
}

TEST(FlatTensorTest, RefusesMalformedFiles) {
  std::vector<uint8_t> bytes = make_ptd();
  std::vector<uint8_t> wrong_id = bytes;
  std::memcpy(wrong_id.data() + 4, "ET12", 4);
  expect_refused(wrong_id, "identifier is not FT01");
  std::vector<uint8_t> no_header = bytes;
  std::memcpy(no_header.data() + 8, "eh00", 4);
  expect_refused(no_header, "no FH01 header");
  std::vector<uint8_t> truncated(bytes.begin(), bytes.end() - 8);
  expect_refused(truncated, "lie outside the file");
  expect_refused(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 20), "too short");
  // Every prefix is refused cleanly (no crash), or loads when nothing is cut.
  for (size_t n = 0; n < bytes.size(); n += 7) {
    Loaded f(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n));
    EXPECT_FALSE(FlatTensorDataMap::load(&*f.loader).ok()) << n;
  }
}

// "out = x + w * 2" where w (value 1) is EXTERNAL, named `key`, [2, 3].
std::vector<uint8_t> external_program(const std::string& key) {
  ember_fb::ProgramT program = testing::make_axpy_program();
  auto& plan = program.execution_plan[0];
  plan->values[1] = testing::tensor_value(ember_fb::ScalarType::FLOAT32, {2, 3}, 0, 0);
  auto info = std::make_unique<ember_fb::ExtraTensorInfoT>();
  info->fully_qualified_name = key;
  info->location = ember_fb::TensorDataLocation::EXTERNAL;
  plan->values[1]->val.AsTensor()->extra_tensor_info = std::move(info);
  plan->inputs = {0};
  plan->chains[0]->inputs = {0};
  return testing::write(std::move(program));
}

using testing::MethodFixture;

TEST(FlatTensorTest, LoadMethodBindsExternalTensors) {
  Loaded ptd(make_ptd());
  Result<FlatTensorDataMap> map = FlatTensorDataMap::load(&*ptd.loader);
  ASSERT_TRUE(map.ok());
  MethodFixture f(external_program("w"));
  Result<Program> program = Program::load(&f.loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  Result<Method> method = program->load_method("forward", &f.mm, &map.get());
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::vector<float> x = {10, 20, 30, 40, 50, 60};
  int32_t sizes[2] = {2, 3};
  uint8_t order[2] = {0, 1};
  int64_t strides[2];
  Tensor t;
  t.dtype = ScalarType::Float;
  t.dim = 2;
  t.sizes = sizes;
  t.dim_order = order;
  t.strides = strides;
  t.data = x.data();
  t.update_strides();
  ASSERT_EQ(method->set_input(0, t), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  const float* out = method->get_output(0).get()->to_tensor().data_ptr<float>();
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[i], x[i] + 2.0f * float(i + 1));
}

TEST(FlatTensorTest, LoadMethodNamesWhatIsMissingOrDifferent) {
  Loaded ptd(make_ptd());
  Result<FlatTensorDataMap> map = FlatTensorDataMap::load(&*ptd.loader);
  ASSERT_TRUE(map.ok());
  struct Case {
    std::string key;
    const NamedDataMap* data;
    std::string words;
  } cases[] = {
      {"w", nullptr, "tensor 'w' is stored outside the program"},
      {"nope", &map.get(), "tensor 'nope' is not in the named data file"},
      {"w_t", &map.get(), "tensor 'w_t' has another dtype, shape, dim order or size"},
      {"n", &map.get(), "tensor 'n' has another dtype, shape, dim order or size in the data "
                        "file than in the program (float32, rank 2, 24 bytes)"},
  };
  for (const Case& c : cases) {
    MethodFixture f(external_program(c.key));
    Result<Program> program = Program::load(&f.loader);
    ASSERT_TRUE(program.ok()) << last_error_message();
    clear_error_message();
    Result<Method> method = program->load_method("forward", &f.mm, c.data);
    ASSERT_FALSE(method.ok()) << c.key;
    EXPECT_NE(std::string(last_error_message()).find(c.words), std::string::npos)
        << "message was: " << last_error_message();
  }
}

TEST(FlatTensorTest, ProgramRefusesAnExternalTensorWithoutAName) {
  MethodFixture f(external_program(""));
  clear_error_message();
  EXPECT_FALSE(Program::load(&f.loader).ok());
  EXPECT_NE(std::string(last_error_message()).find("external tensor without a fully qualified name"),
            std::string::npos)
      << last_error_message();
}

}  // namespace
}  // namespace ember
