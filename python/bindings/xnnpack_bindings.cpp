// ember._C.*_xnnpack_graph: the XNNPACK delegate's blob writer and the
// check `init` applies to a blob, both for the Python preprocess.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <span>

#include "backends/xnnpack/blob_check.h"
#include "backends/xnnpack/graph_writer.h"

namespace nb = nanobind;
using namespace ember::backends::xnnpack;

namespace {

std::vector<uint32_t> ids(nb::handle d, const char* key) {
  nb::dict dict = nb::borrow<nb::dict>(d);
  if (!dict.contains(key)) return {};
  return nb::cast<std::vector<uint32_t>>(dict[key]);
}

template <typename T>
T get(nb::handle d, const char* key, T fallback) {
  nb::dict dict = nb::borrow<nb::dict>(d);
  return dict.contains(key) ? nb::cast<T>(dict[key]) : fallback;
}

// values: [(dims, constant_index)], constants: [bytes], nodes: [dict],
// inputs/outputs: [(value, nchw)].
nb::bytes write_xnnpack_graph(nb::list values, nb::list constants, nb::list nodes,
                              nb::list inputs, nb::list outputs) {
  GraphDesc g;
  for (nb::handle v : values) {
    nb::tuple t = nb::cast<nb::tuple>(v);
    g.values.push_back(ValueDesc{nb::cast<std::vector<uint32_t>>(t[0]), nb::cast<int32_t>(t[1])});
  }
  for (nb::handle c : constants) {
    nb::bytes b = nb::cast<nb::bytes>(c);
    g.constants.emplace_back(reinterpret_cast<const uint8_t*>(b.c_str()), b.size());
  }
  for (nb::handle n : nodes) {
    NodeDesc d;
    d.kind = nb::cast<std::string>(nb::borrow<nb::dict>(n)["kind"]);
    d.inputs = ids(n, "inputs");
    d.outputs = ids(n, "outputs");
    d.padding = ids(n, "padding");
    d.pooling = ids(n, "pooling");
    d.stride = ids(n, "stride");
    d.dilation = ids(n, "dilation");
    d.pre_paddings = ids(n, "pre_paddings");
    d.post_paddings = ids(n, "post_paddings");
    d.new_shape = ids(n, "new_shape");
    d.groups = get<uint32_t>(n, "groups", 1);
    d.depth_multiplier = get<uint32_t>(n, "depth_multiplier", 1);
    d.flags = get<uint32_t>(n, "flags", 0);
    d.output_min = get<float>(n, "output_min", d.output_min);
    d.output_max = get<float>(n, "output_max", d.output_max);
    d.alpha = get<float>(n, "alpha", 0.0f);
    d.padding_value = get<float>(n, "padding_value", 0.0f);
    g.nodes.push_back(std::move(d));
  }
  for (auto [list, out] : {std::pair{&inputs, &g.inputs}, std::pair{&outputs, &g.outputs}}) {
    for (nb::handle e : *list) {
      nb::tuple t = nb::cast<nb::tuple>(e);
      out->push_back(ExternalDesc{nb::cast<uint32_t>(t[0]), nb::cast<bool>(t[1])});
    }
  }
  std::string error;
  std::vector<uint8_t> blob = write_graph(g, &error);
  if (blob.empty()) throw nb::value_error(("XNNPACK graph: " + error).c_str());
  return nb::bytes(reinterpret_cast<const char*>(blob.data()), blob.size());
}

// Runs what init does to `blob` (without keeping the runtime) and raises
// ValueError with init's reason when it would refuse it. `dim_orders`: the
// dim order of every argument as the program hands it, inputs then outputs.
void check_xnnpack_graph(nb::bytes blob, std::vector<std::vector<uint8_t>> dim_orders) {
  // FlatBuffer verification wants 8-byte alignment; XNNPACK reads
  // constants in place, so the copy lives until the runtime is deleted.
  std::vector<uint64_t> aligned((blob.size() + 7) / 8);
  std::memcpy(aligned.data(), blob.c_str(), blob.size());
  std::vector<std::span<const uint8_t>> orders(dim_orders.begin(), dim_orders.end());
  // init's tables and NCHW staging buffers come from the method allocator:
  // grow it until they fit (the check keeps nothing).
  for (size_t capacity = size_t{1} << 20;; capacity *= 2) {
    std::vector<uint8_t> pool(capacity);
    ember::MemoryAllocator allocator(pool.data(), pool.size());
    ember::BackendInitContext ctx{&allocator, "preprocess"};
    ember::clear_error_message();
    const ember::Error err = check_graph_blob(ctx, aligned.data(), blob.size(), orders);
    if (err == ember::Error::Ok) return;
    if (err != ember::Error::MemoryAllocationFailed || capacity > (size_t{1} << 36)) {
      throw nb::value_error(
          (std::string("XNNPACK blob refused: ") + ember::last_error_message()).c_str());
    }
  }
}

}  // namespace

void bind_xnnpack(nb::module_& m) {
  m.def("write_xnnpack_graph", &write_xnnpack_graph, nb::arg("values"), nb::arg("constants"),
        nb::arg("nodes"), nb::arg("inputs"), nb::arg("outputs"),
        "Serialises an XNNPACK delegate graph into Ember's EXN1 blob.");
  m.def("check_xnnpack_graph", &check_xnnpack_graph, nb::arg("blob"),
        nb::arg("dim_orders") = std::vector<std::vector<uint8_t>>{},
        "Applies the delegate's init checks to an EXN1 blob (verifier, counts and ids, shape "
        "check, XNNPACK define and create) and the execute dim-order rule to `dim_orders` "
        "(inputs then outputs); raises ValueError naming what is refused.");
}
