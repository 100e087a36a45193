// ember._C: the extension module. Each part registers its bindings.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_runtime(nb::module_& m);
void bind_program(nb::module_& m);
void bind_kernels(nb::module_& m);
void bind_xnnpack(nb::module_& m);
void bind_devtools(nb::module_& m);  // #19

NB_MODULE(_C, m) {
  m.doc() = "Ember's C++ runtime, program writer and memory planner.";
  // torch.export of control flow (dynamo) keeps references to the frames it
  // traced until after this module's teardown check, which would then report
  // every binding as leaked at interpreter exit; the objects are released by
  // the process ending, so the report is noise.
  nb::set_leak_warnings(false);
  static nb::object ember_error =
      nb::steal(PyErr_NewException("ember._C.EmberError", PyExc_RuntimeError, nullptr));
  m.attr("EmberError") = ember_error;
  bind_runtime(m);
  bind_program(m);
  bind_kernels(m);
  bind_xnnpack(m);
  bind_devtools(m);
}
