#include "extension/bundled_program/bundled_program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kernels/portable/util/half.h"
#include "schema/bundled_program_generated.h"

namespace ember::extension {
namespace {

constexpr uint32_t kVersion = 0;

const char* value_kind(ember_bp::ValueUnion t) {
  switch (t) {
    case ember_bp::ValueUnion::Tensor: return "Tensor";
    case ember_bp::ValueUnion::Int: return "Int";
    case ember_bp::ValueUnion::Bool: return "Bool";
    case ember_bp::ValueUnion::Double: return "Double";
    default: return "nothing";
  }
}

bool known_dtype(int8_t code) {
  switch (static_cast<ScalarType>(code)) {
    case ScalarType::Byte: case ScalarType::Char: case ScalarType::Short: case ScalarType::Int:
    case ScalarType::Long: case ScalarType::Half: case ScalarType::Float: case ScalarType::Double:
    case ScalarType::Bool: case ScalarType::BFloat16: return true;
    default: return false;
  }
}

// "method 'forward' test case 2 input 1" for messages.
std::string where(const char* method, size_t test_case, const char* role, size_t index) {
  return "bundled program: method '" + std::string(method) + "' test case " +
         std::to_string(test_case) + " " + role + " " + std::to_string(index);
}

// A tensor value's layout, checked against its bytes: dtype known, sizes
// non-negative, dim order a permutation, bytes == numel * element size.
Error check_tensor(const ember_bp::Tensor* t, const std::string& at) {
  EMBER_CHECK_OR_RETURN(known_dtype(static_cast<int8_t>(t->scalar_type())), Error::InvalidProgram,
                        "%s: unknown scalar type %d", at.c_str(), static_cast<int>(t->scalar_type()));
  const uint32_t rank = t->sizes() != nullptr ? t->sizes()->size() : 0;
  EMBER_CHECK_OR_RETURN(rank <= 16, Error::InvalidProgram, "%s: rank %u (at most 16)", at.c_str(),
                        rank);
  const uint32_t order_rank = t->dim_order() != nullptr ? t->dim_order()->size() : 0;
  EMBER_CHECK_OR_RETURN(order_rank == rank, Error::InvalidProgram,
                        "%s: dim order has %u entries for rank %u", at.c_str(), order_rank, rank);
  bool seen[16] = {};
  for (uint32_t i = 0; i < rank; ++i) {
    const uint8_t d = t->dim_order()->Get(i);
    EMBER_CHECK_OR_RETURN(d < rank && !seen[d], Error::InvalidProgram,
                          "%s: dim order is not a permutation of 0..%u", at.c_str(), rank - 1);
    seen[d] = true;
  }
  std::span<const int32_t> sizes;
  if (rank > 0) sizes = {t->sizes()->data(), rank};
  const int64_t numel = checked_numel(sizes, int64_t{1} << 40);
  char shape[128];
  EMBER_CHECK_OR_RETURN(numel >= 0, Error::InvalidProgram, "%s: invalid sizes %s", at.c_str(),
                        format_shape(sizes, shape, sizeof(shape)));
  const uint64_t want = static_cast<uint64_t>(numel) *
                        element_size(static_cast<ScalarType>(t->scalar_type()));
  const uint64_t have = t->data() != nullptr ? t->data()->size() : 0;
  EMBER_CHECK_OR_RETURN(have == want, Error::InvalidProgram,
                        "%s: %s%s needs %llu bytes, the file holds %llu", at.c_str(),
                        scalar_type_name(static_cast<ScalarType>(t->scalar_type())),
                        format_shape(sizes, shape, sizeof(shape)),
                        static_cast<unsigned long long>(want), static_cast<unsigned long long>(have));
  return Error::Ok;
}

double element(const uint8_t* base, ScalarType dtype, int64_t i) {
  using kernels::portable::Half;
  uint16_t h;
  switch (dtype) {
    case ScalarType::Float: { float v; std::memcpy(&v, base + i * 4, 4); return v; }
    case ScalarType::Double: { double v; std::memcpy(&v, base + i * 8, 8); return v; }
    case ScalarType::Half: std::memcpy(&h, base + i * 2, 2); return Half::to_float(h);
    case ScalarType::BFloat16: {
      std::memcpy(&h, base + i * 2, 2);
      const uint32_t bits = uint32_t{h} << 16;
      float v;
      std::memcpy(&v, &bits, 4);
      return v;
    }
    case ScalarType::Long: { int64_t v; std::memcpy(&v, base + i * 8, 8); return double(v); }
    case ScalarType::Int: { int32_t v; std::memcpy(&v, base + i * 4, 4); return v; }
    case ScalarType::Short: { int16_t v; std::memcpy(&v, base + i * 2, 2); return v; }
    case ScalarType::Char: return static_cast<int8_t>(base[i]);
    case ScalarType::Byte: return base[i];
    case ScalarType::Bool: return base[i] != 0 ? 1.0 : 0.0;
    default: return 0.0;
  }
}

// Element strides of `sizes` laid out in `dim_order` (outermost first).
std::vector<int64_t> strides_of(std::span<const int32_t> sizes, std::span<const uint8_t> order) {
  std::vector<int64_t> strides(sizes.size(), 1);
  int64_t step = 1;
  for (size_t k = order.size(); k-- > 0;) {
    strides[order[k]] = step;
    step *= std::max<int32_t>(sizes[order[k]], 1);
  }
  return strides;
}

// One element pair into the check: its error and how far outside the
// tolerance it lies (> 1: outside; NaN only matches NaN).
void compare_element(OutputCheck& check, int64_t index, double a, double e, double rtol,
                     double atol, double* worst_ratio) {
  double abs_err = 0.0, rel_err = 0.0, ratio = 0.0;
  if (std::isnan(a) || std::isnan(e)) {
    if (!(std::isnan(a) && std::isnan(e))) abs_err = rel_err = ratio = INFINITY;
  } else if (a != e) {
    abs_err = std::fabs(a - e);
    rel_err = e != 0.0 ? abs_err / std::fabs(e) : INFINITY;
    const double allowed = atol + rtol * std::fabs(e);
    ratio = allowed > 0.0 ? abs_err / allowed : INFINITY;
  }
  if (!std::isnan(abs_err)) check.max_abs_error = std::max(check.max_abs_error, abs_err);
  if (e != 0.0 || std::isnan(a) != std::isnan(e)) check.max_rel_error = std::max(check.max_rel_error, rel_err);
  if (ratio > 1.0) check.passed = false;
  if (check.worst_element < 0 || ratio > *worst_ratio) {
    *worst_ratio = ratio;
    check.worst_element = index;
    check.actual = a;
    check.expected = e;
  }
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

}  // namespace

bool is_bundled_program(const void* data, size_t size) {
  return data != nullptr && size >= 8 &&
         std::memcmp(static_cast<const uint8_t*>(data) + 4, ember_bp::BundledProgramIdentifier(),
                     4) == 0;
}

Error get_program_data(const void* data, size_t size, const void** program_data,
                       size_t* program_size) {
  if (!is_bundled_program(data, size)) {
    *program_data = data;
    *program_size = size;
    return Error::Ok;
  }
  EMBER_TRY_ASSIGN(BundledProgram bundled, BundledProgram::load(data, size));
  *program_data = bundled.program().data();
  *program_size = bundled.program().size();
  return Error::Ok;
}

Result<BundledProgram> BundledProgram::load(const void* data, size_t size) {
  EMBER_CHECK_OR_RETURN(is_bundled_program(data, size), Error::InvalidProgram,
                        "bundled program: identifier is not BP08 (not a .bpte file)");
  EMBER_CHECK_OR_RETURN(reinterpret_cast<uintptr_t>(data) % 16 == 0, Error::InvalidArgument,
                        "bundled program: data at %p is not 16-byte aligned", data);
  flatbuffers::Verifier verifier(static_cast<const uint8_t*>(data), size);
  EMBER_CHECK_OR_RETURN(ember_bp::VerifyBundledProgramBuffer(verifier), Error::InvalidProgram,
                        "bundled program: FlatBuffer failed verification (corrupt or truncated "
                        ".bpte, %zu bytes)", size);
  BundledProgram b;
  b.root_ = ember_bp::GetBundledProgram(data);
  EMBER_CHECK_OR_RETURN(b.root_->version() == kVersion, Error::InvalidProgram,
                        "bundled program: version %u, this runtime reads version %u",
                        b.root_->version(), kVersion);
  const auto* program = b.root_->program();
  EMBER_CHECK_OR_RETURN(program != nullptr && program->size() > 0, Error::InvalidProgram,
                        "bundled program: holds no program");
  b.program_ = {program->data(), program->size()};
  b.program_offset_ = static_cast<size_t>(program->data() - static_cast<const uint8_t*>(data));
  EMBER_CHECK_OR_RETURN(b.program_offset_ % 16 == 0, Error::InvalidProgram,
                        "bundled program: the program starts at offset %zu, not 16-byte aligned",
                        b.program_offset_);
  for (size_t s = 0; s < b.num_suites(); ++s) {
    EMBER_CHECK_OR_RETURN(b.root_->method_test_suites()->Get(s)->method_name() != nullptr,
                          Error::InvalidProgram, "bundled program: test suite %zu names no method", s);
    for (size_t t = 0; t < s; ++t) {
      EMBER_CHECK_OR_RETURN(std::strcmp(b.suite_method(s), b.suite_method(t)) != 0,
                            Error::InvalidProgram,
                            "bundled program: two test suites for method '%s'", b.suite_method(s));
    }
  }
  return b;
}

size_t BundledProgram::num_suites() const {
  return root_->method_test_suites() != nullptr ? root_->method_test_suites()->size() : 0;
}

const char* BundledProgram::suite_method(size_t suite) const {
  return root_->method_test_suites()->Get(static_cast<uint32_t>(suite))->method_name()->c_str();
}

size_t BundledProgram::num_test_cases(size_t suite) const {
  const auto* cases = root_->method_test_suites()->Get(static_cast<uint32_t>(suite))->test_cases();
  return cases != nullptr ? cases->size() : 0;
}

Result<size_t> BundledProgram::suite_of(const char* method) const {
  std::string names;
  for (size_t s = 0; s < num_suites(); ++s) {
    if (std::strcmp(suite_method(s), method) == 0) return s;
    names += (names.empty() ? "'" : ", '") + std::string(suite_method(s)) + "'";
  }
  return set_error(Error::NotFound, "bundled program: no test suite for method '%s' (suites: %s)",
                   method, names.empty() ? "none" : names.c_str());
}

Result<const ember_bp::BundledMethodTestCase*> BundledProgram::test_case(const char* method,
                                                                          size_t index) const {
  EMBER_TRY_ASSIGN(const size_t suite, suite_of(method));
  const size_t n = num_test_cases(suite);
  EMBER_CHECK_OR_RETURN(index < n, Error::InvalidArgument,
                        "bundled program: method '%s' has %zu test cases, no case %zu", method, n,
                        index);
  return root_->method_test_suites()->Get(static_cast<uint32_t>(suite))->test_cases()->Get(
      static_cast<uint32_t>(index));
}

Error BundledProgram::load_bundled_input(Method& method, size_t index) {
  const MethodMeta meta = method.method_meta();
  const char* name = meta.name();
  EMBER_TRY_ASSIGN(const ember_bp::BundledMethodTestCase* c, test_case(name, index));
  const uint32_t n = c->inputs() != nullptr ? c->inputs()->size() : 0;
  EMBER_CHECK_OR_RETURN(n == method.inputs_size(), Error::InvalidArgument,
                        "bundled program: method '%s' test case %zu has %u inputs, the method "
                        "takes %zu",
                        name, index, n, method.inputs_size());
  inputs_.clear();
  inputs_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const ember_bp::Value* v = c->inputs()->Get(i);
    const std::string at = where(name, index, "input", i);
    Error err = Error::Ok;
    switch (v->val_type()) {
      case ember_bp::ValueUnion::Tensor: {
        const ember_bp::Tensor* t = v->val_as_Tensor();
        EMBER_TRY(check_tensor(t, at));
        std::span<const int32_t> sizes;
        std::span<const uint8_t> order;
        if (t->sizes() != nullptr && t->sizes()->size() > 0) {
          sizes = {t->sizes()->data(), t->sizes()->size()};
          order = {t->dim_order()->data(), t->dim_order()->size()};
        }
        inputs_.emplace_back(static_cast<ScalarType>(t->scalar_type()), sizes, order);
        if (t->data()->size() > 0) {
          std::memcpy(inputs_.back().bytes().data(), t->data()->data(), t->data()->size());
        }
        err = method.set_input(i, inputs_.back().tensor());
        break;
      }
      case ember_bp::ValueUnion::Int: {
        EValue e;
        e.tag = Tag::Int;
        e.as_int = v->val_as_Int()->int_val();
        err = method.set_input(i, e);
        break;
      }
      case ember_bp::ValueUnion::Bool: {
        EValue e;
        e.tag = Tag::Bool;
        e.as_bool = v->val_as_Bool()->bool_val();
        err = method.set_input(i, e);
        break;
      }
      case ember_bp::ValueUnion::Double: {
        EValue e;
        e.tag = Tag::Double;
        e.as_double = v->val_as_Double()->double_val();
        err = method.set_input(i, e);
        break;
      }
      default:
        return set_error(Error::InvalidProgram, "%s holds no value", at.c_str());
    }
    if (err != Error::Ok) {
      const std::string why = last_error_message();
      return set_error(err, "%s: %s", at.c_str(), why.c_str());
    }
  }
  return Error::Ok;
}

Result<CaseReport> BundledProgram::check_method_outputs(const Method& method, size_t index,
                                                        double rtol, double atol) const {
  const MethodMeta meta = method.method_meta();
  const char* name = meta.name();
  EMBER_TRY_ASSIGN(const ember_bp::BundledMethodTestCase* c, test_case(name, index));
  CaseReport report;
  report.method = name;
  report.test_case = index;
  if (c->expected_outputs() == nullptr) {
    report.compared = false;
    return report;
  }
  const uint32_t n = c->expected_outputs()->size();
  EMBER_CHECK_OR_RETURN(n == method.outputs_size(), Error::InvalidArgument,
                        "bundled program: method '%s' test case %zu expects %u outputs, the "
                        "method gives %zu",
                        name, index, n, method.outputs_size());
  for (uint32_t i = 0; i < n; ++i) {
    const ember_bp::Value* want = c->expected_outputs()->Get(i);
    const std::string at = where(name, index, "output", i);
    EMBER_TRY_ASSIGN(const EValue* got, method.get_output(i));
    const auto kind = want->val_type();
    const bool kinds_match =
        (kind == ember_bp::ValueUnion::Tensor && got->tag == Tag::Tensor) ||
        (kind == ember_bp::ValueUnion::Int && got->tag == Tag::Int) ||
        (kind == ember_bp::ValueUnion::Bool && got->tag == Tag::Bool) ||
        (kind == ember_bp::ValueUnion::Double && got->tag == Tag::Double);
    EMBER_CHECK_OR_RETURN(kinds_match, Error::InvalidArgument,
                          "%s: the method gives %s, the test case expects %s", at.c_str(),
                          tag_name(got->tag), value_kind(kind));
    OutputCheck check;
    check.index = i;
    double worst_ratio = 0.0;
    if (kind == ember_bp::ValueUnion::Tensor) {
      const ember_bp::Tensor* t = want->val_as_Tensor();
      EMBER_TRY(check_tensor(t, at));
      const Tensor& a = got->to_tensor();
      const auto dtype = static_cast<ScalarType>(t->scalar_type());
      EMBER_CHECK_OR_RETURN(a.dtype == dtype, Error::InvalidArgument,
                            "%s: the method gives dtype %s, the test case expects %s", at.c_str(),
                            scalar_type_name(a.dtype), scalar_type_name(dtype));
      std::span<const int32_t> sizes;
      std::span<const uint8_t> order;
      if (t->sizes() != nullptr && t->sizes()->size() > 0) {
        sizes = {t->sizes()->data(), t->sizes()->size()};
        order = {t->dim_order()->data(), t->dim_order()->size()};
      }
      const bool same_shape = a.shape().size() == sizes.size() &&
                              std::equal(sizes.begin(), sizes.end(), a.shape().begin());
      char s1[128], s2[128];
      EMBER_CHECK_OR_RETURN(same_shape, Error::InvalidArgument,
                            "%s: the method gives shape %s, the test case expects %s", at.c_str(),
                            format_shape(a.shape(), s1, sizeof(s1)),
                            format_shape(sizes, s2, sizeof(s2)));
      check.shape.assign(sizes.begin(), sizes.end());
      check.numel = a.numel;
      const std::vector<int64_t> want_strides = strides_of(sizes, order);
      const auto* a_bytes = static_cast<const uint8_t*>(a.data);
      const uint8_t* e_bytes = t->data()->data();
      std::vector<int32_t> idx(sizes.size(), 0);
      for (int64_t flat = 0; flat < a.numel; ++flat) {
        int64_t ao = 0, eo = 0;
        for (size_t d = 0; d < idx.size(); ++d) {
          ao += idx[d] * a.strides[d];
          eo += idx[d] * want_strides[d];
        }
        compare_element(check, flat, element(a_bytes, a.dtype, ao), element(e_bytes, dtype, eo),
                        rtol, atol, &worst_ratio);
        for (size_t d = idx.size(); d-- > 0;) {  // next logical index, row-major
          if (++idx[d] < sizes[d]) break;
          idx[d] = 0;
        }
      }
    } else {
      check.numel = 1;
      double a = 0.0, e = 0.0;
      double r = rtol, t = atol;
      if (kind == ember_bp::ValueUnion::Int) {
        a = double(got->as_int), e = double(want->val_as_Int()->int_val());
        r = t = 0.0;
      } else if (kind == ember_bp::ValueUnion::Bool) {
        a = got->as_bool, e = want->val_as_Bool()->bool_val();
        r = t = 0.0;
      } else {
        a = got->as_double, e = want->val_as_Double()->double_val();
      }
      compare_element(check, 0, a, e, r, t, &worst_ratio);
    }
    report.passed = report.passed && check.passed;
    report.outputs.push_back(std::move(check));
  }
  return report;
}

std::string describe_failure(const CaseReport& report, double rtol, double atol) {
  std::string s = "bundled program: method '" + report.method + "' test case " +
                  std::to_string(report.test_case) + ":";
  for (const OutputCheck& o : report.outputs) {
    if (o.passed) continue;
    std::string index;
    int64_t rest = o.worst_element;
    for (size_t d = o.shape.size(); d-- > 0;) {
      const int64_t size = std::max<int32_t>(o.shape[d], 1);
      index = std::to_string(rest % size) + (index.empty() ? "" : ", ") + index;
      rest /= size;
    }
    s += " output " + std::to_string(o.index) + " differs beyond rtol " + number(rtol) +
         ", atol " + number(atol) + ": element " + std::to_string(o.worst_element) +
         (o.shape.empty() ? "" : " [" + index + "]") + " is " + number(o.actual) + " where " +
         number(o.expected) + " is expected; max abs error " + number(o.max_abs_error) +
         ", max rel error " + number(o.max_rel_error) + " over " + std::to_string(o.numel) +
         " elements;";
  }
  s.pop_back();
  return s;
}

Error BundledProgram::verify_method_outputs(const Method& method, size_t test_case, double rtol,
                                            double atol) const {
  EMBER_TRY_ASSIGN(CaseReport report, check_method_outputs(method, test_case, rtol, atol));
  if (report.passed) return Error::Ok;
  return set_error(Error::InvalidArgument, "%s", describe_failure(report, rtol, atol).c_str());
}

Result<std::vector<CaseReport>> run_bundled_tests(
    BundledProgram& bundled, const std::function<Result<Method*>(const std::string&)>& load_method,
    const std::string& method, double rtol, double atol) {
  std::vector<CaseReport> reports;
  if (!method.empty()) EMBER_TRY(bundled.suite_of(method.c_str()).error());
  for (size_t s = 0; s < bundled.num_suites(); ++s) {
    const std::string name = bundled.suite_method(s);
    if (!method.empty() && name != method) continue;
    Result<Method*> m = load_method(name);
    if (!m.ok()) {
      const std::string why = last_error_message();
      return set_error(m.error(), "bundled program: loading method '%s' of its test suite: %s",
                       name.c_str(), why.c_str());
    }
    for (size_t c = 0; c < bundled.num_test_cases(s); ++c) {
      EMBER_TRY(bundled.load_bundled_input(*m.get(), c));
      const Error err = m.get()->execute();
      if (err != Error::Ok) {
        const std::string why = last_error_message();
        return set_error(err, "bundled program: method '%s' test case %zu: execute: %s",
                         name.c_str(), c, why.c_str());
      }
      Result<CaseReport> report = bundled.check_method_outputs(*m.get(), c, rtol, atol);
      if (!report.ok()) return report.error();
      reports.push_back(std::move(report.get()));
    }
  }
  return reports;
}

Result<std::unique_ptr<DataLoader>> program_data_loader(std::unique_ptr<DataLoader> loader) {
  EMBER_TRY_ASSIGN(const size_t size, loader->size());
  if (size < 8) return loader;
  size_t program_offset = 0, program_size = 0;
  {
    EMBER_TRY_ASSIGN(FreeableBuffer head, loader->load(0, 8));
    if (!is_bundled_program(head.data(), head.size())) return loader;
    EMBER_TRY_ASSIGN(FreeableBuffer whole, loader->load(0, size));
    EMBER_TRY_ASSIGN(BundledProgram bundled, BundledProgram::load(whole.data(), whole.size()));
    program_offset = bundled.program_offset();
    program_size = bundled.program().size();
  }
  return std::unique_ptr<DataLoader>(
      new SubrangeDataLoader(std::move(loader), program_offset, program_size));
}

Result<FreeableBuffer> SubrangeDataLoader::load(size_t offset, size_t size) {
  EMBER_CHECK_OR_RETURN(offset <= size_ && size <= size_ - offset, Error::OutOfRange,
                        "bundled program: range [%zu, +%zu) is outside the %zu-byte program",
                        offset, size, size_);
  return inner_->load(offset_ + offset, size);
}

}  // namespace ember::extension
