// The double binary tree over hosts: shape, depth and the "interior in at most one tree" rule.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "topo/trees.h"

using cohort::topo::binary_tree;
using cohort::topo::tree_depth;
using cohort::topo::TreeNode;

namespace {

// Every node but one has a parent that lists it as a child, and all reach the root.
void expect_valid_tree(const std::vector<TreeNode> &tree, int n) {
  ASSERT_EQ(static_cast<int>(tree.size()), n);
  int roots = 0;
  for (int i = 0; i < n; ++i) {
    const TreeNode &node = tree[i];
    if (node.parent < 0) {
      ++roots;
    } else {
      const TreeNode &parent = tree[node.parent];
      EXPECT_TRUE(parent.child[0] == i || parent.child[1] == i) << "n=" << n << " node " << i;
    }
    for (int child : node.child) {
      if (child >= 0) {
        EXPECT_EQ(tree[child].parent, i) << "n=" << n << " node " << i;
      }
    }
    int steps = 0;
    for (int at = i; tree[at].parent >= 0 && steps <= n; at = tree[at].parent) ++steps;
    EXPECT_LE(steps, n) << "cycle above node " << i << " for n=" << n;
  }
  EXPECT_EQ(roots, 1) << "n=" << n;
}

bool interior(const TreeNode &node) { return node.child[0] >= 0 || node.child[1] >= 0; }

}  // namespace

TEST(DoubleBinaryTree, ValidForEveryCountUpTo3000) {
  for (int n = 1; n <= 3000; ++n) {
    for (int t = 0; t < 2; ++t) expect_valid_tree(binary_tree(n, t), n);
    if (testing::Test::HasFailure()) return;
  }
}

TEST(DoubleBinaryTree, EveryNodeInteriorInAtMostOneTree) {
  for (int n = 1; n <= 3000; ++n) {
    std::vector<TreeNode> t0 = binary_tree(n, 0), t1 = binary_tree(n, 1);
    for (int i = 0; i < n; ++i) {
      ASSERT_FALSE(interior(t0[i]) && interior(t1[i])) << "node " << i << " of " << n;
    }
  }
}

TEST(DoubleBinaryTree, DepthIsLogarithmic) {
  for (int n : {1, 2, 3, 5, 16, 17, 100, 1000, 16384, 16385}) {
    int bound = static_cast<int>(std::ceil(std::log2(n))) + 1;
    for (int t = 0; t < 2; ++t) {
      EXPECT_LE(tree_depth(binary_tree(n, t)), bound) << "n=" << n << " tree " << t;
    }
  }
  // 16 hosts: depth 4 (root 8 -> 4 -> 2 -> 1), both trees.
  EXPECT_EQ(tree_depth(binary_tree(16, 0)), 4);
  EXPECT_EQ(tree_depth(binary_tree(16, 1)), 4);
}

TEST(DoubleBinaryTree, SmallShapes) {
  std::vector<TreeNode> t = binary_tree(1, 0);
  EXPECT_EQ(t[0].parent, -1);
  EXPECT_EQ(t[0].child[0], -1);
  // n = 4, tree 0: positions 1..4, root 4 (node 3) -> 2 (node 1) -> 1, 3 (nodes 0, 2).
  t = binary_tree(4, 0);
  EXPECT_EQ(t[3].parent, -1);
  EXPECT_EQ(t[1].parent, 3);
  EXPECT_EQ(t[0].parent, 1);
  EXPECT_EQ(t[2].parent, 1);
  // Tree 1 mirrors it for even n: node 0 is the root.
  t = binary_tree(4, 1);
  EXPECT_EQ(t[0].parent, -1);
  EXPECT_EQ(t[2].parent, 0);
}
