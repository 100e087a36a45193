// Program: a loaded, verified `.pte` file.
//
// `Program::load` reads the header and the FlatBuffer through a DataLoader,
// verifies every structural rule of the format (on by default), and loads the
// constant segment. Methods are loaded from it with `load_method`. The loader
// must outlive the Program; the Program must outlive its Methods.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/data_loader.h"
#include "runtime/core/result.h"
#include "runtime/executor/memory_manager.h"
#include "runtime/executor/method.h"
#include "runtime/executor/method_meta.h"

namespace ember_fb {
struct Program;
struct BackendDelegateDataReference;
}

namespace ember {

class NamedDataMap;

class Program {
 public:
  enum class Verification : uint8_t {
    /// Check every rule of the format (the default, in every build).
    Full,
    /// Only the FlatBuffer's own verifier: for trusted files where load time matters.
    Minimal,
  };

  static Result<Program> load(DataLoader* loader, Verification verification = Verification::Full);

  Program(Program&&) = default;
  Program& operator=(Program&&) = delete;

  size_t num_methods() const;
  /// Name of method `index`; OutOfRange past the end.
  Result<const char*> get_method_name(size_t index) const;
  /// NotFound naming the method when there is none of that name.
  Result<MethodMeta> method_meta(const char* method_name) const;
  /// Builds a runnable method in `memory_manager`'s memory (see MemoryManager).
  /// `named_data`: where tensors stored outside the program (EXTERNAL, a
  /// `.ptd` file) are found by name; it must outlive the method. A program
  /// with such tensors and no map, or a map that lacks one or disagrees on its
  /// dtype, sizes or dim order, is refused naming the tensor.
  Result<Method> load_method(const char* method_name, MemoryManager* memory_manager,
                             const NamedDataMap* named_data = nullptr) const;

  const ember_fb::Program* flatbuffer() const { return program_; }
  size_t file_size() const { return file_size_; }
  /// Bytes of constant `data_buffer_idx` (already bounds-checked at load).
  const uint8_t* constant_data(uint64_t offset) const {
    return static_cast<const uint8_t*>(constant_segment_.data()) + offset;
  }
  size_t constant_segment_size() const { return constant_segment_.size(); }
  /// Bytes of a mutable buffer's initial value (entry `data_buffer_idx` of
  /// mutable_data_segments[0]; bounds-checked at load).
  const uint8_t* mutable_data(uint64_t offset) const {
    return static_cast<const uint8_t*>(mutable_segment_.data()) + offset;
  }
  size_t mutable_segment_size() const { return mutable_segment_.size(); }
  /// Tells the data loader nothing reads these constant bytes any more
  /// (DataLoader::drop_pages: a hint; the bytes stay readable).
  void drop_constant_pages(const void* data, size_t size) const { loader_->drop_pages(data, size); }
  /// A delegate's processed blob: inline data (not copied) or its segment,
  /// loaded through the data loader (freed when the buffer is released).
  Result<FreeableBuffer> load_delegate_data(const ember_fb::BackendDelegateDataReference* ref) const;
  /// The segment of named data entry `key`, loaded through the data loader;
  /// NotFound (no message set) when the program has no such entry,
  /// InvalidProgram when its segment is out of range.
  Result<FreeableBuffer> load_named_data(const char* key) const;

 private:
  Program(FreeableBuffer program_data, const ember_fb::Program* program, DataLoader* loader,
          size_t file_size, uint64_t segment_base_offset, bool plans_verified)
      : program_data_(static_cast<FreeableBuffer&&>(program_data)),
        program_(program),
        loader_(loader),
        file_size_(file_size),
        segment_base_offset_(segment_base_offset),
        plans_verified_(plans_verified) {}

  FreeableBuffer program_data_;
  const ember_fb::Program* program_;
  DataLoader* loader_;
  size_t file_size_;
  uint64_t segment_base_offset_;
  // With Minimal verification, load_method still verifies its own plan, so
  // only the file-level checks are skipped.
  bool plans_verified_;
  FreeableBuffer constant_segment_;
  FreeableBuffer mutable_segment_;  // Initial values of mutable buffers.
};

}  // namespace ember
