#include "program/memory_planner.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace ember::program {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

bool lifetimes_overlap(const TensorLifetime& a, const TensorLifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Places tensor `i` at the lowest aligned offset (GreedyBySize) or in the
// smallest gap (best fit) among the already-placed tensors that are live at
// the same time.
uint64_t place(const std::vector<TensorLifetime>& tensors, const std::vector<size_t>& placed,
               const std::vector<uint64_t>& offsets, size_t i, uint64_t alignment,
               bool best_fit) {
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // [start, end) of conflicting tensors.
  for (size_t j : placed) {
    if (lifetimes_overlap(tensors[i], tensors[j])) {
      busy.emplace_back(offsets[j], offsets[j] + align_up(tensors[j].size, alignment));
    }
  }
  std::sort(busy.begin(), busy.end());
  const uint64_t need = align_up(tensors[i].size, alignment);
  uint64_t cursor = 0;
  uint64_t best = UINT64_MAX;
  uint64_t best_gap = UINT64_MAX;
  for (const auto& [start, end] : busy) {
    if (start >= cursor && start - cursor >= need) {
      if (!best_fit) return cursor;
      if (start - cursor < best_gap) {
        best_gap = start - cursor;
        best = cursor;
      }
    }
    cursor = std::max(cursor, end);
  }
  return best != UINT64_MAX ? best : cursor;
}

}  // namespace

uint64_t max_live_bytes(const std::vector<TensorLifetime>& tensors, uint64_t alignment) {
  // Sweep over lifetime boundaries: +size at first, -size after last.
  std::map<int64_t, int64_t> delta;
  for (const auto& t : tensors) {
    const auto size = static_cast<int64_t>(align_up(t.size, alignment));
    delta[t.first] += size;
    delta[t.last + 1] -= size;
  }
  int64_t live = 0;
  int64_t peak = 0;
  for (const auto& [when, change] : delta) {
    live += change;
    peak = std::max(peak, live);
  }
  return static_cast<uint64_t>(peak);
}

MemoryPlan plan_memory(const std::vector<TensorLifetime>& tensors, uint64_t alignment,
                       PlanAlgorithm algorithm) {
  if (alignment == 0) alignment = 1;
  MemoryPlan plan;
  plan.offsets.assign(tensors.size(), 0);
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  const bool best_fit = algorithm == PlanAlgorithm::BestFitInOrder;
  if (best_fit) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return tensors[a].first < tensors[b].first;
    });
  } else {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return tensors[a].size > tensors[b].size;
    });
  }
  std::vector<size_t> placed;
  placed.reserve(tensors.size());
  for (size_t i : order) {
    plan.offsets[i] = place(tensors, placed, plan.offsets, i, alignment, best_fit);
    placed.push_back(i);
    plan.total_bytes =
        std::max(plan.total_bytes, plan.offsets[i] + align_up(tensors[i].size, alignment));
  }
  plan.lower_bound = max_live_bytes(tensors, alignment);
  return plan;
}

std::string check_plan(const std::vector<TensorLifetime>& tensors, const MemoryPlan& plan,
                       uint64_t alignment) {
  if (plan.offsets.size() != tensors.size()) return "plan and tensor counts differ";
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (alignment > 0 && plan.offsets[i] % alignment != 0) {
      return "tensor " + std::to_string(i) + " is not aligned";
    }
    if (plan.offsets[i] + tensors[i].size > plan.total_bytes) {
      return "tensor " + std::to_string(i) + " ends past the arena";
    }
    for (size_t j = i + 1; j < tensors.size(); ++j) {
      const bool bytes_overlap = plan.offsets[i] < plan.offsets[j] + tensors[j].size &&
                                 plan.offsets[j] < plan.offsets[i] + tensors[i].size;
      if (tensors[i].size > 0 && tensors[j].size > 0 && bytes_overlap &&
          lifetimes_overlap(tensors[i], tensors[j])) {
        return "tensors " + std::to_string(i) + " and " + std::to_string(j) +
               " are live together and share bytes";
      }
    }
  }
  return {};
}

}  // namespace ember::program
