// Every kernel and delegate instruction's outputs, captured while a method
// runs (numerical debugging: compare each op with eager at the same node).
// The recorder is an IntermediateOutputLogger that copies each output tensor
// or scalar into storage sized before execute(), so the execute path
// allocates nothing; what does not fit is counted, never written past.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/executor/method.h"
#include "schema/program_generated.h"

namespace ember::extension {

/// Per instruction of the method's chain, the positions of the arguments it
/// writes: a kernel's last argument (its return; a TensorList stands for its
/// items), a delegate's outputs (its tensor arguments that no input,
/// constant, mutable buffer or earlier instruction provides). Moves, jumps
/// and frees write nothing here.
std::vector<std::vector<uint32_t>> instruction_output_args(const ember_fb::ExecutionPlan* plan);

/// One captured output. A tensor's bytes are dense in its dim order's layout
/// at `offset` in the recorder's storage; a scalar is in `int_value` (Int,
/// Bool) or `double_value` (Double).
struct CapturedOutput {
  uint32_t instruction = 0;
  uint32_t output = 0;  // A delegate's outputs in order; a returned TensorList's items.
  Tag tag = Tag::None;  // Tensor, Int, Double or Bool.
  ScalarType dtype = ScalarType::Float;
  int32_t dim = 0;
  int32_t sizes[kTensorMaxDim] = {};
  uint8_t dim_order[kTensorMaxDim] = {};
  size_t offset = 0;
  size_t nbytes = 0;
  int64_t int_value = 0;
  double double_value = 0;
};

/// How much one run needs: records, and bytes of tensor data (each output at
/// its planned capacity, aligned). A loop that runs an instruction more than
/// once needs more.
struct CaptureSize {
  size_t records = 0;
  size_t bytes = 0;
};

class IntermediateOutputRecorder final : public IntermediateOutputLogger {
 public:
  /// Records the outputs of `method`'s instructions into `records` and
  /// `storage` (both owned by the caller, kept until the recorder is done).
  /// Set it with method.set_output_logger(&recorder).
  IntermediateOutputRecorder(const Method& method, std::span<CapturedOutput> records,
                             std::span<uint8_t> storage);

  void log_instruction(uint32_t instruction, std::span<EValue* const> args) override;

  std::span<const CapturedOutput> captured() const { return {records_.data(), size_}; }
  /// A captured tensor's bytes.
  const uint8_t* data(const CapturedOutput& c) const { return storage_.data() + c.offset; }
  /// Outputs that did not fit in the records or the storage.
  size_t dropped() const { return dropped_; }
  /// Bytes every logged output needed, those dropped included (size the
  /// storage with it for the next run).
  size_t bytes_needed() const { return bytes_needed_; }
  /// Forgets what was captured (the storage is reused).
  void clear() { size_ = used_ = dropped_ = bytes_needed_ = 0; }

  /// What one run of `method` needs at most.
  static CaptureSize one_run(const Method& method);

 private:
  void capture(uint32_t instruction, uint32_t output, const EValue& value);

  std::vector<std::vector<uint32_t>> output_args_;  // Built at construction, read in execute.
  std::span<CapturedOutput> records_;
  std::span<uint8_t> storage_;
  size_t size_ = 0;
  size_t used_ = 0;
  size_t dropped_ = 0;
  size_t bytes_needed_ = 0;
};

}  // namespace ember::extension
