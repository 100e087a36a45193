// Bundled programs (`.bpte`, schema/bundled_program.fbs): a program with test
// inputs and expected outputs per method. ExecuTorch's runtime names:
// get_program_data (the program inside, or a plain .pte as it is),
// load_bundled_input (test case i's inputs into a method) and
// verify_method_outputs (its outputs against the expected ones, with rtol and
// atol). Every file is checked when it is opened (FlatBuffer verifier,
// version, a program inside); each case's values when they are used (counts,
// dtypes, shapes, byte sizes), with errors naming method, case and value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "extension/tensor/owned_tensor.h"
#include "runtime/core/data_loader.h"
#include "runtime/executor/method.h"

namespace ember_bp {
struct BundledProgram;
struct BundledMethodTestCase;
}  // namespace ember_bp

namespace ember::extension {

/// True when `data` starts like a bundled program (identifier "BP08").
bool is_bundled_program(const void* data, size_t size);

/// The program inside a `.bpte` (verified first), or `data` itself when it is
/// not a bundled program. The result points into `data`.
Error get_program_data(const void* data, size_t size, const void** program_data,
                       size_t* program_size);

/// How one output compared.
struct OutputCheck {
  size_t index = 0;
  bool passed = true;
  int64_t numel = 0;
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;  // |actual - expected| / |expected| where expected != 0
  // The element furthest outside the tolerance (or with the largest error
  // when all pass): flat index in logical (row-major) order, and its values.
  int64_t worst_element = -1;
  double actual = 0.0;
  double expected = 0.0;
  std::vector<int32_t> shape;  // of a tensor output (empty for a scalar)
};

/// One test case run: passed when every output is within tolerance.
struct CaseReport {
  std::string method;
  size_t test_case = 0;
  bool compared = true;  // false: the case holds no expected outputs
  bool passed = true;
  std::vector<OutputCheck> outputs;
};

class BundledProgram {
 public:
  /// Opens the bundled program in `data`, which must stay alive and
  /// unchanged while this object is used. InvalidProgram with a message for
  /// anything that is not a well-formed `.bpte`.
  static Result<BundledProgram> load(const void* data, size_t size);

  /// The embedded `.pte`.
  std::span<const uint8_t> program() const { return program_; }
  /// Offset of the embedded program inside the `.bpte` bytes.
  size_t program_offset() const { return program_offset_; }

  size_t num_suites() const;
  const char* suite_method(size_t suite) const;
  size_t num_test_cases(size_t suite) const;
  /// The suite of `method`, or NotFound.
  Result<size_t> suite_of(const char* method) const;

  /// Sets test case `test_case` of the method's suite as the method's inputs
  /// (copies kept here until the next call: the method may read them at execute).
  Error load_bundled_input(Method& method, size_t test_case);

  /// Compares the method's outputs (after execute) with test case
  /// `test_case`'s expected ones. Structural mismatches (count, dtype, shape)
  /// are errors; values outside the tolerance are a report with passed=false.
  Result<CaseReport> check_method_outputs(const Method& method, size_t test_case, double rtol,
                                          double atol) const;

  /// check_method_outputs, as an error when an output is outside the
  /// tolerance: its message names method, case, output, the worst element
  /// and both values.
  Error verify_method_outputs(const Method& method, size_t test_case, double rtol = 1e-5,
                              double atol = 1e-8) const;

 private:
  BundledProgram() = default;
  Result<const ember_bp::BundledMethodTestCase*> test_case(const char* method, size_t index) const;

  const ember_bp::BundledProgram* root_ = nullptr;
  std::span<const uint8_t> program_;
  size_t program_offset_ = 0;
  std::vector<OwnedTensor> inputs_;
};

/// What went wrong in a failed case: per output outside the tolerance, the
/// worst element (flat and per-dimension index), its values and the errors.
std::string describe_failure(const CaseReport& report, double rtol, double atol);

/// Runs each test case of every suite (of `method` only, when not empty):
/// loads its inputs into the method `load_method(name)` gives, executes it
/// and compares. Stops at the first error (a structural mismatch, a failed
/// execute), whose message names method and case.
Result<std::vector<CaseReport>> run_bundled_tests(
    BundledProgram& bundled, const std::function<Result<Method*>(const std::string&)>& load_method,
    const std::string& method, double rtol, double atol);

/// A view of bytes [offset, offset + size) of another loader, which must
/// outlive it: the program inside a mapped `.bpte` without a copy.
class SubrangeDataLoader final : public DataLoader {
 public:
  SubrangeDataLoader(std::unique_ptr<DataLoader> inner, size_t offset, size_t size)
      : inner_(std::move(inner)), offset_(offset), size_(size) {}
  Result<FreeableBuffer> load(size_t offset, size_t size) override;
  Result<size_t> size() const override { return size_; }
  void drop_pages(const void* data, size_t size) override { inner_->drop_pages(data, size); }

 private:
  std::unique_ptr<DataLoader> inner_;
  size_t offset_;
  size_t size_;
};

/// The loader of the program `loader` holds: a view of the program inside a
/// `.bpte` (a mapped file is not copied), or `loader` itself for a `.pte`.
Result<std::unique_ptr<DataLoader>> program_data_loader(std::unique_ptr<DataLoader> loader);

}  // namespace ember::extension
