// Numerical debugging: a hook that sees each kernel and delegate instruction
// right after it ran, while its outputs are still in planned memory (a later
// instruction may reuse those bytes). Method::execute calls it when one is
// set; off (no logger), it costs one pointer test per instruction. The logger
// runs on the execute path: it must not allocate from the heap or block, so
// it copies into storage its owner prepared (extension/devtools/
// intermediate_outputs.h is one that does).
#pragma once

#include <cstdint>
#include <span>

#include "runtime/core/evalue.h"

namespace ember {

class IntermediateOutputLogger {
 public:
  /// Instruction `instruction` (an index into the method's steps) ran; `args`
  /// are its arguments: a kernel's out argument last (a TensorList when it
  /// returns several), a delegate's inputs then its outputs. Valid only
  /// during the call.
  virtual void log_instruction(uint32_t instruction, std::span<EValue* const> args) = 0;

 protected:
  ~IntermediateOutputLogger() = default;
};

}  // namespace ember
