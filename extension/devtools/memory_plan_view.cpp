#include "extension/devtools/memory_plan_view.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "extension/devtools/instruction_info.h"
#include "program/memory_planner.h"
#include "runtime/core/scalar_type.h"

namespace ember::extension {
namespace {

uint64_t tensor_bytes(const ember_fb::Tensor* t) {
  uint64_t n = element_size(static_cast<ScalarType>(t->scalar_type()));
  if (t->sizes() != nullptr) {
    for (int32_t s : *t->sizes()) n *= static_cast<uint64_t>(std::max(s, 0));
  }
  return n;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::vector<PlannedRegion> memory_plan_view(const ember_fb::ExecutionPlan* plan) {
  const int64_t n = num_instructions(plan);
  // Each planned value's live range, kind and writer first.
  std::map<int32_t, PlannedRegion> uses;
  auto touch = [&](int32_t idx, int64_t when, const char* kind, const std::string& label) {
    if (idx < 0 || static_cast<uint32_t>(idx) >= plan->values()->size()) return;
    const auto* t = plan->values()->Get(static_cast<uint32_t>(idx))->val_as_Tensor();
    if (t == nullptr || t->allocation_info() == nullptr) return;
    auto [it, inserted] = uses.try_emplace(idx);
    PlannedRegion& r = it->second;
    if (inserted) {
      const auto* a = t->allocation_info();
      r.buffer = a->memory_id();
      r.offset = uint64_t{a->memory_offset_low()} | (uint64_t{a->memory_offset_high()} << 32);
      r.nbytes = tensor_bytes(t);
      r.first = r.last = when;
      r.kind = kind;
      r.label = label;
      r.type = value_type(plan, idx);
      r.values = {idx};
      // A mutable buffer: filled at load, kept across runs.
      if (t->data_buffer_idx() > 0) {
        r.kind = "mutable";
        r.first = -1;
        r.last = n;
      }
    }
    r.first = std::min(r.first, when);
    r.last = std::max(r.last, when);
  };
  // Inputs live for the whole method (re-running without set_input stays
  // correct), as Ember's planner assumes.
  for (uint32_t i = 0; plan->inputs() && i < plan->inputs()->size(); ++i) {
    touch(plan->inputs()->Get(i), -1, "input", "input " + std::to_string(i));
    touch(plan->inputs()->Get(i), n, "input", "");
  }
  for (uint32_t k = 0; k < static_cast<uint32_t>(n); ++k) {
    std::string label = instruction_node(plan, k);
    if (label.empty()) label = instruction_label(plan, k) + " #" + std::to_string(k);
    for (int32_t v : instruction_values(plan, k)) touch(v, k, "intermediate", label);
  }
  for (uint32_t i = 0; plan->outputs() && i < plan->outputs()->size(); ++i) {
    auto it = uses.find(plan->outputs()->Get(i));
    if (it == uses.end()) continue;
    it->second.last = n;  // Outputs are read after the last instruction.
    if (it->second.kind == "intermediate") it->second.kind = "output";
    it->second.label += (it->second.label.empty() ? "" : " ") + std::string("(output ") +
                        std::to_string(i) + ")";
  }
  // Values at one placement whose live ranges meet are one tensor seen
  // through aliases (a view, an in-place write); the planner reuses bytes
  // only for ranges that do not meet, and those are separate tensors.
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, std::vector<PlannedRegion>> by_place;
  for (auto& [idx, r] : uses) by_place[std::make_tuple(r.buffer, r.offset, r.nbytes)].push_back(r);
  std::vector<PlannedRegion> out;
  for (auto& [place, values] : by_place) {
    std::sort(values.begin(), values.end(),
              [](const PlannedRegion& a, const PlannedRegion& b) { return a.first < b.first; });
    for (PlannedRegion& v : values) {
      if (!out.empty() && std::make_tuple(out.back().buffer, out.back().offset, out.back().nbytes) ==
                              place && v.first <= out.back().last) {
        PlannedRegion& r = out.back();
        r.last = std::max(r.last, v.last);
        r.values.push_back(v.values[0]);
        if (v.kind != "intermediate" && r.kind == "intermediate") r.kind = v.kind;
        if (v.label.find("(output") != std::string::npos) r.label += " " + v.label.substr(v.label.find("(output"));
      } else {
        out.push_back(std::move(v));
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const PlannedRegion& a, const PlannedRegion& b) {
    return std::tie(a.buffer, a.first, a.offset) < std::tie(b.buffer, b.first, b.offset);
  });
  return out;
}

uint64_t memory_plan_lower_bound(const std::vector<PlannedRegion>& regions, uint64_t alignment) {
  std::vector<program::TensorLifetime> all;
  for (const PlannedRegion& r : regions) all.push_back({r.nbytes, r.first, r.last});
  return program::max_live_bytes(all, alignment);
}

std::string memory_plan_json(const ember_fb::ExecutionPlan* plan) {
  const std::vector<PlannedRegion> regions = memory_plan_view(plan);
  std::string s = "{\"method\": " + json_string(plan->name() ? plan->name()->str() : "") +
                  ", \"num_instructions\": " + std::to_string(num_instructions(plan)) +
                  ", \"buffers\": [";
  for (uint32_t i = 0; plan->non_const_buffer_sizes() && i < plan->non_const_buffer_sizes()->size(); ++i) {
    s += (i ? ", " : "") + std::to_string(plan->non_const_buffer_sizes()->Get(i));
  }
  s += "], \"lower_bound\": " + std::to_string(memory_plan_lower_bound(regions)) +
       ", \"tensors\": [";
  for (size_t i = 0; i < regions.size(); ++i) {
    const PlannedRegion& r = regions[i];
    s += std::string(i ? ",\n  " : "\n  ") + "{\"buffer\": " + std::to_string(r.buffer) +
         ", \"offset\": " + std::to_string(r.offset) + ", \"nbytes\": " + std::to_string(r.nbytes) +
         ", \"first\": " + std::to_string(r.first) + ", \"last\": " + std::to_string(r.last) +
         ", \"kind\": " + json_string(r.kind) + ", \"label\": " + json_string(r.label) +
         ", \"type\": " + json_string(r.type) + ", \"values\": [";
    for (size_t j = 0; j < r.values.size(); ++j) s += (j ? ", " : "") + std::to_string(r.values[j]);
    s += "]}";
  }
  return s + "]}\n";
}

}  // namespace ember::extension
