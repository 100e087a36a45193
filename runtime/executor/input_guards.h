// Input guards: the checks of a dynamic-shape method's `dynamic_shapes` that
// set_input cannot make alone (a dim equal to another input's dim, or to an
// expression of other dims; a dim below its minimum).
//
// Other exporters strip guard instructions (other runtimes have no
// `aten::_assert_scalar` kernel), so Ember keeps them beside the program: the
// named data entry `ember.input_guards/<method>` holds a guard table, which
// load_method reads and execute() checks before the first instruction. Other
// runtimes ignore named data nobody asks for. The table (little-endian int64
// words, strings padded to 8 bytes):
//
//   version (1), guard count,
//   per guard: op count, ops (3 words each: code, a, b), message length, message bytes
//
// Ops form a postfix program over a stack of int64 that must leave one value,
// non-zero when the inputs pass:
//   1 CONST a        push a
//   2 DIM a b        push the size of dim b of input a
//   3 ADD, 4 MUL, 5 FLOORDIV (toward -inf), 6 MOD (sign of the divisor)
//   7 EQ, 8 GE       pop y, x; push x == y / x >= y
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/evalue.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/result.h"

namespace ember {

/// One guard; `ops` (3 words per op) and `message` live in the method allocator.
struct InputGuard {
  const int64_t* ops = nullptr;
  uint32_t num_ops = 0;
  const char* message = nullptr;
};

struct InputGuardTable {
  InputGuard* guards = nullptr;
  size_t num_guards = 0;
};

/// The named-data key of `method`'s guard table, written into `buf`; false
/// when it does not fit.
bool input_guards_key(const char* method, char* buf, size_t size);

/// Parses and checks a guard table of `size` bytes (ops well formed, stack
/// never under- or overflows, input and dim indices in range for `num_inputs`
/// inputs) into memory from `alloc`. InvalidProgram naming the method and
/// guard on a malformed table.
Result<InputGuardTable> parse_input_guards(const uint8_t* data, size_t size, const char* method,
                                           size_t num_inputs, MemoryAllocator* alloc);

/// Runs every guard on the method's set inputs (`values[inputs[i]]`); the
/// first that fails gives InvalidArgument with its message. A DIM of a
/// non-tensor input or a dim past an input's rank fails with a message too.
Error check_input_guards(const InputGuardTable& table, const EValue* values,
                         const int32_t* inputs, const char* method);

}  // namespace ember
