#include "extension/module/module.h"

#include <cstdlib>
#include <cstring>

#include "extension/data_loader/file_data_loader.h"

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
  instances_.clear();  // Methods before the program, the program before the loader.
  methods_.clear();
  program_.reset();
}

Result<std::unique_ptr<Module>> Module::load(const std::string& path, LoadMode mode,
                                             Program::Verification verification) {
  std::unique_ptr<Module> module(new Module());
  if (mode == LoadMode::Mmap) {
    Result<MmapDataLoader> loader = MmapDataLoader::from(path.c_str());
    if (!loader.ok()) return loader.error();
    module->loader_ = std::make_unique<MmapDataLoader>(std::move(loader.get()));
  } else {
    Result<FileDataLoader> loader = FileDataLoader::from(path.c_str());
    if (!loader.ok()) return loader.error();
    module->loader_ = std::make_unique<FileDataLoader>(std::move(loader.get()));
  }
  return finish_load(std::move(module), verification);
}

Result<std::unique_ptr<Module>> Module::from_bytes(const void* data, size_t size) {
  std::unique_ptr<Module> module(new Module());
  // Copy into 64-byte-aligned storage: FlatBuffers and kernels expect aligned data.
  module->bytes_.resize(size + 64);
  uint8_t* base = module->bytes_.data();
  const size_t pad = (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  if (size > 0) std::memcpy(base + pad, data, size);
  module->loader_ = std::make_unique<BufferDataLoader>(base + pad, size);
  return finish_load(std::move(module), Program::Verification::Full);
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
  // doubled until load_method fits.
  size_t pool_size = 4096 + meta->num_values() * 256 + meta->num_instructions() * 128 +
                     program_->file_size() + program_->file_size() / 8;
  for (int attempt = 0; attempt < 8; ++attempt, pool_size *= 2) {
    loaded->method.reset();
    loaded->pool = aligned_bytes(pool_size);
    loaded->pool_size = pool_size;
    loaded->allocator.emplace(loaded->pool.get(), pool_size);
    loaded->memory_manager.emplace(&*loaded->allocator,
                                   std::span<std::span<uint8_t>>(loaded->planned_spans));
    Result<Method> method = program_->load_method(name.c_str(), &*loaded->memory_manager);
    if (method.ok()) {
      loaded->method.emplace(std::move(method.get()));
      return loaded;
    }
    if (method.error() != Error::MemoryAllocationFailed) return method.error();
  }
  return set_error(Error::MemoryAllocationFailed,
                   "method '%s': load_method did not fit in %zu bytes", name.c_str(), pool_size);
}

size_t Module::planned_bytes(const std::string& name) const {
  auto it = methods_.find(name);
  return it == methods_.end() ? 0 : it->second->planned_total;
}

}  // namespace ember::extension
