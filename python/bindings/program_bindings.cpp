// Bindings of the AOT side: program writer and memory planner.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "program/memory_planner.h"
#include "program/flat_tensor_writer.h"
#include "program/program_writer.h"

namespace nb = nanobind;
using namespace ember::program;

namespace {

// Byte spans of Python objects with the buffer protocol (bytes, memoryview,
// NumPy arrays): the constants arrive as views of the tensors' memory and
// are written from there, never copied. Released with the GIL held (the
// object outlives the GIL-free writing).
class BufferSpans {
 public:
  explicit BufferSpans(const std::vector<nb::object>& objects) {
    views_.reserve(objects.size());
    for (const auto& o : objects) {
      Py_buffer view;
      if (PyObject_GetBuffer(o.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
      views_.push_back(view);
      spans_.emplace_back(static_cast<const uint8_t*>(view.buf), static_cast<size_t>(view.len));
    }
  }
  ~BufferSpans() {
    for (auto& view : views_) PyBuffer_Release(&view);
  }
  BufferSpans(const BufferSpans&) = delete;
  BufferSpans& operator=(const BufferSpans&) = delete;
  const std::vector<std::span<const uint8_t>>& spans() const { return spans_; }

 private:
  std::vector<Py_buffer> views_;
  std::vector<std::span<const uint8_t>> spans_;
};

using NamedEntry = std::tuple<std::string, int, std::vector<int32_t>, std::vector<uint8_t>,
                              nb::object>;

// The `.ptd` writer's tensors from (name, scalar type code, sizes, dim order,
// buffer) entries; `spans` holds the buffers until the writing is done.
std::vector<NamedTensor> named_tensors(const std::vector<NamedEntry>& entries,
                                       const BufferSpans& spans) {
  std::vector<NamedTensor> tensors;
  for (size_t i = 0; i < entries.size(); ++i) {
    NamedTensor t;
    t.key = std::get<0>(entries[i]);
    t.scalar_type = static_cast<ember_fb::ScalarType>(std::get<1>(entries[i]));
    t.sizes = std::get<2>(entries[i]);
    t.dim_order = std::get<3>(entries[i]);
    t.data = spans.spans()[i];
    tensors.push_back(std::move(t));
  }
  return tensors;
}

std::vector<nb::object> entry_buffers(const std::vector<NamedEntry>& entries) {
  std::vector<nb::object> data;
  for (const auto& entry : entries) data.push_back(std::get<4>(entry));
  return data;
}

}  // namespace

void bind_program(nb::module_& m) {
  m.def(
      "write_program",
      [](const std::string& program_json, const std::vector<nb::object>& constants,
         const std::vector<nb::object>& delegate_blobs, uint64_t segment_alignment,
         uint64_t constant_alignment, uint64_t max_inline_delegate_bytes,
         const std::vector<nb::object>& named_blobs, const std::vector<nb::object>& mutable_data) {
        const BufferSpans c_spans(constants), d_spans(delegate_blobs), n_spans(named_blobs),
            m_spans(mutable_data);
        const auto& c = c_spans.spans();
        const auto& d = d_spans.spans();
        const auto& n = n_spans.spans();
        const auto& m = m_spans.spans();
        WriterOptions options;
        options.segment_alignment = segment_alignment;
        options.constant_alignment = constant_alignment;
        options.max_inline_delegate_bytes = max_inline_delegate_bytes;
        WriteResult result;
        {
          nb::gil_scoped_release release;
          result = write_program_from_json(program_json, c, d, options, n, m);
        }
        if (!result.ok()) throw nb::value_error(result.error.c_str());
        return nb::bytes(reinterpret_cast<const char*>(result.bytes.data()), result.bytes.size());
      },
      nb::arg("program_json"), nb::arg("constant_buffers"), nb::arg("delegate_blobs"),
      nb::arg("segment_alignment") = 128, nb::arg("constant_alignment") = 16,
      nb::arg("max_inline_delegate_bytes") = 0, nb::arg("named_blobs") = std::vector<nb::object>{},
      nb::arg("mutable_data") = std::vector<nb::object>{},
      "Writes a .pte from the Program in FlatBuffers JSON plus constant, delegate and named "
      "data (named_data[i].segment_index names named_blobs[i]) and the initial values of "
      "mutable buffers (a planned tensor with data_buffer_idx i + 1 starts as mutable_data[i]).");

  m.def(
      "write_program_file",
      [](const std::string& path, const std::string& program_json,
         const std::vector<nb::object>& constants, const std::vector<nb::object>& delegate_blobs,
         uint64_t segment_alignment, uint64_t constant_alignment,
         uint64_t max_inline_delegate_bytes, const std::vector<nb::object>& named_blobs,
         const std::vector<nb::object>& mutable_data) {
        const BufferSpans c(constants), d(delegate_blobs), n(named_blobs), m(mutable_data);
        WriterOptions options;
        options.segment_alignment = segment_alignment;
        options.constant_alignment = constant_alignment;
        options.max_inline_delegate_bytes = max_inline_delegate_bytes;
        std::string error;
        {
          nb::gil_scoped_release release;
          error = write_program_file_from_json(path, program_json, c.spans(), d.spans(), options,
                                               n.spans(), m.spans());
        }
        if (!error.empty()) throw nb::value_error(error.c_str());
      },
      nb::arg("path"), nb::arg("program_json"), nb::arg("constant_buffers"),
      nb::arg("delegate_blobs"), nb::arg("segment_alignment") = 128,
      nb::arg("constant_alignment") = 16, nb::arg("max_inline_delegate_bytes") = 0,
      nb::arg("named_blobs") = std::vector<nb::object>{},
      nb::arg("mutable_data") = std::vector<nb::object>{},
      "write_program's file written straight to `path`: the constants and blobs are streamed "
      "from the given bytes, never copied whole.");

  m.def(
      "write_named_data",
      [](const std::vector<NamedEntry>& entries, uint64_t segment_alignment) {
        const BufferSpans spans(entry_buffers(entries));
        const std::vector<NamedTensor> tensors = named_tensors(entries, spans);
        WriteResult result;
        {
          nb::gil_scoped_release release;
          result = write_flat_tensor(tensors, segment_alignment);
        }
        if (!result.ok()) throw nb::value_error(result.error.c_str());
        return nb::bytes(reinterpret_cast<const char*>(result.bytes.data()), result.bytes.size());
      },
      nb::arg("entries"), nb::arg("segment_alignment") = 128,
      "Writes a named-data file (.ptd) from (name, scalar type code, sizes, dim order, bytes) "
      "entries; equal bytes share one segment.");

  m.def(
      "write_named_data_file",
      [](const std::string& path, const std::vector<NamedEntry>& entries,
         uint64_t segment_alignment) {
        const BufferSpans spans(entry_buffers(entries));
        const std::vector<NamedTensor> tensors = named_tensors(entries, spans);
        std::string error;
        {
          nb::gil_scoped_release release;
          error = write_flat_tensor_file(path, tensors, segment_alignment);
        }
        if (!error.empty()) throw nb::value_error(error.c_str());
      },
      nb::arg("path"), nb::arg("entries"), nb::arg("segment_alignment") = 128,
      "write_named_data's file written straight to `path` from the entries' buffers.");

  m.def(
      "plan_memory",
      [](const std::vector<uint64_t>& sizes, const std::vector<int64_t>& first_use,
         const std::vector<int64_t>& last_use, uint64_t alignment, const std::string& algorithm) {
        if (sizes.size() != first_use.size() || sizes.size() != last_use.size()) {
          throw nb::value_error("sizes, first_use and last_use must have the same length");
        }
        if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
          throw nb::value_error("alignment must be a power of two");
        }
        PlanAlgorithm algo;
        if (algorithm == "greedy") algo = PlanAlgorithm::GreedyBySize;
        else if (algorithm == "best_fit") algo = PlanAlgorithm::BestFitInOrder;
        else throw nb::value_error(("unknown algorithm '" + algorithm + "' (greedy, best_fit)").c_str());
        std::vector<TensorLifetime> tensors(sizes.size());
        for (size_t i = 0; i < sizes.size(); ++i) {
          if (last_use[i] < first_use[i]) {
            throw nb::value_error(("tensor " + std::to_string(i) + " ends before it starts").c_str());
          }
          tensors[i] = {sizes[i], first_use[i], last_use[i]};
        }
        MemoryPlan plan = plan_memory(tensors, alignment, algo);
        return std::make_tuple(plan.offsets, plan.total_bytes, plan.lower_bound);
      },
      nb::arg("sizes"), nb::arg("first_use"), nb::arg("last_use"), nb::arg("alignment") = 16,
      nb::arg("algorithm") = "greedy",
      "Plans one arena: returns (offsets, total_bytes, lower_bound). Lifetimes are inclusive "
      "instruction ranges; tensors live at the same time never share bytes.");

  m.def("program_schema", []() { return std::string(program_schema_text()); },
        "The text of schema/program.fbs this build writes and reads.");
}
