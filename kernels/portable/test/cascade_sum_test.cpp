// cascade_sum_row's summation tree, checked against the order cascade_sum.h
// documents (python/tests/test_reduction_order.py checks it against eager).
//
// Probe: a row of ones with +M at i and -M at j, M large enough to absorb
// any partial sum of ones. The partial sums holding i or j lose their ones;
// the smallest one holding both cancels to 0 and every one it held is lost.
// So the result is n minus the size of the smallest partial sum holding i
// and j, which a reference tree built from the documented rule predicts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/portable/util/cascade_sum.h"

namespace ember::kernels::portable {
namespace {

// A binary summation tree over element indices, as a reference model.
struct Node {
  int64_t leaf = -1;  // >= 0 for a leaf.
  std::shared_ptr<Node> left, right;
};
using Tree = std::shared_ptr<Node>;

Tree leaf(int64_t i) {
  auto n = std::make_shared<Node>();
  n->leaf = i;
  return n;
}
Tree add(Tree a, Tree b) {
  // Accumulators start at +0; adding to or from an empty one is a copy.
  if (!a) return b;
  if (!b) return a;
  auto n = std::make_shared<Node>();
  n->left = std::move(a);
  n->right = std::move(b);
  return n;
}
Tree sequential(int64_t begin, int64_t end) {
  Tree t;
  for (int64_t i = begin; i < end; ++i) t = add(t, leaf(i));
  return t;
}

// The documented order, written independently of the kernel's loops.
Tree reference_tree(int64_t n, int w) {
  if (n < w) {
    if (w == 8 && n >= 4) {
      Tree t = leaf(0);
      for (int64_t i = 4; i < n; ++i) t = add(t, leaf(i));
      for (int64_t i = 1; i < 4; ++i) t = add(t, leaf(i));
      return t;
    }
    return sequential(0, n);
  }
  const int64_t vectors = n / w, blocks = vectors / 4;
  // lanes[level][acc][lane]
  std::vector<std::vector<std::vector<Tree>>> levels;
  std::vector<int> counts;
  auto fresh = [&] {
    return std::vector<std::vector<Tree>>(4, std::vector<Tree>(static_cast<size_t>(w)));
  };
  levels.push_back(fresh());
  counts.push_back(0);
  for (int64_t b = 0; b < blocks; ++b) {
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < w; ++k) levels[0][j][k] = add(levels[0][j][k], leaf(b * 4 * w + j * w + k));
    }
    ++counts[0];
    for (size_t level = 0; counts[level] == 16; ++level) {
      if (level + 1 == levels.size()) {
        levels.push_back(fresh());
        counts.push_back(0);
      }
      for (int j = 0; j < 4; ++j) {
        for (int k = 0; k < w; ++k) {
          levels[level + 1][j][k] = add(levels[level + 1][j][k], levels[level][j][k]);
          levels[level][j][k] = nullptr;
        }
      }
      counts[level] = 0;
      ++counts[level + 1];
    }
  }
  std::vector<std::vector<Tree>> acc = fresh();
  for (auto& level : levels) {
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < w; ++k) {
        if (level[j][k]) acc[j][k] = add(acc[j][k], level[j][k]);
      }
    }
  }
  for (int64_t v = blocks * 4; v < vectors; ++v) {
    for (int k = 0; k < w; ++k) acc[0][k] = add(acc[0][k], leaf(v * w + k));
  }
  for (int j = 1; j < 4; ++j) {
    for (int k = 0; k < w; ++k) acc[0][k] = add(acc[0][k], acc[j][k]);
  }
  if (vectors * w < n) acc[0][0] = add(acc[0][0], sequential(vectors * w, n));
  Tree sum;
  for (int k = 0; k < w; ++k) sum = add(sum, acc[0][k]);
  return sum;
}

// Leaves under each node; returns the size of the smallest subtree holding
// both i and j (0 if the subtree holds neither).
int64_t meet_size(const Tree& t, int64_t i, int64_t j, int64_t* size, int* found) {
  if (t->leaf >= 0) {
    *size = 1;
    *found = (t->leaf == i) + (t->leaf == j);
    return 0;
  }
  int64_t ls = 0, rs = 0;
  int lf = 0, rf = 0;
  const int64_t lm = meet_size(t->left, i, j, &ls, &lf);
  if (lm) return lm;
  const int64_t rm = meet_size(t->right, i, j, &rs, &rf);
  if (rm) return rm;
  *size = ls + rs;
  *found = lf + rf;
  return *found == 2 ? *size : 0;
}

template <typename T>
void expect_probes_follow_reference(int64_t n) {
  constexpr int w = static_cast<int>(32 / sizeof(T));
  const T big = std::is_same_v<T, float> ? std::ldexp(T(1), 40) : std::ldexp(T(1), 80);
  const Tree tree = reference_tree(n, w);
  std::vector<T> row(static_cast<size_t>(n));
  // Every pair for short rows; pairs with element 0 and a stride for long ones.
  const int64_t step = n > 80 ? 7 : 1;
  for (int64_t i = 0; i < n; i += (n > 80 ? n / 5 : 1)) {
    for (int64_t j = i + 1; j < n; j += step) {
      for (auto& v : row) v = T(1);
      row[static_cast<size_t>(i)] = big;
      row[static_cast<size_t>(j)] = -big;
      int64_t size = 0;
      int found = 0;
      const int64_t meet = meet_size(tree, i, j, &size, &found);
      ASSERT_GT(meet, 0);
      EXPECT_EQ(cascade_sum_row(row.data(), n), static_cast<T>(n - meet))
          << "n=" << n << " i=" << i << " j=" << j;
    }
  }
}

TEST(CascadeSum, FloatTreeMatchesDocumentedOrder) {
  for (int64_t n : {2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 48, 64, 65, 72, 100, 544,
                    576, 600, 8192 + 32 * 3 + 8 + 5}) {
    expect_probes_follow_reference<float>(n);
  }
}

TEST(CascadeSum, DoubleTreeMatchesDocumentedOrder) {
  for (int64_t n : {2, 3, 4, 5, 6, 7, 9, 16, 17, 20, 33, 100, 256 + 16 + 4 + 3, 600}) {
    expect_probes_follow_reference<double>(n);
  }
}

TEST(CascadeSum, EmptySignedZeroAndSpecials) {
  EXPECT_EQ(cascade_sum_row(static_cast<const float*>(nullptr), 0), 0.0f);
  for (int64_t n : {1, 3, 5, 8, 13, 40, 600}) {
    std::vector<float> zeros(static_cast<size_t>(n), -0.0f);
    const float s = cascade_sum_row(zeros.data(), n);
    EXPECT_EQ(s, 0.0f);
    EXPECT_FALSE(std::signbit(s)) << n;  // Accumulators start at +0, as eager's.
  }
  std::vector<float> row(100, 1.0f);
  row[50] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(cascade_sum_row(row.data(), 100), std::numeric_limits<float>::infinity());
  row[51] = -std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(cascade_sum_row(row.data(), 100)));
  row[50] = row[51] = 1.0f;
  row[99] = std::nanf("");
  EXPECT_TRUE(std::isnan(cascade_sum_row(row.data(), 100)));
}

TEST(CascadeSum, BaselineAndDispatchedBuildsAgreeBitForBit) {
  std::mt19937 gen(3);
  std::normal_distribution<double> normal;
  for (int64_t n : {0, 1, 6, 8, 31, 33, 100, 513, 4096 + 77, 70000}) {
    std::vector<float> f(static_cast<size_t>(n));
    std::vector<double> d(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      d[static_cast<size_t>(i)] = normal(gen) * std::exp(4 * normal(gen));
      f[static_cast<size_t>(i)] = static_cast<float>(d[static_cast<size_t>(i)]);
    }
    const float fs = cascade_sum_row(f.data(), n), fb = cascade_sum_row_baseline(f.data(), n);
    const double ds = cascade_sum_row(d.data(), n), db = cascade_sum_row_baseline(d.data(), n);
    EXPECT_EQ(std::memcmp(&fs, &fb, sizeof fs), 0) << n;
    EXPECT_EQ(std::memcmp(&ds, &db, sizeof ds), 0) << n;
  }
}

TEST(CascadeSum, LongRowsStayAccurate) {
  // 2^22 copies of 0.1f: a sequential float sum drifts by ~2%; the cascade
  // keeps the relative error near float epsilon times log16 of the length.
  const int64_t n = int64_t{1} << 22;
  std::vector<float> row(static_cast<size_t>(n), 0.1f);
  const double exact = static_cast<double>(n) * static_cast<double>(0.1f);
  EXPECT_NEAR(cascade_sum_row(row.data(), n) / exact, 1.0, 1e-6);
}

}  // namespace
}  // namespace ember::kernels::portable
