// ember_cpp_app: load a .pte with the Module API, run one method on inputs
// read from .npy files and print every output.
//
//   ember_cpp_app model.pte [--method NAME] [input.npy ...]
//
// Prints, per output, a header line "output <i>: <dtype> [<sizes>]" and a
// line of its values (float32 with 9 significant digits, float64 with 17:
// both read back exactly). Exits non-zero with the runtime's message on error.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "extension/module/module.h"
#include "extension/tensor/owned_tensor.h"

using ember::Error;
using ember::ScalarType;
using ember::extension::Module;
using ember::extension::OwnedTensor;

namespace {

int fail(const char* what, Error err) {
  std::fprintf(stderr, "ember_cpp_app: %s: %s (%s)\n", what, ember::last_error_message(),
               ember::error_name(err));
  return 1;
}

// A little-endian, C-order .npy array (format 1.0-3.0) of a plain dtype.
bool read_npy(const std::string& path, OwnedTensor* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return *error = "cannot read " + path, false;
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) {
    return *error = path + ": not a .npy file", false;
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const size_t len_size = major == 1 ? 2 : 4;
  size_t header_len = 0;
  for (size_t i = 0; i < len_size; ++i) {
    header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  }
  const size_t data_start = 8 + len_size + header_len;
  if (data_start > bytes.size()) return *error = path + ": truncated header", false;
  const std::string header(bytes.data() + 8 + len_size, header_len);
  auto field = [&](const char* key) {
    const size_t at = header.find(key);
    return at == std::string::npos ? std::string() : header.substr(at + std::strlen(key));
  };
  if (field("'fortran_order': ").rfind("False", 0) != 0) {
    return *error = path + ": only C-order arrays", false;
  }
  const std::string descr = field("'descr': '").substr(0, 3);
  struct Kind { const char* descr; ScalarType dtype; };
  static const Kind kinds[] = {{"<f4", ScalarType::Float}, {"<f8", ScalarType::Double},
                               {"<i8", ScalarType::Long},  {"<i4", ScalarType::Int},
                               {"|b1", ScalarType::Bool},  {"|u1", ScalarType::Byte}};
  const Kind* kind = nullptr;
  for (const Kind& k : kinds) {
    if (descr == k.descr) kind = &k;
  }
  if (kind == nullptr) return *error = path + ": unsupported dtype " + descr, false;
  std::vector<int32_t> shape;
  std::string dims = field("'shape': (");
  dims = dims.substr(0, dims.find(')'));
  for (size_t pos = 0; pos < dims.size();) {
    const size_t comma = dims.find(',', pos);
    const std::string item = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.find_first_of("0123456789") != std::string::npos) shape.push_back(std::stoi(item));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  OwnedTensor tensor(kind->dtype, shape);
  if (bytes.size() - data_start != tensor.tensor().nbytes()) {
    return *error = path + ": data size does not match its shape", false;
  }
  tensor.set_bytes(std::vector<uint8_t>(bytes.begin() + data_start, bytes.end()));
  *out = std::move(tensor);
  return true;
}

void print_tensor(size_t index, const ember::Tensor& t) {
  std::printf("output %zu: %s [", index, ember::scalar_type_name(t.dtype));
  for (int32_t d = 0; d < t.dim; ++d) std::printf(d ? ", %d" : "%d", t.sizes[d]);
  std::printf("]\n");
  // Values in row-major order of the sizes, whatever the dim order (strides).
  for (int64_t i = 0; i < t.numel; ++i) {
    int64_t at = 0;
    for (int64_t d = t.dim - 1, rest = i; d >= 0; --d) {
      at += (rest % t.sizes[d]) * t.strides[d];
      rest /= t.sizes[d];
    }
    if (i) std::printf(" ");
    switch (t.dtype) {
      case ScalarType::Float: std::printf("%.9g", static_cast<const float*>(t.data)[at]); break;
      case ScalarType::Double: std::printf("%.17g", static_cast<const double*>(t.data)[at]); break;
      case ScalarType::Long: std::printf("%" PRId64, static_cast<const int64_t*>(t.data)[at]); break;
      case ScalarType::Int: std::printf("%" PRId32, static_cast<const int32_t*>(t.data)[at]); break;
      case ScalarType::Bool: std::printf("%d", static_cast<const uint8_t*>(t.data)[at] ? 1 : 0); break;
      default: std::printf("?"); break;
    }
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, method_name = "forward";
  std::vector<std::string> input_paths;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--method") == 0 && i + 1 < argc) {
      method_name = argv[++i];
    } else if (path.empty()) {
      path = argv[i];
    } else {
      input_paths.push_back(argv[i]);
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: %s model.pte [--method NAME] [input.npy ...]\n", argv[0]);
    return 2;
  }

  ember::Result<std::unique_ptr<Module>> module = Module::load(path);
  if (!module.ok()) return fail("loading the program", module.error());
  ember::Result<ember::Method*> method = module.get()->method(method_name);
  if (!method.ok()) return fail("loading the method", method.error());
  if (input_paths.size() != method.get()->inputs_size()) {
    std::fprintf(stderr, "ember_cpp_app: method '%s' takes %zu inputs, %zu given\n",
                 method_name.c_str(), method.get()->inputs_size(), input_paths.size());
    return 1;
  }
  // The method copies each input into its planned memory, or points at the
  // caller's bytes, which must then outlive execute(): keep them until the end.
  std::vector<OwnedTensor> inputs(input_paths.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string error;
    if (!read_npy(input_paths[i], &inputs[i], &error)) {
      std::fprintf(stderr, "ember_cpp_app: %s\n", error.c_str());
      return 1;
    }
    const Error err = method.get()->set_input(i, inputs[i].tensor());
    if (err != Error::Ok) return fail("setting an input", err);
  }
  const Error err = method.get()->execute();
  if (err != Error::Ok) return fail("execute", err);
  for (size_t i = 0; i < method.get()->outputs_size(); ++i) {
    const ember::EValue* out = method.get()->get_output(i).get();
    if (out->is_tensor()) {
      print_tensor(i, out->to_tensor());
    } else {
      std::printf("output %zu: %s\n%.17g\n", i, ember::tag_name(out->tag), out->scalar_as_double());
    }
  }
  return 0;
}
