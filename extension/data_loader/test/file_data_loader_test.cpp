// FileDataLoader and MmapDataLoader: ranges, errors naming what is wrong, and
// the mmap loader's drop_pages (pages leave the process, the bytes stay).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "extension/data_loader/file_data_loader.h"

namespace ember::extension {
namespace {

// A temporary file of `size` patterned bytes, removed with the fixture.
class LoaderTest : public ::testing::Test {
 protected:
  void write(size_t size) {
    path_ = (std::filesystem::temp_directory_path() /
             ("ember_loader_test_" + std::to_string(::getpid()) + ".bin"))
                .string();
    bytes_.resize(size);
    for (size_t i = 0; i < size; ++i) bytes_[i] = static_cast<uint8_t>(i * 7 + 3);
    std::ofstream f(path_, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes_.data()), static_cast<std::streamsize>(size));
  }
  void TearDown() override {
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  std::string path_;
  std::vector<uint8_t> bytes_;
};

// Resident kB of the mapping that contains `p` (/proc/self/smaps "Rss:").
long resident_kib(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find('-')) {
      inside = addr >= lo && addr < hi;
      continue;
    }
    long kib = 0;
    if (inside && std::sscanf(line.c_str(), "Rss: %ld kB", &kib) == 1) return kib;
  }
  return -1;
}

TEST_F(LoaderTest, BothLoadersServeRangesAndRefuseOutOfRange) {
  write(10000);
  Result<FileDataLoader> file = FileDataLoader::from(path_.c_str());
  ASSERT_TRUE(file.ok()) << last_error_message();
  Result<MmapDataLoader> mapped = MmapDataLoader::from(path_.c_str());
  ASSERT_TRUE(mapped.ok()) << last_error_message();
  for (DataLoader* loader : {static_cast<DataLoader*>(&file.get()),
                             static_cast<DataLoader*>(&mapped.get())}) {
    EXPECT_EQ(loader->size().get(), 10000u);
    Result<FreeableBuffer> part = loader->load(4097, 1000);
    ASSERT_TRUE(part.ok()) << last_error_message();
    EXPECT_EQ(std::memcmp(part->data(), bytes_.data() + 4097, 1000), 0);
    Result<FreeableBuffer> past = loader->load(9500, 1000);
    EXPECT_EQ(past.error(), Error::OutOfRange);
  }
}

TEST_F(LoaderTest, MissingFileNamesThePath) {
  Result<MmapDataLoader> mapped = MmapDataLoader::from("/nonexistent/ember.pte");
  EXPECT_EQ(mapped.error(), Error::AccessFailed);
  EXPECT_NE(std::string(last_error_message()).find("/nonexistent/ember.pte"), std::string::npos)
      << last_error_message();
}

TEST_F(LoaderTest, MmapDropPagesReleasesMemoryAndKeepsTheBytes) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  write(64 * page);
  Result<MmapDataLoader> mapped = MmapDataLoader::from(path_.c_str());
  ASSERT_TRUE(mapped.ok()) << last_error_message();
  Result<FreeableBuffer> all = mapped->load(0, bytes_.size());
  ASSERT_TRUE(all.ok()) << last_error_message();
  const auto* data = static_cast<const uint8_t*>(all->data());
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < bytes_.size(); i += page) sink = sink + data[i];  // Fault every page in.
  const long before = resident_kib(data);
  ASSERT_GE(before, static_cast<long>(60 * page / 1024)) << "pages were not resident";
  // Drop all but the first and last half page (partial pages stay).
  mapped->drop_pages(data + page / 2, bytes_.size() - page);
  const long after = resident_kib(data);
  EXPECT_LE(after, static_cast<long>(2 * page / 1024)) << "before " << before << " kB";
  EXPECT_EQ(std::memcmp(data, bytes_.data(), bytes_.size()), 0);  // Read back from the file.
}

TEST_F(LoaderTest, FileLoaderIgnoresDropPages) {
  write(8192);
  Result<FileDataLoader> file = FileDataLoader::from(path_.c_str());
  ASSERT_TRUE(file.ok());
  Result<FreeableBuffer> all = file->load(0, bytes_.size());
  ASSERT_TRUE(all.ok());
  file->drop_pages(all->data(), all->size());
  EXPECT_EQ(std::memcmp(all->data(), bytes_.data(), bytes_.size()), 0);
}

}  // namespace
}  // namespace ember::extension
