#include "program/bundled_program_writer.h"

#include "schema/bundled_program_generated.h"

namespace ember::program {
namespace {

// The schema's version; the reader accepts this one only.
constexpr uint32_t kBundledProgramVersion = 0;

flatbuffers::Offset<ember_bp::Value> write_value(flatbuffers::FlatBufferBuilder& b,
                                                 const BundledValue& v) {
  switch (v.kind) {
    case BundledValue::Kind::Tensor: {
      std::vector<uint8_t> order = v.dim_order;
      if (order.empty()) {
        for (size_t i = 0; i < v.sizes.size(); ++i) order.push_back(static_cast<uint8_t>(i));
      }
      b.ForceVectorAlignment(v.data.size(), sizeof(uint8_t), 16);
      const auto data = b.CreateVector(v.data);
      const auto sizes = b.CreateVector(v.sizes);
      const auto dim_order = b.CreateVector(order);
      const auto t = ember_bp::CreateTensor(b, v.scalar_type, sizes, data, dim_order);
      return ember_bp::CreateValue(b, ember_bp::ValueUnion::Tensor, t.Union());
    }
    case BundledValue::Kind::Int:
      return ember_bp::CreateValue(b, ember_bp::ValueUnion::Int,
                                   ember_bp::CreateInt(b, v.int_val).Union());
    case BundledValue::Kind::Bool:
      return ember_bp::CreateValue(b, ember_bp::ValueUnion::Bool,
                                   ember_bp::CreateBool(b, v.bool_val).Union());
    case BundledValue::Kind::Double:
      return ember_bp::CreateValue(b, ember_bp::ValueUnion::Double,
                                   ember_bp::CreateDouble(b, v.double_val).Union());
  }
  return {};
}

}  // namespace

WriteResult write_bundled_program(std::span<const uint8_t> program,
                                  const std::vector<BundledTestSuite>& suites) {
  WriteResult result;
  flatbuffers::FlatBufferBuilder b(program.size() + 4096);
  std::vector<flatbuffers::Offset<ember_bp::BundledMethodTestSuite>> suite_offsets;
  for (const BundledTestSuite& suite : suites) {
    std::vector<flatbuffers::Offset<ember_bp::BundledMethodTestCase>> cases;
    for (const BundledTestCase& c : suite.test_cases) {
      std::vector<flatbuffers::Offset<ember_bp::Value>> inputs, outputs;
      for (const BundledValue& v : c.inputs) inputs.push_back(write_value(b, v));
      for (const BundledValue& v : c.expected_outputs) outputs.push_back(write_value(b, v));
      const auto in = b.CreateVector(inputs);
      const auto out = c.has_expected_outputs ? b.CreateVector(outputs)
                                              : flatbuffers::Offset<flatbuffers::Vector<
                                                    flatbuffers::Offset<ember_bp::Value>>>();
      cases.push_back(ember_bp::CreateBundledMethodTestCase(b, in, out));
    }
    const auto name = b.CreateString(suite.method_name);
    const auto case_vec = b.CreateVector(cases);
    suite_offsets.push_back(ember_bp::CreateBundledMethodTestSuite(b, name, case_vec));
  }
  const auto suite_vec = b.CreateVector(suite_offsets);
  b.ForceVectorAlignment(program.size(), sizeof(uint8_t), 32);
  const auto program_vec = b.CreateVector(program.data(), program.size());
  const auto root =
      ember_bp::CreateBundledProgram(b, kBundledProgramVersion, suite_vec, program_vec);
  ember_bp::FinishBundledProgramBuffer(b, root);
  result.bytes.assign(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  return result;
}

}  // namespace ember::program
