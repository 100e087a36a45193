// The bundled program writer: a `.pte` plus test cases per method → `.bpte`
// bytes (schema/bundled_program.fbs). It writes what it is given: checking
// the cases against the program is the caller's job (ember.devtools does it
// before writing); the runtime's reader checks every file it loads anyway.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "program/program_writer.h"

namespace ember::program {

struct BundledValue {
  enum class Kind { Tensor, Int, Bool, Double } kind = Kind::Tensor;
  // Tensor
  ember_fb::ScalarType scalar_type = ember_fb::ScalarType::FLOAT32;
  std::vector<int32_t> sizes;
  std::vector<uint8_t> dim_order;  // empty: contiguous
  std::vector<uint8_t> data;       // in dim-order memory layout
  // Int, Bool, Double
  int64_t int_val = 0;
  bool bool_val = false;
  double double_val = 0.0;
};

struct BundledTestCase {
  std::vector<BundledValue> inputs;
  std::vector<BundledValue> expected_outputs;
  bool has_expected_outputs = true;  // false: the case is only run
};

struct BundledTestSuite {
  std::string method_name;
  std::vector<BundledTestCase> test_cases;
};

/// The `.bpte` bytes holding `program` (a whole `.pte`) and the suites.
WriteResult write_bundled_program(std::span<const uint8_t> program,
                                  const std::vector<BundledTestSuite>& suites);

}  // namespace ember::program
