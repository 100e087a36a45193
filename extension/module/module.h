// Module: the convenience way for apps to run a `.pte` file.
//
// Owns what the core runtime leaves to the caller: the data loader, the
// planned buffers and method-allocator memory of each loaded method. Uses
// the STL and the heap at load time only; execute() still allocates nothing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/data_loader.h"
#include "runtime/executor/named_data_map.h"
#include "runtime/executor/program.h"

namespace ember::extension {

class Module {
 public:
  enum class LoadMode { File, Mmap };

  /// Loads and verifies the program at `path` (a `.pte`, or the program
  /// inside a bundled `.bpte`); `data_path` names the `.ptd`
  /// file holding the tensors the program stores outside itself (mapped
  /// like the program; empty: none).
  static Result<std::unique_ptr<Module>> load(
      const std::string& path, LoadMode mode = LoadMode::Mmap,
      Program::Verification verification = Program::Verification::Full,
      const std::string& data_path = "");
  /// Same, from bytes the module copies and keeps (and a `.ptd` file's bytes).
  static Result<std::unique_ptr<Module>> from_bytes(
      const void* data, size_t size,
      Program::Verification verification = Program::Verification::Full,
      const void* ptd = nullptr, size_t ptd_size = 0);

  /// The named-data file's tensors, or null when the module has none.
  const NamedDataMap* named_data() const;

  ~Module();
  const Program& program() const { return *program_; }
  std::vector<std::string> method_names() const;

  /// The method, loaded on first use with memory the module owns.
  Result<Method*> method(const std::string& name);

  /// Loads another instance of method `name`, with planned memory of its own:
  /// its mutable buffers (a KV cache) are independent of every other
  /// instance's. Owned by the module.
  Result<Method*> new_method_instance(const std::string& name);

  /// Bytes the module holds for a loaded method: planned arena and allocator.
  size_t planned_bytes(const std::string& name) const;

 private:
  struct LoadedMethod;
  Module() = default;
  Result<std::unique_ptr<LoadedMethod>> load_method(const std::string& name);
  static Result<std::unique_ptr<Module>> finish_load(std::unique_ptr<Module> module,
                                                     Program::Verification verification);

  Error load_named_data(std::unique_ptr<DataLoader> loader);

  std::vector<uint8_t> bytes_;  // Backing store for from_bytes.
  std::vector<uint8_t> ptd_bytes_;
  std::unique_ptr<DataLoader> ptd_loader_;
  std::unique_ptr<NamedDataMap> ptd_;
  std::unique_ptr<DataLoader> loader_;
  std::optional<Program> program_;
  std::map<std::string, std::unique_ptr<LoadedMethod>> methods_;
  std::vector<std::unique_ptr<LoadedMethod>> instances_;  // new_method_instance's.
};

}  // namespace ember::extension
