// Shared printing helpers for the command-line tools.
#pragma once

#include <string>

#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"

namespace ember::tools {

/// "[1, 16, 256, 256]"
std::string shape_string(std::span<const int32_t> sizes);

/// The first `count` elements of a tensor as text: "0.12, -1.5, ...".
std::string first_values(const Tensor& t, size_t count);

/// A non-tensor value as text: "128", "true", "0.5", "\"tiny\"", "[2, 7]", "None".
std::string scalar_value_string(const EValue& v);

/// Human-readable byte count: "1.50 MiB".
std::string human_bytes(double bytes);

}  // namespace ember::tools
