// Bindings of the devtools (#19): bundled programs written and verified, and
// the data behind the pictures (memory plan, graph) read from a .pte.
#include <cstring>
#include <fstream>
#include <iterator>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "extension/bundled_program/bundled_program.h"
#include "extension/devtools/instruction_info.h"
#include "extension/devtools/intermediate_outputs.h"
#include "extension/devtools/memory_plan_view.h"
#include "extension/devtools/profile_file.h"
#include "extension/devtools/program_graph.h"
#include "extension/module/module.h"
#include "program/bundled_program_writer.h"
#include "python/bindings/tensor_convert.h"

namespace nb = nanobind;
using namespace ember;
using ember::python::raise_error;

namespace {

// ("tensor", scalar type code, sizes, dim order, bytes) | ("int", v) |
// ("bool", v) | ("double", v)
program::BundledValue bundled_value(nb::handle item) {
  nb::tuple t = nb::cast<nb::tuple>(item);
  if (t.size() == 0) throw nb::value_error("a bundled value is an empty tuple");
  const std::string kind = nb::cast<std::string>(t[0]);
  if (t.size() != (kind == "tensor" ? 5u : 2u)) {
    throw nb::value_error(("a bundled '" + kind + "' value has " + std::to_string(t.size()) +
                           " fields").c_str());
  }
  program::BundledValue v;
  if (kind == "tensor") {
    v.kind = program::BundledValue::Kind::Tensor;
    v.scalar_type = static_cast<ember_fb::ScalarType>(nb::cast<int>(t[1]));
    v.sizes = nb::cast<std::vector<int32_t>>(t[2]);
    v.dim_order = nb::cast<std::vector<uint8_t>>(t[3]);
    nb::bytes data = nb::cast<nb::bytes>(t[4]);
    const auto* p = static_cast<const uint8_t*>(data.data());
    v.data.assign(p, p + data.size());
  } else if (kind == "int") {
    v.kind = program::BundledValue::Kind::Int;
    v.int_val = nb::cast<int64_t>(t[1]);
  } else if (kind == "bool") {
    v.kind = program::BundledValue::Kind::Bool;
    v.bool_val = nb::cast<bool>(t[1]);
  } else if (kind == "double") {
    v.kind = program::BundledValue::Kind::Double;
    v.double_val = nb::cast<double>(t[1]);
  } else {
    throw nb::value_error(("unknown bundled value kind '" + kind + "'").c_str());
  }
  return v;
}

// Bytes of a path or a bytes object, 64-byte aligned.
struct AlignedInput {
  std::vector<uint8_t> storage;
  size_t pad = 0, size = 0;
  const uint8_t* data() const { return storage.data() + pad; }
};

AlignedInput read_source(nb::object source) {
  AlignedInput in;
  auto fill = [&](const uint8_t* p, size_t n) {
    in.storage.resize(n + 64);
    in.pad = (64 - reinterpret_cast<uintptr_t>(in.storage.data()) % 64) % 64;
    if (n > 0) std::memcpy(in.storage.data() + in.pad, p, n);
    in.size = n;
  };
  if (nb::isinstance<nb::bytes>(source)) {
    nb::bytes b = nb::cast<nb::bytes>(source);
    fill(static_cast<const uint8_t*>(b.data()), b.size());
  } else {
    const std::string path = nb::cast<std::string>(nb::str(source));
    std::ifstream f(path, std::ios::binary);
    if (!f) throw nb::value_error(("cannot open '" + path + "'").c_str());
    std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    fill(bytes.data(), bytes.size());
  }
  return in;
}

nb::dict case_dict(const extension::CaseReport& r, double rtol, double atol) {
  nb::dict d;
  d["method"] = r.method;
  d["test_case"] = r.test_case;
  d["compared"] = r.compared;
  d["passed"] = r.passed;
  d["message"] = r.passed ? std::string() : extension::describe_failure(r, rtol, atol);
  nb::list outputs;
  for (const extension::OutputCheck& o : r.outputs) {
    nb::dict od;
    od["index"] = o.index;
    od["passed"] = o.passed;
    od["numel"] = o.numel;
    od["max_abs_error"] = o.max_abs_error;
    od["max_rel_error"] = o.max_rel_error;
    od["worst_element"] = o.worst_element;
    od["actual"] = o.actual;
    od["expected"] = o.expected;
    od["shape"] = o.shape;
    outputs.append(od);
  }
  d["outputs"] = outputs;
  return d;
}

// The verified program's plan of `method` (a .pte or .bpte, path or bytes),
// handed to `view`.
template <typename View>
auto plan_view(nb::object source, const std::string& method, View&& view) {
  AlignedInput in = read_source(source);
  Result<std::unique_ptr<extension::Module>> module =
      extension::Module::from_bytes(in.data(), in.size);
  if (!module.ok()) raise_error(module.error(), "load_program");
  const auto* plans = module.get()->program().flatbuffer()->execution_plan();
  std::string names;
  for (uint32_t i = 0; i < plans->size(); ++i) {
    if (method == plans->Get(i)->name()->c_str()) return view(plans->Get(i));
    names += (names.empty() ? "" : ", ") + plans->Get(i)->name()->str();
  }
  throw nb::key_error(("no method '" + method + "'; the program's methods: " + names).c_str());
}

// Every instruction of the method's chain: what it runs, where it comes
// from (Chain.stacktrace) and what it writes.
nb::list instruction_table(const ember_fb::ExecutionPlan* plan) {
  const auto output_args = extension::instruction_output_args(plan);
  const auto* chains = plan->chains();
  const auto* chain = chains != nullptr && chains->size() > 0 ? chains->Get(0) : nullptr;
  const auto* trace = chain != nullptr ? chain->stacktrace() : nullptr;
  nb::list rows;
  for (uint32_t k = 0; k < extension::num_instructions(plan); ++k) {
    const auto* ins = chain->instructions()->Get(k);
    nb::dict row;
    row["instruction"] = k;
    const auto type = ins->instr_args_type();
    row["kind"] = type == ember_fb::InstructionArguments::KernelCall     ? "kernel"
                  : type == ember_fb::InstructionArguments::DelegateCall ? "delegate"
                  : type == ember_fb::InstructionArguments::MoveCall     ? "move"
                  : type == ember_fb::InstructionArguments::JumpFalseCall ? "jump_false"
                                                                          : "free";
    row["op"] = extension::instruction_label(plan, k);
    row["node"] = extension::instruction_node(plan, k);
    row["source"] = extension::instruction_source(plan, k);
    nb::list stack;
    if (trace != nullptr && k < trace->size() && trace->Get(k)->items() != nullptr) {
      for (const ember_fb::Frame* f : *trace->Get(k)->items()) {
        if (f->filename() == nullptr || f->filename()->size() == 0) continue;
        nb::dict frame;
        frame["filename"] = f->filename()->str();
        frame["lineno"] = f->lineno();
        frame["name"] = f->name() != nullptr ? f->name()->str() : std::string();
        frame["context"] = f->context() != nullptr ? f->context()->str() : std::string();
        stack.append(frame);
      }
    }
    row["stack"] = stack;
    // The values written, a kernel's returned TensorList by its items.
    const std::vector<int32_t> args = extension::instruction_values(plan, k);
    nb::list outputs;
    // "output" numbers them as the captures do (intermediate_outputs.h):
    // a delegate's in order, a TensorList's by item.
    auto add = [&](int32_t v, uint32_t index) {
      if (v < 0 || static_cast<uint32_t>(v) >= plan->values()->size()) return;
      nb::dict out;
      out["output"] = index;
      out["value"] = v;
      out["type"] = extension::value_type(plan, v);
      outputs.append(out);
    };
    for (uint32_t j = 0; j < output_args[k].size(); ++j) {
      const int32_t v = args[output_args[k][j]];
      const auto* list = plan->values()->Get(static_cast<uint32_t>(v))->val_as_TensorList();
      if (list != nullptr && list->items() != nullptr) {
        for (uint32_t i = 0; i < list->items()->size(); ++i) add(list->items()->Get(i), i);
      } else {
        add(v, j);
      }
    }
    row["outputs"] = outputs;
    rows.append(row);
  }
  return rows;
}

}  // namespace

void bind_devtools(nb::module_& m) {
  m.def(
      "instruction_table",
      [](nb::object source, const std::string& method) {
        return plan_view(source, method, instruction_table);
      },
      nb::arg("source"), nb::arg("method") = "forward",
      "Every instruction of the method: index, kind, op, FX node name, source line, stack "
      "frames and the values it writes (value index and type), read from the .pte alone.");
  m.def(
      "write_bundled_program",
      [](nb::bytes program, nb::list suites) {
        std::vector<program::BundledTestSuite> out;
        for (nb::handle s : suites) {
          nb::tuple st = nb::cast<nb::tuple>(s);
          if (st.size() != 2) throw nb::value_error("a suite is (method name, test cases)");
          program::BundledTestSuite suite;
          suite.method_name = nb::cast<std::string>(st[0]);
          for (nb::handle c : nb::cast<nb::list>(st[1])) {
            nb::tuple ct = nb::cast<nb::tuple>(c);
            if (ct.size() != 2) throw nb::value_error("a test case is (inputs, expected outputs)");
            program::BundledTestCase tc;
            for (nb::handle v : nb::cast<nb::list>(ct[0])) tc.inputs.push_back(bundled_value(v));
            tc.has_expected_outputs = !ct[1].is_none();
            if (tc.has_expected_outputs) {
              for (nb::handle v : nb::cast<nb::list>(ct[1])) {
                tc.expected_outputs.push_back(bundled_value(v));
              }
            }
            suite.test_cases.push_back(std::move(tc));
          }
          out.push_back(std::move(suite));
        }
        program::WriteResult result = program::write_bundled_program(
            {static_cast<const uint8_t*>(program.data()), program.size()}, out);
        if (!result.ok()) throw nb::value_error(result.error.c_str());
        return nb::bytes(reinterpret_cast<const char*>(result.bytes.data()), result.bytes.size());
      },
      nb::arg("program"), nb::arg("suites"),
      "Writes a .bpte: the program's bytes and [(method, [(inputs, expected outputs or None)])] "
      "with values ('tensor', scalar type code, sizes, dim order, bytes), ('int', v), "
      "('bool', v) or ('double', v). Writes what it is given (ember.devtools checks first).");

  m.def(
      "run_bundled_program",
      [](nb::object source, double rtol, double atol, const std::string& method,
         nb::object data) {
        AlignedInput in = read_source(source);
        Result<extension::BundledProgram> bundled =
            extension::BundledProgram::load(in.data(), in.size);
        if (!bundled.ok()) raise_error(bundled.error(), "bundled program");
        // The weights the program keeps outside itself (.ptd), when given.
        AlignedInput ptd;
        if (!data.is_none()) ptd = read_source(data);
        Result<std::unique_ptr<extension::Module>> module = extension::Module::from_bytes(
            in.data(), in.size, Program::Verification::Full,
            data.is_none() ? nullptr : ptd.data(), ptd.size);
        if (!module.ok()) raise_error(module.error(), "load_program");
        Result<std::vector<extension::CaseReport>> reports = [&] {
          nb::gil_scoped_release release;
          return extension::run_bundled_tests(
              bundled.get(),
              [&](const std::string& name) { return module.get()->new_method_instance(name); },
              method, rtol, atol);
        }();
        if (!reports.ok()) raise_error(reports.error(), "verify");
        nb::list out;
        for (const extension::CaseReport& r : reports.get()) out.append(case_dict(r, rtol, atol));
        return out;
      },
      nb::arg("source"), nb::arg("rtol") = 1e-5, nb::arg("atol") = 1e-8, nb::arg("method") = "",
      nb::arg("data") = nb::none(),
      "Runs every test case of a .bpte (path or bytes; of `method` only when given) on the "
      "C++ runtime and compares its outputs: a dict per case. `data`: the .ptd (path or "
      "bytes) of the weights the program keeps outside itself.");

  m.def(
      "bundled_program_data",
      [](nb::bytes data) {
        const void* program = nullptr;
        size_t size = 0;
        AlignedInput in = read_source(data);
        const Error err = extension::get_program_data(in.data(), in.size, &program, &size);
        if (err != Error::Ok) raise_error(err, "bundled program");
        return nb::bytes(static_cast<const char*>(program), size);
      },
      nb::arg("data"), "The program inside a .bpte (verified), or a .pte's bytes as they are.");

  m.def(
      "program_fingerprint",
      [](nb::object source) {
        AlignedInput in = read_source(source);
        Result<extension::ProgramFingerprint> fp =
            extension::program_fingerprint(in.data(), in.size);
        if (!fp.ok()) raise_error(fp.error(), "program_fingerprint");
        return nb::make_tuple(fp->size, fp->hash);
      },
      nb::arg("source"),
      "(size, hash) of a program (.pte, or the program inside a .bpte; path or bytes): what a "
      "profile file names its program by.");
  m.def(
      "is_profile_file",
      [](nb::bytes data) { return extension::is_profile_file(data.data(), data.size()); },
      nb::arg("data"), "True when the bytes start like a profile file (identifier EPF1).");
  m.def(
      "read_profile",
      [](nb::object source, nb::object program) {
        AlignedInput in = read_source(source);
        Result<extension::ProfileData> p = extension::read_profile(in.data(), in.size);
        if (!p.ok()) throw nb::value_error(last_error_message());
        if (!program.is_none()) {
          AlignedInput prog = read_source(program);
          Result<extension::ProgramFingerprint> fp =
              extension::program_fingerprint(prog.data(), prog.size);
          if (!fp.ok()) raise_error(fp.error(), "program_fingerprint");
          if (extension::check_profile_program(p.get(), fp.get()) != Error::Ok) {
            throw nb::value_error(last_error_message());
          }
        }
        nb::dict d;
        d["method"] = p->method;
        d["program_size"] = p->program.size;
        d["program_hash"] = p->program.hash;
        d["num_instructions"] = p->num_instructions;
        d["threads"] = p->threads;
        d["dropped_events"] = p->dropped_events;
        nb::list instructions;
        for (const extension::ProfileInstruction& ins : p->instructions) {
          nb::dict i;
          i["index"] = ins.index;
          i["kind"] = ins.delegate ? "delegate" : "kernel";
          i["op"] = ins.op;
          i["node"] = ins.node;
          i["source"] = ins.source;
          i["output_shape"] = ins.output_shape;
          instructions.append(i);
        }
        d["instructions"] = instructions;
        d["names"] = p->names;
        nb::list runs;
        for (const auto& run : p->runs) {
          nb::list events;
          for (const extension::ProfileRecord& e : run) {
            events.append(nb::make_tuple(e.instruction, e.name, e.start_ns, e.end_ns));
          }
          runs.append(events);
        }
        d["runs"] = runs;
        return d;
      },
      nb::arg("source"), nb::arg("program") = nb::none(),
      "Reads a profile file (.eprof; path or bytes), refusing a corrupt one (ValueError). "
      "With `program` (a .pte/.bpte path or bytes), also refuses a profile of another "
      "program. A dict: method, program_size, program_hash, num_instructions, threads, "
      "dropped_events, instructions [{index, kind, op, node, source, output_shape}], names, "
      "runs [[(instruction, name index or -1, start ns, end ns)]].");

  m.def(
      "memory_plan_json",
      [](nb::object source, const std::string& method) {
        return plan_view(source, method, extension::memory_plan_json);
      },
      nb::arg("source"), nb::arg("method") = "forward",
      "The method's memory plan as the file holds it, as JSON: planned regions with their "
      "buffer, offset, bytes, live instruction range, kind and writing node.");
  m.def(
      "program_graph_dot",
      [](nb::object source, const std::string& method) {
        return plan_view(source, method, extension::program_graph_dot);
      },
      nb::arg("source"), nb::arg("method") = "forward",
      "The method's graph (inputs, instructions, outputs and the values between them) as "
      "Graphviz DOT.");
}
