// Replays every input the fuzzer found (tests/fuzz_regressions/) and every
// checked-in program through the fuzzer's own harness: each must return.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz/run_program.h"

namespace {

std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

TEST(FuzzRegressionTest, CheckedInProgramsRun) {
  const auto dir = std::filesystem::path(EMBER_SOURCE_DIR) / "tests/programs";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".pte") continue;
    const std::vector<uint8_t> bytes = read_file(entry.path());
    EXPECT_GE(ember::fuzz::run_program_bytes(bytes.data(), bytes.size()), 1) << entry.path();
    ++files;
  }
  EXPECT_GE(files, 5);
}

TEST(FuzzRegressionTest, FindingsNoLongerCrash) {
  const auto dir = std::filesystem::path(EMBER_SOURCE_DIR) / "tests/fuzz_regressions";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() == ".md") continue;
    const std::vector<uint8_t> bytes = read_file(entry.path());
    ember::fuzz::run_program_bytes(bytes.data(), bytes.size());  // Must return.
    SUCCEED() << entry.path();
  }
}

}  // namespace
