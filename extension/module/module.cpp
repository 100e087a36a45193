#include "extension/module/module.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "extension/bundled_program/bundled_program.h"
#include "extension/data_loader/file_data_loader.h"
#include "extension/flat_tensor/flat_tensor_data_map.h"

namespace ember::extension {
namespace {

struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<uint8_t, AlignedFree>;

// 64 bytes: a cache line, and enough for every SIMD width the kernels use.
AlignedBytes aligned_bytes(size_t size) {
  const size_t rounded = (size + 63) & ~size_t{63};
  return AlignedBytes(static_cast<uint8_t*>(std::aligned_alloc(64, rounded == 0 ? 64 : rounded)));
}

// The method's pool, where prepare packs the weights: when it is several MiB,
// 2-MiB aligned and asked to be backed by huge pages, so that kernels
// streaming hundreds of MiB of packed weights (a decoding step) miss the TLB
// once per 2 MiB instead of per 4 KiB. Its pages are written at load. (Not the
// planned activation buffers: their first touch is the first execute, where
// faulting in and zeroing 2-MiB pages measured 10-60 ms more time to first
// token on an LLM.)
AlignedBytes pool_bytes(size_t size) {
  constexpr size_t kHuge = size_t{2} << 20;
  if (size < 2 * kHuge) return aligned_bytes(size);
  const size_t rounded = (size + kHuge - 1) & ~(kHuge - 1);
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kHuge, rounded));
#if defined(MADV_HUGEPAGE)
  if (p != nullptr) ::madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return AlignedBytes(p);
}

}  // namespace

struct Module::LoadedMethod {
  std::vector<AlignedBytes> planned;
  std::vector<std::span<uint8_t>> planned_spans;
  AlignedBytes pool;
  size_t pool_size = 0;
  std::optional<MemoryAllocator> allocator;
  std::optional<MemoryManager> memory_manager;
  std::optional<Method> method;
  size_t planned_total = 0;
};

Module::~Module() {
  instances_.clear();  // Methods before the program and data, those before their loaders.
  methods_.clear();
  program_.reset();
}

namespace {

Result<std::unique_ptr<DataLoader>> open_file(const std::string& path, Module::LoadMode mode) {
  if (mode == Module::LoadMode::Mmap) {
    Result<MmapDataLoader> loader = MmapDataLoader::from(path.c_str());
    if (!loader.ok()) return loader.error();
    return std::unique_ptr<DataLoader>(new MmapDataLoader(std::move(loader.get())));
  }
  Result<FileDataLoader> loader = FileDataLoader::from(path.c_str());
  if (!loader.ok()) return loader.error();
  return std::unique_ptr<DataLoader>(new FileDataLoader(std::move(loader.get())));
}

std::vector<uint8_t> aligned_copy(const void* data, size_t size, size_t* pad) {
  // Copied into 64-byte-aligned storage: FlatBuffers and kernels expect aligned data.
  std::vector<uint8_t> bytes(size + 64);
  *pad = (64 - reinterpret_cast<uintptr_t>(bytes.data()) % 64) % 64;
  if (size > 0) std::memcpy(bytes.data() + *pad, data, size);
  return bytes;
}

}  // namespace

Error Module::load_named_data(std::unique_ptr<DataLoader> loader) {
  Result<FlatTensorDataMap> map = FlatTensorDataMap::load(loader.get());
  if (!map.ok()) return map.error();
  ptd_loader_ = std::move(loader);
  ptd_ = std::make_unique<FlatTensorDataMap>(std::move(map.get()));
  return Error::Ok;
}

const NamedDataMap* Module::named_data() const { return ptd_.get(); }

Result<std::unique_ptr<Module>> Module::load(const std::string& path, LoadMode mode,
                                             Program::Verification verification,
                                             const std::string& data_path) {
  std::unique_ptr<Module> module(new Module());
  if (!data_path.empty()) {
    Result<std::unique_ptr<DataLoader>> loader = open_file(data_path, mode);
    if (!loader.ok()) return loader.error();
    EMBER_TRY(module->load_named_data(std::move(loader.get())));
  }
  Result<std::unique_ptr<DataLoader>> loader = open_file(path, mode);
  if (!loader.ok()) return loader.error();
  EMBER_TRY_ASSIGN(module->loader_, program_data_loader(std::move(loader.get())));
  return finish_load(std::move(module), verification);
}

Result<std::unique_ptr<Module>> Module::from_bytes(const void* data, size_t size,
                                                   Program::Verification verification,
                                                   const void* ptd, size_t ptd_size) {
  std::unique_ptr<Module> module(new Module());
  size_t pad = 0;
  module->bytes_ = aligned_copy(data, size, &pad);
  module->loader_ = std::make_unique<BufferDataLoader>(module->bytes_.data() + pad, size);
  EMBER_TRY_ASSIGN(module->loader_, program_data_loader(std::move(module->loader_)));
  if (ptd != nullptr) {
    module->ptd_bytes_ = aligned_copy(ptd, ptd_size, &pad);
    EMBER_TRY(module->load_named_data(
        std::make_unique<BufferDataLoader>(module->ptd_bytes_.data() + pad, ptd_size)));
  }
  return finish_load(std::move(module), verification);
}

Result<std::unique_ptr<Module>> Module::finish_load(std::unique_ptr<Module> module,
                                                    Program::Verification verification) {
  Result<Program> program = Program::load(module->loader_.get(), verification);
  if (!program.ok()) return program.error();
  module->program_.emplace(std::move(program.get()));
  return module;
}

std::vector<std::string> Module::method_names() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < program_->num_methods(); ++i) {
    names.emplace_back(program_->get_method_name(i).get());
  }
  return names;
}

Result<Method*> Module::method(const std::string& name) {
  auto it = methods_.find(name);
  if (it != methods_.end()) return &*it->second->method;
  Result<std::unique_ptr<LoadedMethod>> loaded = load_method(name);
  if (!loaded.ok()) return loaded.error();
  Method* result = &*loaded.get()->method;
  methods_[name] = std::move(loaded.get());
  return result;
}

Result<Method*> Module::new_method_instance(const std::string& name) {
  Result<std::unique_ptr<LoadedMethod>> loaded = load_method(name);
  if (!loaded.ok()) return loaded.error();
  Method* result = &*loaded.get()->method;
  instances_.push_back(std::move(loaded.get()));
  return result;
}

Result<std::unique_ptr<Module::LoadedMethod>> Module::load_method(const std::string& name) {
  Result<MethodMeta> meta = program_->method_meta(name.c_str());
  if (!meta.ok()) return meta.error();
  auto loaded = std::make_unique<LoadedMethod>();
  for (size_t i = 0; i < meta->num_planned_buffers(); ++i) {
    const auto size = static_cast<size_t>(meta->planned_buffer_size(i).get());
    loaded->planned.push_back(aligned_bytes(size));
    EMBER_CHECK_OR_RETURN(loaded->planned.back() != nullptr, Error::MemoryAllocationFailed,
                          "method '%s': cannot allocate planned buffer %zu (%zu bytes)",
                          name.c_str(), i + 1, size);
    loaded->planned_spans.emplace_back(loaded->planned.back().get(), size);
    loaded->planned_total += size;
  }
  // A first guess from the plan's size, plus room for the kernels' prepare
  // steps, which pack constant weights (about the size of the constants,
  // which are at most the file; the pages stay untouched when nothing packs);
  // doubled until load_method fits. The scratch a kernel reserves at load is
  // not in the file: a 2 KB program of one attention over 1500 tokens needs
  // 6 MB (its K and V panels), so the doubling goes on up to kMaxPoolBytes.
  constexpr size_t kMaxPoolBytes = size_t{16} << 30;
  size_t pool_size = 4096 + meta->num_values() * 256 + meta->num_instructions() * 128 +
                     program_->file_size() + program_->file_size() / 8;
  for (; pool_size <= kMaxPoolBytes; pool_size *= 2) {
    loaded->method.reset();
    loaded->pool = pool_bytes(pool_size);
    EMBER_CHECK_OR_RETURN(loaded->pool != nullptr, Error::MemoryAllocationFailed,
                          "method '%s': cannot allocate a %zu-byte pool for load_method",
                          name.c_str(), pool_size);
    loaded->pool_size = pool_size;
    loaded->allocator.emplace(loaded->pool.get(), pool_size);
    loaded->memory_manager.emplace(&*loaded->allocator,
                                   std::span<std::span<uint8_t>>(loaded->planned_spans));
    Result<Method> method =
        program_->load_method(name.c_str(), &*loaded->memory_manager, ptd_.get());
    if (method.ok()) {
      loaded->method.emplace(std::move(method.get()));
      return loaded;
    }
    if (method.error() != Error::MemoryAllocationFailed) return method.error();
  }
  return set_error(Error::MemoryAllocationFailed,
                   "method '%s': load_method did not fit in %zu bytes", name.c_str(),
                   pool_size / 2);
}

size_t Module::planned_bytes(const std::string& name) const {
  auto it = methods_.find(name);
  return it == methods_.end() ? 0 : it->second->planned_total;
}

}  // namespace ember::extension
