#include <gtest/gtest.h>

#include <random>

#include "program/memory_planner.h"

namespace ember::program {
namespace {

TEST(MemoryPlannerTest, ReusesMemoryOfDeadTensors) {
  // a: [0,1], b: [1,2], c: [2,3]: a and c can share.
  std::vector<TensorLifetime> t = {{64, 0, 1}, {64, 1, 2}, {64, 2, 3}};
  for (auto algo : {PlanAlgorithm::GreedyBySize, PlanAlgorithm::BestFitInOrder}) {
    MemoryPlan plan = plan_memory(t, 16, algo);
    EXPECT_EQ(plan.total_bytes, 128u);
    EXPECT_EQ(plan.lower_bound, 128u);
    EXPECT_EQ(check_plan(t, plan, 16), "");
  }
}

TEST(MemoryPlannerTest, AlignsOffsetsAndSizes) {
  std::vector<TensorLifetime> t = {{10, 0, 5}, {10, 0, 5}, {3, 2, 3}};
  MemoryPlan plan = plan_memory(t, 16);
  EXPECT_EQ(check_plan(t, plan, 16), "");
  EXPECT_EQ(plan.total_bytes, 48u);
  EXPECT_EQ(plan.lower_bound, 48u);
}

TEST(MemoryPlannerTest, EmptyPlan) {
  MemoryPlan plan = plan_memory({}, 16);
  EXPECT_EQ(plan.total_bytes, 0u);
  EXPECT_EQ(plan.lower_bound, 0u);
}

TEST(MemoryPlannerTest, RandomPlansAreValidAndNearTheBound) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<TensorLifetime> t;
    for (int i = 0; i < 40; ++i) {
      const int64_t first = rng() % 50;
      t.push_back({1 + rng() % 5000, first, first + static_cast<int64_t>(rng() % 10)});
    }
    for (auto algo : {PlanAlgorithm::GreedyBySize, PlanAlgorithm::BestFitInOrder}) {
      MemoryPlan plan = plan_memory(t, 64, algo);
      ASSERT_EQ(check_plan(t, plan, 64), "") << "trial " << trial;
      EXPECT_GE(plan.total_bytes, plan.lower_bound);
      // Interval-graph packing: greedy stays within 2x of the bound here.
      EXPECT_LE(plan.total_bytes, 2 * plan.lower_bound);
    }
  }
}

TEST(MemoryPlannerTest, CheckPlanCatchesOverlap) {
  std::vector<TensorLifetime> t = {{64, 0, 2}, {64, 1, 3}};
  MemoryPlan bad{{0, 32}, 96, 128};
  EXPECT_NE(check_plan(t, bad, 16), "");
}

}  // namespace
}  // namespace ember::program
