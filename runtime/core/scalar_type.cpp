#include "runtime/core/scalar_type.h"

namespace ember {

const char* scalar_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::Byte: return "uint8";
    case ScalarType::Char: return "int8";
    case ScalarType::Short: return "int16";
    case ScalarType::Int: return "int32";
    case ScalarType::Long: return "int64";
    case ScalarType::Half: return "float16";
    case ScalarType::Float: return "float32";
    case ScalarType::Double: return "float64";
    case ScalarType::Bool: return "bool";
    case ScalarType::QInt8: return "qint8";
    case ScalarType::QUInt8: return "quint8";
    case ScalarType::QInt32: return "qint32";
    case ScalarType::BFloat16: return "bfloat16";
    case ScalarType::QUInt4x2: return "quint4x2";
    case ScalarType::QUInt2x4: return "quint2x4";
    case ScalarType::Bits16: return "bits16";
    case ScalarType::Float8_e5m2: return "float8_e5m2";
    case ScalarType::Float8_e4m3fn: return "float8_e4m3fn";
    case ScalarType::Float8_e5m2fnuz: return "float8_e5m2fnuz";
    case ScalarType::Float8_e4m3fnuz: return "float8_e4m3fnuz";
    case ScalarType::UInt16: return "uint16";
    case ScalarType::UInt32: return "uint32";
    case ScalarType::UInt64: return "uint64";
  }
  return "unknown";
}

}  // namespace ember
