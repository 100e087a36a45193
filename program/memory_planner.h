// The memory planner: places tensors with known lifetimes in one arena.
//
// Input: each tensor's byte size and its lifetime as an inclusive range of
// instruction indices. Tensors whose lifetimes overlap never share bytes.
// Output: offsets, the arena size, and the lower bound (the most bytes live
// at any one instruction), so a report can say how close the plan came.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::program {

struct TensorLifetime {
  uint64_t size = 0;
  int64_t first = 0;  // First instruction that writes or reads the tensor.
  int64_t last = 0;   // Last one (inclusive).
};

enum class PlanAlgorithm {
  /// Largest tensors first, each at the lowest offset that fits.
  GreedyBySize,
  /// Tensors in order of first use, each in the smallest gap that fits.
  BestFitInOrder,
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;
  uint64_t total_bytes = 0;
  uint64_t lower_bound = 0;
};

/// Plans `tensors` with every offset a multiple of `alignment` (a power of
/// two). Sizes are rounded up to the alignment. An empty list gives an empty plan.
MemoryPlan plan_memory(const std::vector<TensorLifetime>& tensors, uint64_t alignment,
                       PlanAlgorithm algorithm = PlanAlgorithm::GreedyBySize);

/// The lower bound alone: max over instructions of the aligned bytes live.
uint64_t max_live_bytes(const std::vector<TensorLifetime>& tensors, uint64_t alignment);

/// Empty when the plan is valid (no two live tensors overlap, offsets aligned,
/// all inside total_bytes); otherwise a sentence naming the first conflict.
std::string check_plan(const std::vector<TensorLifetime>& tensors, const MemoryPlan& plan,
                       uint64_t alignment);

}  // namespace ember::program
