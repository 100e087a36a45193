#include "tools/tensor_print.h"

#include <cstdio>

namespace ember::tools {

std::string shape_string(std::span<const int32_t> sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(sizes[i]);
  }
  return s + "]";
}

std::string scalar_value_string(const EValue& v) {
  char buf[64];
  auto join = [&](size_t n, auto item) {
    std::string s = "[";
    for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + item(i);
    return s + "]";
  };
  auto number = [&](double d) {
    std::snprintf(buf, sizeof(buf), "%.17g", d);
    return std::string(buf);
  };
  switch (v.tag) {
    case Tag::None: return "None";
    case Tag::Int: return std::to_string(v.as_int);
    case Tag::Bool: return v.as_bool ? "true" : "false";
    case Tag::Double: return number(v.as_double);
    case Tag::String: return "\"" + std::string(v.as_string) + "\"";
    case Tag::IntList: {
      const auto items = v.as_int_list.get();
      return join(items.size(), [&](size_t i) { return std::to_string(items[i]); });
    }
    case Tag::DoubleList:
      return join(v.as_double_list.size(), [&](size_t i) { return number(v.as_double_list[i]); });
    case Tag::BoolList:
      return join(v.as_bool_list.size(),
                  [&](size_t i) { return std::string(v.as_bool_list[i] ? "true" : "false"); });
    default: return tag_name(v.tag);
  }
}

std::string first_values(const Tensor& t, size_t count) {
  std::string s;
  const size_t n = static_cast<size_t>(t.numel) < count ? static_cast<size_t>(t.numel) : count;
  char buf[64];
  for (size_t i = 0; i < n; ++i) {
    // Element i in memory order: enough for a glance at the output.
    switch (t.dtype) {
      case ScalarType::Float: std::snprintf(buf, sizeof(buf), "%.6g", double(t.data_ptr<float>()[i])); break;
      case ScalarType::Double: std::snprintf(buf, sizeof(buf), "%.6g", t.data_ptr<double>()[i]); break;
      case ScalarType::Long: std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(t.data_ptr<int64_t>()[i])); break;
      case ScalarType::Int: std::snprintf(buf, sizeof(buf), "%d", t.data_ptr<int32_t>()[i]); break;
      case ScalarType::Short: std::snprintf(buf, sizeof(buf), "%d", t.data_ptr<int16_t>()[i]); break;
      case ScalarType::Char: std::snprintf(buf, sizeof(buf), "%d", t.data_ptr<int8_t>()[i]); break;
      case ScalarType::Byte: std::snprintf(buf, sizeof(buf), "%u", t.data_ptr<uint8_t>()[i]); break;
      // Bool storage read as bytes: any non-zero byte is true (no UB for bytes other than 0/1).
      case ScalarType::Bool: std::snprintf(buf, sizeof(buf), "%s", t.data_ptr<const uint8_t>()[i] != 0 ? "True" : "False"); break;
      default: std::snprintf(buf, sizeof(buf), "?"); break;
    }
    if (i > 0) s += ", ";
    s += buf;
  }
  if (static_cast<size_t>(t.numel) > n) s += ", ...";
  return s;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

}  // namespace ember::tools
