#include "kernels/quantized/util/qparams.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

#include "kernels/portable/util/dtype.h"

namespace ember::kernels::quantized {

bool quant_dtype_range(ScalarType t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case ScalarType::Byte: *lo = 0; *hi = 255; return true;
    case ScalarType::Char: *lo = -128; *hi = 127; return true;
    case ScalarType::Short: *lo = -32768; *hi = 32767; return true;
    case ScalarType::Int: *lo = INT32_MIN; *hi = INT32_MAX; return true;
    default: return false;
  }
}

double load_scale(const Tensor& t, int64_t i) {
  return t.dtype == ScalarType::Double ? t.data_ptr<const double>()[i]
                                       : static_cast<double>(t.data_ptr<const float>()[i]);
}

int64_t load_zero_point(const Tensor& t, int64_t i) {
  return portable::load_as<int64_t>(t.data, t.dtype, i);
}

bool read_per_tensor_params(KernelContext& ctx, EValue** args, int scale_index,
                            int zero_point_index, double* scale, int64_t* zero_point) {
  const EValue& s = *args[scale_index];
  const EValue& z = *args[zero_point_index];
  if (!s.is_tensor()) {
    *scale = s.scalar_as_double();
    *zero_point = z.scalar_as_int();
    return true;
  }
  if (s.as_tensor->numel != 1 || !z.is_tensor() || z.as_tensor->numel != 1) {
    ctx.fail(Error::InvalidArgument,
             "scale and zero_point tensors must have one element (got %lld and %lld)",
             static_cast<long long>(s.as_tensor->numel),
             static_cast<long long>(z.is_tensor() ? z.as_tensor->numel : -1));
    return false;
  }
  *scale = load_scale(*s.as_tensor, 0);
  *zero_point = load_zero_point(*z.as_tensor, 0);
  return true;
}

bool is_quantize_input_dtype(ScalarType t) {
  return t == ScalarType::Float || t == ScalarType::Half || t == ScalarType::BFloat16;
}

namespace {

bool is_scale_valid(double s) { return std::isfinite(s) && s > 0.0; }

bool is_integer_dtype(ScalarType t) {
  return t == ScalarType::Byte || t == ScalarType::Char || t == ScalarType::Short ||
         t == ScalarType::Int || t == ScalarType::Long;
}

// Writes the message and returns false, so checks read `return fail(...)`.
bool fail(char* msg, size_t size, const char* format, ...) __attribute__((format(printf, 3, 4)));
bool fail(char* msg, size_t size, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(msg, size, format, ap);
  va_end(ap);
  return false;
}

bool check_scales(const EValue& v, const bool readable, char* msg, size_t size) {
  if (v.is_double() || v.is_int()) {
    const double s = v.scalar_as_double();
    if (!is_scale_valid(s)) return fail(msg, size, "scale %g must be finite and > 0", s);
    return true;
  }
  if (!v.is_tensor()) return fail(msg, size, "scale must be a float or a tensor");
  const Tensor& t = *v.as_tensor;
  if (t.dtype != ScalarType::Float && t.dtype != ScalarType::Double) {
    return fail(msg, size, "scale tensor must be float32 or float64, got %s",
                scalar_type_name(t.dtype));
  }
  if (!readable || t.data == nullptr) return true;
  for (int64_t i = 0; i < t.numel; ++i) {
    const double s = load_scale(t, i);
    if (!is_scale_valid(s)) {
      return fail(msg, size, "scale[%" PRId64 "] = %g must be finite and > 0", i, s);
    }
  }
  return true;
}

bool check_zero_points(const EValue& v, bool optional, bool readable, int64_t lo, int64_t hi,
                       ScalarType dtype, char* msg, size_t size) {
  if (v.is_none() && optional) return true;
  if (v.is_int() || v.is_bool()) {
    const int64_t z = v.scalar_as_int();
    if (z < lo || z > hi) {
      return fail(msg, size, "zero_point %" PRId64 " is outside %s's range [%" PRId64
                  ", %" PRId64 "]", z, scalar_type_name(dtype), lo, hi);
    }
    return true;
  }
  if (!v.is_tensor()) return fail(msg, size, "zero_point must be an int or a tensor");
  const Tensor& t = *v.as_tensor;
  if (!is_integer_dtype(t.dtype)) {
    return fail(msg, size, "zero_point tensor must have an integer dtype, got %s",
                scalar_type_name(t.dtype));
  }
  if (!readable || t.data == nullptr) return true;
  for (int64_t i = 0; i < t.numel; ++i) {
    const int64_t z = load_zero_point(t, i);
    if (z < lo || z > hi) {
      return fail(msg, size, "zero_point[%" PRId64 "] = %" PRId64 " is outside %s's range [%"
                  PRId64 ", %" PRId64 "]", i, z, scalar_type_name(dtype), lo, hi);
    }
  }
  return true;
}

}  // namespace

bool check_qparams(EValue* const* args, const QParamArgs& layout, const bool* readable,
                   char* msg, size_t msg_size) {
  const EValue& dtype_v = *args[layout.dtype];
  if (!dtype_v.is_int()) return fail(msg, msg_size, "dtype must be a ScalarType");
  const auto dtype = static_cast<ScalarType>(dtype_v.as_int);
  int64_t lo = 0, hi = 0;
  if (!quant_dtype_range(dtype, &lo, &hi)) {
    return fail(msg, msg_size, "dtype %s is not a quantized integer dtype",
                scalar_type_name(dtype));
  }
  const EValue& qmin_v = *args[layout.quant_min];
  const EValue& qmax_v = *args[layout.quant_max];
  if (!qmin_v.is_int() || !qmax_v.is_int()) {
    return fail(msg, msg_size, "quant_min and quant_max must be ints");
  }
  const int64_t qmin = qmin_v.as_int, qmax = qmax_v.as_int;
  if (qmin > qmax || qmin < lo || qmax > hi) {
    return fail(msg, msg_size, "[quant_min, quant_max] = [%" PRId64 ", %" PRId64
                "] must be ordered and within %s's range [%" PRId64 ", %" PRId64 "]",
                qmin, qmax, scalar_type_name(dtype), lo, hi);
  }
  const auto can_read = [&](int i) { return readable == nullptr || readable[i]; };
  if (!check_scales(*args[layout.scale], can_read(layout.scale), msg, msg_size)) return false;
  return check_zero_points(*args[layout.zero_point], layout.zero_point_optional,
                           can_read(layout.zero_point), lo, hi, dtype, msg, msg_size);
}

}  // namespace ember::kernels::quantized
