// Bindings of the runtime: load a program, load a method, run it with NumPy
// arrays. Every runtime error becomes ember._C.EmberError with its message.
#include <algorithm>
#include <optional>
#include <set>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "extension/devtools/intermediate_outputs.h"
#include "extension/devtools/profile_file.h"
#include "extension/module/module.h"
#include "python/bindings/tensor_convert.h"
#include "runtime/kernel/thread_pool.h"
#include "schema/program_generated.h"

namespace nb = nanobind;
using namespace ember;
using ember::python::ArrayTensor;
using ember::python::raise_error;

namespace {

struct PyProgram {
  std::unique_ptr<extension::Module> module;
};

struct PyMethod {
  PyProgram* program;
  Method* method;
  std::string name;
};

// Inputs an instruction writes (a method that mutates its input in place):
// the value is the return entry (last argument) of a KernelCall, an item of
// its TensorList, or a Move's target.
std::vector<size_t> written_inputs(const PyMethod& self) {
  const auto* plans = self.program->module->program().flatbuffer()->execution_plan();
  const ember_fb::ExecutionPlan* plan = nullptr;
  for (uint32_t i = 0; i < plans->size(); ++i) {
    if (self.name == plans->Get(i)->name()->c_str()) plan = plans->Get(i);
  }
  std::vector<size_t> found;
  if (plan == nullptr || plan->inputs() == nullptr || plan->chains() == nullptr) return found;
  std::set<int32_t> written;
  for (const auto* chain : *plan->chains()) {
    for (uint32_t k = 0; chain->instructions() && k < chain->instructions()->size(); ++k) {
      const auto* ins = chain->instructions()->Get(k);
      if (const auto* call = ins->instr_args_as_KernelCall(); call && call->args() &&
                                                               call->args()->size() > 0) {
        const int32_t ret = call->args()->Get(call->args()->size() - 1);
        written.insert(ret);
        const auto* v = plan->values()->Get(static_cast<uint32_t>(ret));
        if (const auto* list = v->val_as_TensorList(); list && list->items()) {
          for (int32_t item : *list->items()) written.insert(item);
        }
      } else if (const auto* move = ins->instr_args_as_MoveCall()) {
        written.insert(move->move_to());
      }
    }
  }
  for (uint32_t i = 0; i < plan->inputs()->size(); ++i) {
    if (written.count(plan->inputs()->Get(i))) found.push_back(i);
  }
  return found;
}

nb::dict tensor_info_dict(const TensorInfo& info) {
  nb::dict d;
  d["dtype"] = scalar_type_name(info.dtype);
  d["sizes"] = std::vector<int32_t>(info.sizes.begin(), info.sizes.end());
  d["dim_order"] = std::vector<int>(info.dim_order.begin(), info.dim_order.end());
  d["dynamic"] = info.dynamism != TensorShapeDynamism::Static;
  d["nbytes"] = info.nbytes;
  return d;
}

nb::object io_description(const MethodMeta& meta, size_t i, bool input) {
  Result<Tag> tag = input ? meta.input_tag(i) : meta.output_tag(i);
  if (!tag.ok()) raise_error(tag.error(), "method_meta");
  if (tag.get() != Tag::Tensor) {
    nb::dict d;
    d["kind"] = tag_name(tag.get());
    return d;
  }
  Result<TensorInfo> info = input ? meta.input_tensor_info(i) : meta.output_tensor_info(i);
  if (!info.ok()) raise_error(info.error(), "method_meta");
  nb::dict d = tensor_info_dict(info.get());
  d["kind"] = "Tensor";
  return d;
}

nb::dict meta_dict(const MethodMeta& meta) {
  nb::dict d;
  d["name"] = meta.name();
  nb::list inputs, outputs;
  for (size_t i = 0; i < meta.num_inputs(); ++i) inputs.append(io_description(meta, i, true));
  for (size_t i = 0; i < meta.num_outputs(); ++i) outputs.append(io_description(meta, i, false));
  d["inputs"] = inputs;
  d["outputs"] = outputs;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < meta.num_planned_buffers(); ++i) sizes.push_back(meta.planned_buffer_size(i).get());
  d["planned_buffer_sizes"] = sizes;
  d["num_instructions"] = meta.num_instructions();
  d["num_operators"] = meta.num_operators();
  d["num_values"] = meta.num_values();
  return d;
}

PyProgram* load_program(nb::object source, const std::string& verification, nb::object data) {
  Program::Verification level;
  if (verification == "full") level = Program::Verification::Full;
  else if (verification == "minimal") level = Program::Verification::Minimal;
  else throw nb::value_error(("verification must be 'full' or 'minimal', got '" + verification + "'").c_str());
  auto load = [&]() -> Result<std::unique_ptr<extension::Module>> {
    if (nb::isinstance<nb::bytes>(source)) {
      nb::bytes b = nb::cast<nb::bytes>(source);
      if (data.is_none()) return extension::Module::from_bytes(b.data(), b.size(), level);
      if (!nb::isinstance<nb::bytes>(data)) {
        throw nb::type_error("a program given as bytes takes its .ptd data as bytes too");
      }
      nb::bytes d = nb::cast<nb::bytes>(data);
      return extension::Module::from_bytes(b.data(), b.size(), level, d.data(), d.size());
    }
    if (nb::isinstance<nb::bytes>(data)) {
      throw nb::type_error("a program given as a path takes its .ptd data as a path too");
    }
    return extension::Module::load(nb::cast<std::string>(nb::str(source)),
                                   extension::Module::LoadMode::Mmap, level,
                                   data.is_none() ? std::string() : nb::cast<std::string>(nb::str(data)));
  };
  Result<std::unique_ptr<extension::Module>> module = load();
  if (!module.ok()) raise_error(module.error(), "load_program");
  auto* program = new PyProgram();
  program->module = std::move(module.get());
  return program;
}

void set_inputs(PyMethod& self, nb::list inputs, std::vector<ArrayTensor>& tensors) {
  Method& method = *self.method;
  if (inputs.size() != method.inputs_size()) {
    throw nb::value_error(("method '" + self.name + "' takes " + std::to_string(method.inputs_size()) +
                           " inputs, got " + std::to_string(inputs.size()))
                              .c_str());
  }
  tensors.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    nb::handle item = inputs[i];
    Error err = Error::Ok;
    if (nb::isinstance<nb::bool_>(item)) {
      EValue v;
      v.tag = Tag::Bool;
      v.as_bool = nb::cast<bool>(item);
      err = method.set_input(i, v);
    } else if (nb::isinstance<nb::int_>(item)) {
      EValue v;
      v.tag = Tag::Int;
      v.as_int = nb::cast<int64_t>(item);
      err = method.set_input(i, v);
    } else if (nb::isinstance<nb::float_>(item)) {
      EValue v;
      v.tag = Tag::Double;
      v.as_double = nb::cast<double>(item);
      err = method.set_input(i, v);
    } else {
      nb::ndarray<nb::ro> array;
      if (!nb::try_cast(item, array)) {
        throw nb::type_error(("input " + std::to_string(i) +
                              " is neither an array nor a scalar").c_str());
      }
      python::tensor_from_array(array, &tensors[i]);
      err = method.set_input(i, tensors[i].tensor);
    }
    if (err != Error::Ok) raise_error(err, "set_input");
  }
}

nb::object value_object(const EValue* v, bool torch_outputs) {
  switch (v->tag) {
    case Tag::Tensor: return python::array_from_tensor(v->to_tensor(), torch_outputs);
    case Tag::Int: return nb::int_(v->as_int);
    case Tag::Double: return nb::float_(v->as_double);
    case Tag::Bool: return nb::bool_(v->as_bool);
    case Tag::None: return nb::none();
    case Tag::String: return nb::str(v->as_string.data(), v->as_string.size());
    case Tag::IntList: {
      nb::list items;
      for (int64_t x : v->as_int_list.get()) items.append(nb::int_(x));
      return items;
    }
    case Tag::DoubleList: {
      nb::list items;
      for (double x : v->as_double_list) items.append(nb::float_(x));
      return items;
    }
    case Tag::BoolList: {
      nb::list items;
      for (bool x : v->as_bool_list) items.append(nb::bool_(x));
      return items;
    }
    default:
      throw nb::type_error(
          (std::string("output of kind ") + tag_name(v->tag) + " cannot be returned").c_str());
  }
}

Error run(Method& method) {
  nb::gil_scoped_release release;
  return method.execute();
}

nb::list outputs_of(const Method& method, bool torch_outputs) {
  nb::list outputs;
  for (size_t i = 0; i < method.outputs_size(); ++i) {
    outputs.append(value_object(method.get_output(i).get(), torch_outputs));
  }
  return outputs;
}

nb::list execute(PyMethod& self, nb::list inputs, bool torch_outputs) {
  std::vector<ArrayTensor> tensors;
  set_inputs(self, inputs, tensors);
  const Error err = run(*self.method);
  if (err != Error::Ok) raise_error(err, "execute");
  return outputs_of(*self.method, torch_outputs);
}

// Detaches a logger or tracer however the run ends (a Python error included).
struct Unset {
  Method& method;
  ~Unset() {
    method.set_output_logger(nullptr);
    method.set_event_tracer(nullptr);
  }
};

// Runs once, capturing each kernel and delegate instruction's outputs
// (extension/devtools/intermediate_outputs.h): (outputs, [(instruction,
// output, value)]). The storage is sized for one run (or `capacity_bytes`);
// a run that needs more (a loop) raises, naming the bytes it needed.
nb::tuple execute_capturing(PyMethod& self, nb::list inputs, bool torch_outputs,
                            size_t capacity_bytes) {
  Method& method = *self.method;
  std::vector<ArrayTensor> tensors;
  set_inputs(self, inputs, tensors);
  const extension::CaptureSize size = extension::IntermediateOutputRecorder::one_run(method);
  // More bytes asked for: as many more records, in proportion.
  const size_t scale =
      capacity_bytes > size.bytes ? capacity_bytes / std::max<size_t>(size.bytes, 1) + 1 : 1;
  std::vector<extension::CapturedOutput> records(size.records * scale);
  std::vector<uint8_t> storage(std::max(size.bytes, capacity_bytes));
  extension::IntermediateOutputRecorder recorder(method, records, storage);
  method.set_output_logger(&recorder);
  Error err;
  {
    Unset unset{method};
    err = run(method);
  }
  if (err != Error::Ok) raise_error(err, "execute");
  if (recorder.dropped() > 0) {
    throw nb::value_error(("method '" + self.name + "': " + std::to_string(recorder.dropped()) +
                           " instruction outputs did not fit (the run repeated instructions); "
                           "pass capacity_bytes=" + std::to_string(recorder.bytes_needed()))
                              .c_str());
  }
  nb::list captured;
  for (const extension::CapturedOutput& c : recorder.captured()) {
    nb::object value;
    if (c.tag == Tag::Tensor) {
      std::vector<int64_t> strides(static_cast<size_t>(c.dim));
      Tensor t;
      t.dtype = c.dtype;
      t.dim = c.dim;
      int32_t sizes[kTensorMaxDim];
      uint8_t order[kTensorMaxDim];
      std::copy(c.sizes, c.sizes + c.dim, sizes);
      std::copy(c.dim_order, c.dim_order + c.dim, order);
      t.sizes = sizes;
      t.dim_order = order;
      t.strides = strides.data();
      t.data = const_cast<uint8_t*>(recorder.data(c));
      t.update_strides();
      value = python::array_from_tensor(t, torch_outputs);
    } else if (c.tag == Tag::Double) {
      value = nb::float_(c.double_value);
    } else if (c.tag == Tag::Bool) {
      value = nb::bool_(c.int_value != 0);
    } else {
      value = nb::int_(c.int_value);
    }
    captured.append(nb::make_tuple(c.instruction, c.output, value));
  }
  return nb::make_tuple(outputs_of(method, torch_outputs), captured);
}

// Runs `iters` times with an event tracer: (outputs, [(instruction, start ns,
// end ns, name)]) over all runs, as ember-run --profile records them (`name`:
// None for the instruction, the event's name for one its delegate logged).
// With `profile_path`, also writes the profile file (.eprof) there;
// `program_fingerprint` (size, hash) names the program it is of.
nb::tuple execute_profiled(PyMethod& self, nb::list inputs, int iters, bool torch_outputs,
                           const std::string& profile_path, nb::object program_fingerprint) {
  if (iters < 1) throw nb::value_error("iters must be at least 1");
  if (!profile_path.empty() && program_fingerprint.is_none()) {
    throw nb::value_error("profile_path needs program_fingerprint (size, hash)");
  }
  Method& method = *self.method;
  std::vector<ArrayTensor> tensors;
  // Sized from what one run records (delegates' own events included).
  std::vector<ProfileEvent> events(method.profile_events_per_run() * static_cast<size_t>(iters));
  EventTracer tracer(events.data(), events.size());
  std::optional<extension::ProfileBuilder> profile;
  if (!profile_path.empty()) {
    nb::tuple fp = nb::cast<nb::tuple>(program_fingerprint);
    profile.emplace(method,
                    extension::ProgramFingerprint{nb::cast<uint64_t>(fp[0]),
                                                  nb::cast<uint64_t>(fp[1])},
                    static_cast<uint32_t>(thread_count()));
  }
  for (int i = 0; i < iters; ++i) {
    set_inputs(self, inputs, tensors);  // a plan may reuse an input's bytes
    method.set_event_tracer(&tracer);
    Unset unset{method};
    const size_t before = tracer.size();
    const Error err = run(method);
    if (err != Error::Ok) raise_error(err, "execute");
    if (profile) profile->add_run(tracer.events() + before, tracer.size() - before);
  }
  if (profile) {
    profile->add_dropped(tracer.dropped());
    std::string error;
    if (!extension::write_profile_file(profile_path, profile->data(), &error)) {
      throw nb::value_error(error.c_str());
    }
  }
  nb::list out;
  for (size_t i = 0; i < tracer.size(); ++i) {
    const ProfileEvent& e = tracer.events()[i];
    out.append(nb::make_tuple(e.instruction, e.start_ns, e.end_ns,
                              e.name != nullptr ? nb::object(nb::str(e.name)) : nb::none()));
  }
  return nb::make_tuple(outputs_of(method, torch_outputs), out);
}

}  // namespace

void bind_runtime(nb::module_& m) {
  nb::class_<PyProgram>(m, "Program")
      .def_prop_ro("method_names", [](PyProgram& p) { return p.module->method_names(); })
      .def("method_meta",
           [](PyProgram& p, const std::string& name) {
             Result<MethodMeta> meta = p.module->program().method_meta(name.c_str());
             if (!meta.ok()) raise_error(meta.error(), "method_meta");
             return meta_dict(meta.get());
           })
      .def(
          "load_method",
          [](PyProgram& p, const std::string& name) {
            // Each load is its own instance: mutable buffers are not shared.
            Result<Method*> method = p.module->new_method_instance(name);
            if (!method.ok()) raise_error(method.error(), "load_method");
            return new PyMethod{&p, method.get(), name};
          },
          nb::keep_alive<0, 1>(), nb::rv_policy::take_ownership)
      .def_prop_ro("file_size", [](PyProgram& p) { return p.module->program().file_size(); });

  nb::class_<PyMethod>(m, "Method")
      .def("execute", &execute, nb::arg("inputs"), nb::arg("torch_outputs") = false,
           "Runs the method on a list of arrays (NumPy, or torch tensors of any dtype through "
           "DLPack) and scalars; returns a list of outputs (copies): NumPy arrays, or torch "
           "tensors with torch_outputs=True.")
      .def("execute_capturing", &execute_capturing, nb::arg("inputs"),
           nb::arg("torch_outputs") = false, nb::arg("capacity_bytes") = 0,
           "Runs once, capturing every kernel and delegate instruction's outputs right after "
           "it ran: (outputs, [(instruction, output index, value)]). Numerical debugging.")
      .def("execute_profiled", &execute_profiled, nb::arg("inputs"), nb::arg("iters") = 1,
           nb::arg("torch_outputs") = false, nb::arg("profile_path") = "",
           nb::arg("program_fingerprint") = nb::none(),
           "Runs `iters` times timing each kernel and delegate instruction: (outputs of the "
           "last run, [(instruction, start ns, end ns, delegate event name or None)]). With "
           "profile_path, writes the profile file (.eprof) too, of the program whose "
           "program_fingerprint (size, hash) is given.")
      .def_prop_ro("name", [](PyMethod& self) { return self.name; })
      .def_prop_ro("prepared_bytes", [](PyMethod& self) { return self.method->prepared_bytes(); },
                   "Bytes the kernels' prepare steps took at load (constant weights packed "
                   "for the GEMM, derived state).")
      .def_prop_ro("dropped_constant_bytes",
                   [](PyMethod& self) { return self.method->dropped_constant_bytes(); },
                   "Bytes of constants only the prepare steps read (they keep packed copies): "
                   "handed back to the loader, which drops them from memory when it maps the "
                   "file.")
      .def("method_meta", [](PyMethod& self) { return meta_dict(self.method->method_meta()); })
      .def_prop_ro("num_mutable_buffers",
                   [](PyMethod& self) { return self.method->num_mutable_buffers(); },
                   "Mutable buffers (state such as a KV cache) the method keeps across runs.")
      .def_prop_ro("mutable_buffer_bytes",
                   [](PyMethod& self) {
                     size_t n = 0;
                     for (size_t i = 0; i < self.method->num_mutable_buffers(); ++i) {
                       n += self.method->mutable_buffer(i).nbytes;
                     }
                     return n;
                   },
                   "Bytes of the method's mutable buffers.")
      .def_prop_ro("written_inputs", &written_inputs,
                   "Indices of the inputs the method writes (it mutates them in place).")
      .def(
          "get_input",
          [](PyMethod& self, size_t index, bool torch_outputs) -> nb::object {
            Result<const EValue*> v = self.method->get_input(index);
            if (!v.ok()) raise_error(v.error(), "get_input");
            if (!v.get()->is_tensor()) throw nb::type_error("the input is not a tensor");
            return python::array_from_tensor(v.get()->to_tensor(), torch_outputs);
          },
          nb::arg("index"), nb::arg("torch_outputs") = false,
          "A copy of input `index` as the method holds it (after execute: as it left it).")
      .def("reset_mutable_buffers", [](PyMethod& self) { self.method->reset_mutable_buffers(); },
           "Puts every mutable buffer back to its initial value in the program.");

  m.def("set_threads", &ember::set_thread_count, nb::arg("threads"),
        "Threads of the process-wide pool that portable kernels and XNNPACK delegates run on "
        "(0 = one per core); False once the pool exists with another size.");
  m.def("threads", &ember::thread_count, "Threads the process-wide pool runs.");
  m.def("load_program", &load_program, nb::arg("source"), nb::arg("verification") = "full",
        nb::arg("data") = nb::none(), nb::rv_policy::take_ownership,
        "Loads and verifies a program from a path or from bytes; verification 'full' checks "
        "every rule of the format, 'minimal' only the FlatBuffer verifier; `data`: its .ptd "
        "file (path or bytes, as the program) when it keeps tensors outside itself.");
}
