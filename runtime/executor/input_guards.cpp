#include "runtime/executor/input_guards.h"

#include <cstdio>
#include <cstring>

namespace ember {
namespace {

enum : int64_t { kConst = 1, kDim, kAdd, kMul, kFloorDiv, kMod, kEq, kGe };
constexpr int kMaxStack = 16;

// Reads little-endian int64 words from a byte range.
struct Reader {
  const uint8_t* p;
  size_t left;
  bool word(int64_t* out) {
    if (left < 8) return false;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    *out = static_cast<int64_t>(v);
    p += 8;
    left -= 8;
    return true;
  }
};

// Stack effect of an op: pops, pushes; false for an unknown code.
bool stack_effect(int64_t code, int* pops, int* pushes) {
  *pushes = 1;
  if (code == kConst || code == kDim) {
    *pops = 0;
    return true;
  }
  *pops = 2;
  return code >= kAdd && code <= kGe;
}

}  // namespace

bool input_guards_key(const char* method, char* buf, size_t size) {
  const int n = snprintf(buf, size, "ember.input_guards/%s", method);
  return n > 0 && static_cast<size_t>(n) < size;
}

Result<InputGuardTable> parse_input_guards(const uint8_t* data, size_t size, const char* method,
                                           size_t num_inputs, MemoryAllocator* alloc) {
  Reader r{data, size};
  int64_t version = 0;
  int64_t count = 0;
  EMBER_CHECK_OR_RETURN(r.word(&version) && r.word(&count), Error::InvalidProgram,
                        "method '%s': input guard table of %zu bytes is truncated", method, size);
  EMBER_CHECK_OR_RETURN(version == 1, Error::InvalidProgram,
                        "method '%s': input guard table version %lld is not supported", method,
                        static_cast<long long>(version));
  EMBER_CHECK_OR_RETURN(count >= 0 && static_cast<uint64_t>(count) <= size / 16,
                        Error::InvalidProgram, "method '%s': input guard count %lld is invalid",
                        method, static_cast<long long>(count));
  InputGuardTable table;
  table.num_guards = static_cast<size_t>(count);
  if (count == 0) return table;
  table.guards = alloc->allocate_array<InputGuard>(table.num_guards);
  EMBER_CHECK_OR_RETURN(table.guards != nullptr, Error::MemoryAllocationFailed,
                        "method '%s': method allocator exhausted allocating input guards",
                        method);
  for (size_t g = 0; g < table.num_guards; ++g) {
    int64_t num_ops = 0;
    EMBER_CHECK_OR_RETURN(r.word(&num_ops) && num_ops > 0 &&
                              static_cast<uint64_t>(num_ops) <= r.left / 24,
                          Error::InvalidProgram, "method '%s': input guard %zu is truncated",
                          method, g);
    auto* ops = alloc->allocate_array<int64_t>(static_cast<size_t>(num_ops) * 3);
    EMBER_CHECK_OR_RETURN(ops != nullptr, Error::MemoryAllocationFailed,
                          "method '%s': method allocator exhausted allocating input guards",
                          method);
    int depth = 0;
    for (int64_t i = 0; i < num_ops * 3; i += 3) {
      (void)(r.word(&ops[i]) && r.word(&ops[i + 1]) && r.word(&ops[i + 2]));
      int pops = 0;
      int pushes = 0;
      EMBER_CHECK_OR_RETURN(stack_effect(ops[i], &pops, &pushes), Error::InvalidProgram,
                            "method '%s': input guard %zu has unknown op %lld", method, g,
                            static_cast<long long>(ops[i]));
      EMBER_CHECK_OR_RETURN(depth >= pops && depth - pops + pushes <= kMaxStack,
                            Error::InvalidProgram,
                            "method '%s': input guard %zu: op %lld at %lld has no operands "
                            "or overflows the stack",
                            method, g, static_cast<long long>(ops[i]),
                            static_cast<long long>(i / 3));
      if (ops[i] == kDim) {
        EMBER_CHECK_OR_RETURN(ops[i + 1] >= 0 && static_cast<uint64_t>(ops[i + 1]) < num_inputs &&
                                  ops[i + 2] >= 0 && ops[i + 2] < kTensorMaxDim,
                              Error::InvalidProgram,
                              "method '%s': input guard %zu names input %lld dim %lld (%zu inputs)",
                              method, g, static_cast<long long>(ops[i + 1]),
                              static_cast<long long>(ops[i + 2]), num_inputs);
      }
      depth += pushes - pops;
    }
    EMBER_CHECK_OR_RETURN(depth == 1, Error::InvalidProgram,
                          "method '%s': input guard %zu leaves %d values, not 1", method, g,
                          depth);
    int64_t length = 0;
    EMBER_CHECK_OR_RETURN(r.word(&length) && length >= 0 &&
                              static_cast<uint64_t>(length) <= r.left,
                          Error::InvalidProgram,
                          "method '%s': input guard %zu's message is truncated", method, g);
    auto* message = alloc->allocate_array<char>(static_cast<size_t>(length) + 1);
    EMBER_CHECK_OR_RETURN(message != nullptr, Error::MemoryAllocationFailed,
                          "method '%s': method allocator exhausted allocating input guards",
                          method);
    std::memcpy(message, r.p, static_cast<size_t>(length));
    message[length] = '\0';
    const size_t padded = (static_cast<size_t>(length) + 7) / 8 * 8;
    r.p += padded <= r.left ? padded : r.left;
    r.left -= padded <= r.left ? padded : r.left;
    table.guards[g] = InputGuard{ops, static_cast<uint32_t>(num_ops), message};
  }
  return table;
}

Error check_input_guards(const InputGuardTable& table, const EValue* values,
                         const int32_t* inputs, const char* method) {
  for (size_t g = 0; g < table.num_guards; ++g) {
    const InputGuard& guard = table.guards[g];
    int64_t stack[kMaxStack];
    int depth = 0;
    for (uint32_t i = 0; i < guard.num_ops; ++i) {
      const int64_t* op = guard.ops + 3 * i;
      if (op[0] == kConst) {
        stack[depth++] = op[1];
        continue;
      }
      if (op[0] == kDim) {
        const EValue& v = values[inputs[op[1]]];
        EMBER_CHECK_OR_RETURN(v.is_tensor() && op[2] < v.as_tensor->dim, Error::InvalidProgram,
                              "method '%s': input guard %zu reads dim %lld of input %lld, which "
                              "is not a tensor of that rank",
                              method, g, static_cast<long long>(op[2]),
                              static_cast<long long>(op[1]));
        stack[depth++] = v.as_tensor->sizes[op[2]];
        continue;
      }
      const int64_t y = stack[--depth];
      const int64_t x = stack[depth - 1];
      int64_t result = 0;
      switch (op[0]) {
        case kAdd: result = x + y; break;
        case kMul: result = x * y; break;
        case kFloorDiv:
        case kMod: {
          EMBER_CHECK_OR_RETURN(y != 0, Error::InvalidArgument,
                                "method '%s': input guard %zu divides by zero", method, g);
          int64_t q = x / y;
          if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
          result = op[0] == kFloorDiv ? q : x - q * y;
          break;
        }
        case kEq: result = x == y; break;
        default: result = x >= y; break;  // kGe; codes were checked at load.
      }
      stack[depth - 1] = result;
    }
    EMBER_CHECK_OR_RETURN(stack[0] != 0, Error::InvalidArgument, "%s", guard.message);
  }
  return Error::Ok;
}

}  // namespace ember
