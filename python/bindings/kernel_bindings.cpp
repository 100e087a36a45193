// call_kernel: runs one registered kernel on NumPy arrays and Python values,
// so kernel tests can compare against PyTorch eager without exporting.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <deque>
#include <memory>
#include <optional>

#include "kernels/portable/util/cpu_isa.h"
#include "python/bindings/tensor_convert.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernel/kernel_signature.h"
#include "runtime/kernel/thread_pool.h"

namespace nb = nanobind;
using namespace ember;

namespace {

// Storage for the EValues of one call; deques keep addresses stable.
struct CallArgs {
  std::deque<EValue> values;
  std::deque<python::ArrayTensor> tensors;
  std::deque<std::vector<EValue*>> boxed;
  std::deque<std::vector<int64_t>> unboxed;
  std::deque<std::vector<double>> doubles;
  std::deque<std::vector<Tensor*>> tensor_lists;
  std::deque<std::string> strings;

  EValue* convert(nb::handle item) {
    EValue& v = values.emplace_back();
    if (item.is_none()) {
      v.tag = Tag::None;
    } else if (nb::isinstance<nb::bool_>(item)) {
      v.tag = Tag::Bool;
      v.as_bool = nb::cast<bool>(item);
    } else if (nb::isinstance<nb::int_>(item)) {
      v.tag = Tag::Int;
      v.as_int = nb::cast<int64_t>(item);
    } else if (nb::isinstance<nb::float_>(item)) {
      v.tag = Tag::Double;
      v.as_double = nb::cast<double>(item);
    } else if (nb::isinstance<nb::str>(item)) {
      v.tag = Tag::String;
      v.as_string = strings.emplace_back(nb::cast<std::string>(item));
    } else if (nb::isinstance<nb::tuple>(item)) {
      nb::tuple t = nb::cast<nb::tuple>(item);
      if (t.size() != 2 || nb::cast<std::string>(t[0]) != "dtype") {
        throw nb::value_error("tuple arguments must be ('dtype', scalar_type_number)");
      }
      v.tag = Tag::Int;
      v.as_int = nb::cast<int64_t>(t[1]);
    } else if (nb::isinstance<nb::list>(item)) {
      nb::list l = nb::cast<nb::list>(item);
      bool all_int = true, any_array = false;
      for (nb::handle x : l) {
        all_int = all_int && nb::isinstance<nb::int_>(x) && !nb::isinstance<nb::bool_>(x);
        any_array = any_array || (!nb::isinstance<nb::int_>(x) && !nb::isinstance<nb::float_>(x) &&
                                  !x.is_none());
      }
      if (any_array) {
        auto& list = tensor_lists.emplace_back();
        bool optional = false;
        for (nb::handle x : l) {
          if (x.is_none()) {
            list.push_back(nullptr);
            optional = true;
          } else {
            list.push_back(convert(x)->as_tensor);
          }
        }
        v.tag = optional ? Tag::OptionalTensorList : Tag::TensorList;
        v.as_tensor_list = TensorListRef{list.data(), list.size()};
      } else if (all_int) {
        auto& items = boxed.emplace_back();
        auto& flat = unboxed.emplace_back();
        for (nb::handle x : l) {
          items.push_back(convert(x));
          flat.push_back(items.back()->as_int);
        }
        v.tag = Tag::IntList;
        v.as_int_list = BoxedIntList{items.data(), flat.data(), items.size()};
      } else {
        auto& d = doubles.emplace_back();
        for (nb::handle x : l) d.push_back(nb::cast<double>(x));
        v.tag = Tag::DoubleList;
        v.as_double_list = std::span<const double>(d.data(), d.size());
      }
    } else {
      nb::ndarray<nb::ro> array;
      if (!nb::try_cast(item, array)) throw nb::type_error("unsupported kernel argument");
      python::ArrayTensor& t = tensors.emplace_back();
      python::tensor_from_array(array, &t);
      t.tensor.capacity_bytes = t.tensor.nbytes();
      v.tag = Tag::Tensor;
      v.as_tensor = &t.tensor;
    }
    return &v;
  }
};

// `returns`: None for a single out (the return slot aliases the last
// argument), or the indices of the out arguments that form the TensorList
// return slot of a multi-out op, as the emitter builds it.
size_t call_kernel(const std::string& name, nb::list args, std::optional<std::vector<int>> returns,
                   std::vector<int> constants, int runs, size_t prepare_bytes, bool check_dtypes) {
  const Kernel* kernel = find_kernel(name);
  if (kernel == nullptr) throw nb::key_error(("no kernel registered for " + name).c_str());
  CallArgs storage;
  std::vector<EValue*> ptrs;
  for (nb::handle item : args) ptrs.push_back(storage.convert(item));
  if (returns.has_value()) {
    auto& list = storage.tensor_lists.emplace_back();
    for (int i : *returns) {
      if (i < 0 || static_cast<size_t>(i) >= ptrs.size() || !ptrs[i]->is_tensor()) {
        throw nb::value_error("returns: every index must name a tensor argument");
      }
      list.push_back(ptrs[i]->as_tensor);
    }
    EValue& ret = storage.values.emplace_back();
    ret.tag = Tag::TensorList;
    ret.as_tensor_list = TensorListRef{list.data(), list.size()};
    ptrs.push_back(&ret);
  } else if (!ptrs.empty()) {
    ptrs.push_back(ptrs.back());  // The return slot aliases the out.
  }
  if (kernel->num_args >= 0 && static_cast<size_t>(kernel->num_args) != ptrs.size()) {
    throw nb::value_error((name + " takes " + std::to_string(kernel->num_args - 1) +
                           " arguments (plus the return slot), got " + std::to_string(args.size()))
                              .c_str());
  }
  // The kinds check load_method does: typed kernels unbox without checking.
  const KernelSignature typed{kernel->name, kernel->kinds, kernel->arg_names};
  const KernelSignature* sig = kernel->kinds != nullptr ? &typed : find_kernel_signature(name);
  if (sig != nullptr && check_kernel_arguments(*sig, ptrs.data(), ptrs.size()) != Error::Ok) {
    python::raise_error(Error::InvalidProgram, "call_kernel");
  }
  if (check_dtypes && check_kernel_dtype(*kernel, ptrs.data(), ptrs.size()) != Error::Ok) {
    python::raise_error(Error::InvalidProgram, "call_kernel");
  }
  if (runs < 1) throw nb::value_error("runs must be at least 1");
  bool constant[kMaxKernelArgs] = {};
  for (int i : constants) {
    if (i < 0 || static_cast<size_t>(i) >= args.size() || !ptrs[i]->is_tensor()) {
      throw nb::value_error("constants: every index must name a tensor argument");
    }
    constant[i] = true;
  }
  if (ptrs.size() > kMaxKernelArgs) throw nb::value_error("too many arguments");
  // Prepare, as load_method would, in memory from a method allocator.
  // Uninitialised, and only for kernels that prepare: most calls need none.
  std::unique_ptr<uint8_t[]> method_memory(
      kernel->prepare != nullptr ? new uint8_t[prepare_bytes] : nullptr);
  MemoryAllocator allocator(method_memory.get(), kernel->prepare != nullptr ? prepare_bytes : 0);
  void* state = nullptr;
  void* scratch = nullptr;
  size_t scratch_bytes = 0;
  if (kernel->prepare != nullptr) {
    KernelPrepareContext pctx(kernel->name, &allocator, ptrs.data(), constant, ptrs.size(),
                              thread_pool());
    const Error err = kernel->prepare(pctx, ptrs.data());
    if (err != Error::Ok) python::raise_error(err, "call_kernel (prepare)");
    state = pctx.state();
    // The scratch a method would share among its kernels (reserve_scratch).
    if (pctx.scratch_bytes() > 0) {
      scratch = allocator.allocate(pctx.scratch_bytes(), 64);
      if (scratch == nullptr) {
        throw nb::value_error(("call_kernel: prepare_bytes is too small for the kernel's " +
                               std::to_string(pctx.scratch_bytes()) + " bytes of scratch")
                                  .c_str());
      }
      scratch_bytes = pctx.scratch_bytes();
    }
  }
  KernelContext ctx(kernel->name);
  ctx.set_thread_pool(thread_pool());  // As a loaded method would: tests cover parallel paths.
  ctx.set_state(state);
  ctx.set_scratch(scratch, scratch_bytes);
  {
    nb::gil_scoped_release release;
    for (int r = 0; r < runs && ctx.failure() == Error::Ok; ++r) {
      ctx.reset(kernel->name);
      kernel->fn(ctx, ptrs.data());
    }
  }
  if (ctx.failure() != Error::Ok) python::raise_error(ctx.failure(), "call_kernel");
  return allocator.used();
}

}  // namespace

void bind_kernels(nb::module_& m) {
  m.def("call_kernel", &call_kernel, nb::arg("name"), nb::arg("args"),
        nb::arg("returns") = nb::none(), nb::arg("constants") = std::vector<int>{},
        nb::arg("runs") = 1, nb::arg("prepare_bytes") = size_t{64} << 20, nb::arg("check_dtypes") = true,
        "Calls one kernel through the lifecycle a loaded method gives it, on the process-wide "
        "thread pool: the argument-kind check and the kernel's prepare step (load time), then "
        "`runs` runs on that one prepared state; out arrays are written in place. For tests. "
        "`returns` lists the indices of the outs forming a multi-out op's TensorList return "
        "slot; `constants` the tensor arguments to treat as program constants (prepare may pack "
        "them); `prepare_bytes` the method allocator's size; `check_dtypes=False` skips the op "
        "list's dtype-set check (to probe what the kernel itself computes). Returns the bytes "
        "prepare took.");
  m.def("registered_kernels", []() {
    std::vector<std::string> names;
    for (size_t i = 0; i < registered_kernel_count(); ++i) names.emplace_back(registered_kernel(i).name);
    return names;
  });
  m.def("cpu_isa", []() { return kernels::portable::isa_name(kernels::portable::cpu_isa()); },
        "The ISA level the kernels dispatch on: the host's, capped by EMBER_ISA.");
  m.def("host_isa", []() { return kernels::portable::isa_name(kernels::portable::host_isa()); },
        "The ISA level the host CPU supports.");
}
