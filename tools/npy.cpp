#include "tools/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace ember::tools {
namespace {

struct DtypeName {
  const char* descr;
  ScalarType type;
};
constexpr DtypeName kDtypes[] = {
    {"<f4", ScalarType::Float}, {"<f8", ScalarType::Double}, {"<f2", ScalarType::Half},
    {"|i1", ScalarType::Char},  {"<i2", ScalarType::Short},  {"<i4", ScalarType::Int},
    {"<i8", ScalarType::Long},  {"|u1", ScalarType::Byte},   {"|b1", ScalarType::Bool},
    {"<u2", ScalarType::UInt16}, {"<u4", ScalarType::UInt32}, {"<u8", ScalarType::UInt64},
};

// Returns the text after `key` in the header dict, or npos.
size_t find_value(const std::string& header, const std::string& key) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return k;
  const size_t colon = header.find(':', k);
  return colon == std::string::npos ? colon : colon + 1;
}

}  // namespace

bool read_npy(const std::string& path, NpyArray* out, std::string* error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *error = "cannot open " + path;
    return false;
  }
  char magic[8];
  f.read(magic, 8);
  if (!f || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    *error = path + " is not a .npy file";
    return false;
  }
  const int major = static_cast<uint8_t>(magic[6]);
  uint32_t header_len = 0;
  if (major == 1) {
    uint8_t b[2];
    f.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else {
    uint8_t b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t{b[3]} << 24);
  }
  std::string header(header_len, '\0');
  f.read(header.data(), header_len);
  if (!f) {
    *error = path + ": truncated header";
    return false;
  }
  const size_t d = find_value(header, "descr");
  const size_t o = find_value(header, "fortran_order");
  const size_t s = find_value(header, "shape");
  if (d == std::string::npos || o == std::string::npos || s == std::string::npos) {
    *error = path + ": malformed header";
    return false;
  }
  const size_t q1 = header.find('\'', d);
  const size_t q2 = header.find('\'', q1 + 1);
  const std::string descr = header.substr(q1 + 1, q2 - q1 - 1);
  bool found = false;
  for (const auto& dt : kDtypes) {
    if (descr == dt.descr || (descr.size() == 3 && descr.substr(1) == std::string(dt.descr).substr(1) &&
                              descr[0] == '=' )) {
      out->dtype = dt.type;
      found = true;
    }
  }
  if (!found) {
    *error = path + ": unsupported dtype " + descr;
    return false;
  }
  if (header.compare(header.find_first_not_of(' ', o), 4, "True") == 0) {
    *error = path + ": Fortran-order arrays are not supported";
    return false;
  }
  const size_t open = header.find('(', s);
  const size_t close = header.find(')', open);
  std::stringstream dims(header.substr(open + 1, close - open - 1));
  out->shape.clear();
  std::string item;
  size_t numel = 1;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    const long v = std::stol(item);
    out->shape.push_back(static_cast<int32_t>(v));
    numel *= static_cast<size_t>(v);
  }
  out->data.resize(numel * element_size(out->dtype));
  f.read(reinterpret_cast<char*>(out->data.data()), static_cast<std::streamsize>(out->data.size()));
  if (!f) {
    *error = path + ": file ends before its data";
    return false;
  }
  return true;
}

bool write_npy(const std::string& path, ScalarType dtype, const std::vector<int32_t>& shape,
               const void* data, size_t nbytes, std::string* error) {
  const char* descr = nullptr;
  for (const auto& dt : kDtypes) {
    if (dt.type == dtype) descr = dt.descr;
  }
  if (descr == nullptr) {
    *error = std::string("cannot write dtype ") + scalar_type_name(dtype) + " to .npy";
    return false;
  }
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += std::to_string(shape[i]) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 1);
  if (shape.size() > 1 && dims.back() == ',') dims.pop_back();
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" +
                       (shape.size() == 1 ? std::to_string(shape[0]) + "," : dims) + "), }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream f(path, std::ios::binary);
  if (!f) {
    *error = "cannot write " + path;
    return false;
  }
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(len_bytes, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(nbytes));
  return static_cast<bool>(f);
}

}  // namespace ember::tools
