// Kernel signatures: the kind of value each argument of an operator must be,
// so load_method can refuse a program that passes, say, an Int where a
// kernel reads a Tensor (checked once, not on every execute).
//
// A signature is one letter per argument, return slot included:
//   T tensor           t tensor or None
//   S scalar (Int, Double or Bool)   s scalar or None
//   I int (Int or Bool)              i int or None
//   D float (Double or Int)          d float or None
//   B bool (Bool or Int)             b bool or None
//   L int list         l int list or None
//   F float list       f float list or None
//   Q bool list
//   X tensor list      O optional-tensor list
//   Y string           y string or None
//   * anything (devices, layouts, prim results)
#pragma once

#include <cstddef>
#include <string_view>

#include "runtime/core/error.h"
#include "runtime/core/evalue.h"

namespace ember {

struct KernelSignature {
  const char* name = nullptr;       // "aten::add.out"
  const char* kinds = nullptr;      // "TTSTT"
  const char* arg_names = nullptr;  // "self,other,alpha,out,return"
};

/// Adds a signature (a later one for the same name replaces it).
void register_kernel_signature(const KernelSignature& signature);

/// The signature registered for `name`, or null when none is known.
const KernelSignature* find_kernel_signature(std::string_view name);

/// True when `value` is acceptable for kind letter `kind`.
bool value_matches_kind(const EValue& value, char kind);

/// A readable name for a kind letter, e.g. "tensor or None".
const char* kind_description(char kind);

/// Writes argument `index`'s name from a comma-separated list into `buf`.
const char* signature_arg_name(const KernelSignature& signature, size_t index, char* buf,
                               size_t buf_size);

/// Checks a call's argument count and each value's kind against `signature`;
/// on a mismatch sets the error message ("<op> argument 2 (alpha) must be a
/// scalar, the program passes a Tensor") and returns InvalidProgram.
Error check_kernel_arguments(const KernelSignature& signature, EValue* const* args,
                             size_t num_args);

struct KernelSignatureRegistration {
  KernelSignatureRegistration(const KernelSignature* table, size_t count) {
    for (size_t i = 0; i < count; ++i) register_kernel_signature(table[i]);
  }
};

}  // namespace ember
