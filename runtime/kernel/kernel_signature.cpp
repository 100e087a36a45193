#include "runtime/kernel/kernel_signature.h"

#include <cstring>

#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace {
KernelSignature g_signatures[kMaxKernels];
size_t g_num_signatures = 0;

bool is_scalar(const EValue& v) { return v.is_int() || v.is_double() || v.is_bool(); }
}  // namespace

void register_kernel_signature(const KernelSignature& signature) {
  for (size_t i = 0; i < g_num_signatures; ++i) {
    if (std::strcmp(g_signatures[i].name, signature.name) == 0) {
      g_signatures[i] = signature;
      return;
    }
  }
  if (g_num_signatures < kMaxKernels) g_signatures[g_num_signatures++] = signature;
}

const KernelSignature* find_kernel_signature(std::string_view name) {
  for (size_t i = 0; i < g_num_signatures; ++i) {
    if (name == g_signatures[i].name) return &g_signatures[i];
  }
  return nullptr;
}

bool value_matches_kind(const EValue& v, char kind) {
  switch (kind) {
    case 'T': return v.is_tensor();
    case 't': return v.is_tensor() || v.is_none();
    case 'S': return is_scalar(v);
    case 's': return is_scalar(v) || v.is_none();
    case 'I': return v.is_int() || v.is_bool();
    case 'i': return v.is_int() || v.is_bool() || v.is_none();
    case 'D': return v.is_double() || v.is_int();
    case 'd': return v.is_double() || v.is_int() || v.is_none();
    case 'B': return v.is_bool() || v.is_int();
    case 'b': return v.is_bool() || v.is_int() || v.is_none();
    case 'L': return v.tag == Tag::IntList;
    case 'l': return v.tag == Tag::IntList || v.is_none();
    case 'F': return v.tag == Tag::DoubleList;
    case 'f': return v.tag == Tag::DoubleList || v.is_none();
    case 'Q': return v.tag == Tag::BoolList;
    case 'X': return v.tag == Tag::TensorList;
    case 'O': return v.tag == Tag::OptionalTensorList || v.tag == Tag::TensorList;
    case 'Y': return v.tag == Tag::String;
    case 'y': return v.tag == Tag::String || v.is_none();
    default: return true;
  }
}

const char* kind_description(char kind) {
  switch (kind) {
    case 'T': return "a tensor";
    case 't': return "a tensor or None";
    case 'S': return "a scalar";
    case 's': return "a scalar or None";
    case 'I': return "an int";
    case 'i': return "an int or None";
    case 'D': return "a float";
    case 'd': return "a float or None";
    case 'B': return "a bool";
    case 'b': return "a bool or None";
    case 'L': return "an int list";
    case 'l': return "an int list or None";
    case 'F': return "a float list";
    case 'f': return "a float list or None";
    case 'Q': return "a bool list";
    case 'X': return "a tensor list";
    case 'O': return "an optional-tensor list";
    case 'Y': return "a string";
    case 'y': return "a string or None";
    default: return "any value";
  }
}

const char* signature_arg_name(const KernelSignature& signature, size_t index, char* buf,
                               size_t buf_size) {
  const char* p = signature.arg_names != nullptr ? signature.arg_names : "";
  for (size_t i = 0; i < index && *p != '\0'; ++i) {
    const char* comma = std::strchr(p, ',');
    p = comma != nullptr ? comma + 1 : p + std::strlen(p);
  }
  size_t n = 0;
  while (p[n] != '\0' && p[n] != ',' && n + 1 < buf_size) {
    buf[n] = p[n];
    ++n;
  }
  buf[n] = '\0';
  return buf;
}

}  // namespace ember

namespace ember {

Error check_kernel_arguments(const KernelSignature& signature, EValue* const* args,
                             size_t num_args) {
  const size_t n = std::strlen(signature.kinds);
  EMBER_CHECK_OR_RETURN(n == num_args, Error::InvalidProgram,
                        "%s takes %zu arguments, the program passes %zu", signature.name, n,
                        num_args);
  for (size_t a = 0; a < n; ++a) {
    const EValue& v = *args[a];
    if (value_matches_kind(v, signature.kinds[a])) continue;
    char arg[64];
    return set_error(Error::InvalidProgram, "%s argument %zu (%s) must be %s, the program passes a %s",
                     signature.name, a, signature_arg_name(signature, a, arg, sizeof(arg)),
                     kind_description(signature.kinds[a]), tag_name(v.tag));
  }
  return Error::Ok;
}

}  // namespace ember
