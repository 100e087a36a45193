#include "runtime/executor/method_meta.h"

#include "schema/program_generated.h"

namespace ember {

const char* MethodMeta::name() const { return plan_->name()->c_str(); }

size_t MethodMeta::num_inputs() const {
  return plan_->inputs() != nullptr ? plan_->inputs()->size() : 0;
}

size_t MethodMeta::num_outputs() const {
  return plan_->outputs() != nullptr ? plan_->outputs()->size() : 0;
}

Result<Tag> MethodMeta::value_tag(int32_t value_index) const {
  switch (plan_->values()->Get(static_cast<uint32_t>(value_index))->val_type()) {
    case ember_fb::KernelTypes::Null: return Tag::None;
    case ember_fb::KernelTypes::Int: return Tag::Int;
    case ember_fb::KernelTypes::Bool: return Tag::Bool;
    case ember_fb::KernelTypes::Double: return Tag::Double;
    case ember_fb::KernelTypes::Tensor: return Tag::Tensor;
    case ember_fb::KernelTypes::String: return Tag::String;
    case ember_fb::KernelTypes::IntList: return Tag::IntList;
    case ember_fb::KernelTypes::DoubleList: return Tag::DoubleList;
    case ember_fb::KernelTypes::BoolList: return Tag::BoolList;
    case ember_fb::KernelTypes::TensorList: return Tag::TensorList;
    case ember_fb::KernelTypes::OptionalTensorList: return Tag::OptionalTensorList;
    default: break;
  }
  return set_error(Error::InvalidProgram, "value %d has an unknown kind", value_index);
}

Result<Tag> MethodMeta::input_tag(size_t index) const {
  EMBER_CHECK_OR_RETURN(index < num_inputs(), Error::InvalidArgument,
                        "method '%s': input index %zu is out of range (%zu inputs)", name(),
                        index, num_inputs());
  return value_tag(plan_->inputs()->Get(static_cast<uint32_t>(index)));
}

Result<Tag> MethodMeta::output_tag(size_t index) const {
  EMBER_CHECK_OR_RETURN(index < num_outputs(), Error::InvalidArgument,
                        "method '%s': output index %zu is out of range (%zu outputs)", name(),
                        index, num_outputs());
  return value_tag(plan_->outputs()->Get(static_cast<uint32_t>(index)));
}

Result<TensorInfo> MethodMeta::tensor_info(int32_t value_index) const {
  const auto* v = plan_->values()->Get(static_cast<uint32_t>(value_index));
  EMBER_CHECK_OR_RETURN(v->val_type() == ember_fb::KernelTypes::Tensor, Error::InvalidArgument,
                        "method '%s' value %d is a %s, not a tensor", name(), value_index,
                        ember_fb::EnumNameKernelTypes(v->val_type()));
  const auto* t = v->val_as_Tensor();
  TensorInfo info;
  info.dtype = static_cast<ScalarType>(t->scalar_type());
  info.sizes = t->sizes() != nullptr ? std::span<const int32_t>(t->sizes()->data(), t->sizes()->size())
                                     : std::span<const int32_t>();
  info.dim_order = t->dim_order() != nullptr
                       ? std::span<const uint8_t>(t->dim_order()->data(), t->dim_order()->size())
                       : std::span<const uint8_t>();
  info.dynamism = static_cast<TensorShapeDynamism>(t->shape_dynamism());
  size_t n = element_size(info.dtype);
  for (int32_t s : info.sizes) n *= static_cast<size_t>(s);
  info.nbytes = n;
  return info;
}

Result<TensorInfo> MethodMeta::input_tensor_info(size_t index) const {
  EMBER_CHECK_OR_RETURN(index < num_inputs(), Error::InvalidArgument,
                        "method '%s': input index %zu is out of range (%zu inputs)", name(),
                        index, num_inputs());
  return tensor_info(plan_->inputs()->Get(static_cast<uint32_t>(index)));
}

Result<TensorInfo> MethodMeta::output_tensor_info(size_t index) const {
  EMBER_CHECK_OR_RETURN(index < num_outputs(), Error::InvalidArgument,
                        "method '%s': output index %zu is out of range (%zu outputs)", name(),
                        index, num_outputs());
  return tensor_info(plan_->outputs()->Get(static_cast<uint32_t>(index)));
}

size_t MethodMeta::num_planned_buffers() const {
  const auto* sizes = plan_->non_const_buffer_sizes();
  return sizes != nullptr && sizes->size() > 0 ? sizes->size() - 1 : 0;
}

Result<int64_t> MethodMeta::planned_buffer_size(size_t index) const {
  EMBER_CHECK_OR_RETURN(index < num_planned_buffers(), Error::InvalidArgument,
                        "method '%s': planned buffer %zu is out of range (%zu buffers)", name(),
                        index, num_planned_buffers());
  return plan_->non_const_buffer_sizes()->Get(static_cast<uint32_t>(index + 1));
}

size_t MethodMeta::num_instructions() const {
  const auto* chains = plan_->chains();
  if (chains == nullptr || chains->size() == 0 || chains->Get(0)->instructions() == nullptr) return 0;
  return chains->Get(0)->instructions()->size();
}

size_t MethodMeta::num_operators() const {
  return plan_->operators() != nullptr ? plan_->operators()->size() : 0;
}

size_t MethodMeta::num_values() const { return plan_->values()->size(); }

Result<size_t> MethodMeta::prepared_bytes() const {
  if (!loaded_) {
    return set_error(Error::InvalidState,
                     "method '%s': prepared bytes are known once the method is loaded "
                     "(use Method::method_meta())",
                     name());
  }
  return prepared_bytes_;
}

}  // namespace ember
