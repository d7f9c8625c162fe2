// Two complementary binary trees over the nodes of a job (NCCL's double binary tree): each
// node is interior in at most one of them, so running half the data down each tree loads
// every node's links evenly.  O(n) to build; depth floor(log2 n) + 1.
#pragma once

#include <vector>

namespace cohort::topo {

struct TreeNode {
  int parent = -1;  // -1: the root
  int child[2] = {-1, -1};
};

// Tree 0 is the in-order binary tree over positions 1..n in which position p's lowest set bit
// b gives its height: p - b/2 is its left child, p + (the largest power of two <= b/2 that
// stays <= n) its right one.  Odd positions are its leaves.  Tree 1 moves every node to a
// position of the other parity (mirror for even n, shift by one for odd n), so the interior
// nodes of one are leaves of the other.  Node i sits at position i + 1.
std::vector<TreeNode> binary_tree(int n, int tree);

// Depth of a tree from binary_tree (the root has depth 0).
int tree_depth(const std::vector<TreeNode> &tree);

}  // namespace cohort::topo
